package tea_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

// fileOf writes a table with entries in memory and in the stash.
func fileOf(t testing.TB) (*tea.Table, []byte) {
	t.Helper()
	spec := tea.Spec{Buckets: 8, Cells: 2, KeySize: 4, ValueSize: 3, Scratchpad: 100, Hash: tea.CRC64}
	tab, _ := newTable(t, spec, tea.TableConfig{MaxTries: 3, Seed: 1})
	for _, k := range keys(20, 4, 8) {
		if err := tab.Insert(k, valueOf(k, 3)); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := tea.WriteFile(&b, tab); err != nil {
		t.Fatal(err)
	}
	return tab, b.Bytes()
}

func TestATableFileRestoresTheSameTable(t *testing.T) {
	tab, b := fileOf(t)
	if tab.Stash().Len() == 0 {
		t.Fatal("nothing stashed: the file test wants a stash")
	}
	f, err := tea.DecodeFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Spec != tab.Spec() || f.StashLen() != tab.Stash().Len() {
		t.Fatalf("spec %+v stash %d", f.Spec, f.StashLen())
	}
	mem := tea.NewLocalMemory(f.Spec.TableSize())
	back, err := tea.Restore(f, mem, tea.DefaultTableConfig())
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, back, mem)
	if back.Len() != tab.Len() {
		t.Errorf("restored %d entries of %d", back.Len(), tab.Len())
	}
	for _, k := range keys(20, 4, 8) {
		v, _, err := back.Get(k)
		if err != nil || !bytes.Equal(v, valueOf(k, 3)) {
			t.Errorf("key %x: %x %v", k, v, err)
		}
	}
	var again bytes.Buffer
	_ = tea.WriteFile(&again, back)
	if !bytes.Equal(again.Bytes(), b) {
		t.Error("writing the restored table gives another file")
	}
}

// reseal fixes the checksums of a file changed by a test.
func reseal(b []byte) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[40:], crc32.Checksum(b[:40], crc32.MakeTable(crc32.Castagnoli)))
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[48:len(b)-4], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestDamagedTableFilesAreRefused(t *testing.T) {
	_, good := fileOf(t)
	spec := tea.Spec{Buckets: 8, Cells: 2, KeySize: 4, ValueSize: 3, Hash: tea.CRC64}
	cs := int(spec.CellSize())
	// the first valid cell of the file
	first := 48
	for good[first] != tea.FlagValid {
		first += cs
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"an empty file", nil},
		{"another magic", append([]byte("DTAXXX"), good[6:]...)},
		{"a flipped body byte", func() []byte { b := bytes.Clone(good); b[60] ^= 1; return b }()},
		{"a flipped header byte", func() []byte { b := bytes.Clone(good); b[9] ^= 1; return b }()},
		{"a cut file", reseal(good[:len(good)-5])},
		{"a stash count beyond the file", func() []byte { b := bytes.Clone(good); b[32] = 0x7F; return reseal(b) }()},
		{"a spec that does not validate", func() []byte { b := bytes.Clone(good); b[24] = 9; return reseal(b) }()},
		{"reserved cell flag bits", func() []byte { b := bytes.Clone(good); b[first] = 0x81; return reseal(b) }()},
		{"an entry in a bucket its key does not hash to", func() []byte {
			b := bytes.Clone(good)
			bucket := uint64(first-48) / spec.BucketSize()
			for x := byte(1); ; x++ { // another key, with a home neither this bucket nor the one before
				b[first+1] = good[first+1] ^ x
				if h := spec.HomeOf(b[first+1 : first+5]); h != bucket && spec.Next(h) != bucket {
					return reseal(b)
				}
			}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tea.DecodeFile(tc.b); !errors.Is(err, tea.ErrFileFormat) {
				t.Errorf("DecodeFile = %v, want ErrFileFormat", err)
			}
		})
	}
}

func FuzzDecodeFile(f *testing.F) {
	_, good := fileOf(f)
	f.Add(good)
	f.Add(good[:48])
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := tea.DecodeFile(b)
		if err != nil {
			return
		}
		if file.Spec.TableSize() > 1<<24 {
			return
		}
		mem := tea.NewLocalMemory(file.Spec.TableSize())
		tab, err := tea.Restore(file, mem, tea.DefaultTableConfig())
		if err != nil {
			return // a stash key also in memory
		}
		checkTable(t, tab, mem)
		var out bytes.Buffer
		if err := tea.WriteFile(&out, tab); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("a decoded file does not write back the same: %v", err)
		}
	})
}
