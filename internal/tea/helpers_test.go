package tea_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

// keys returns n distinct random keys of size bytes (seeded).
func keys(n, size int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	seen := make(map[string]bool, n)
	out := make([][]byte, 0, n)
	for len(out) < n {
		k := make([]byte, size)
		for i := range k {
			k[i] = byte(r.Uint32())
		}
		if size >= 8 {
			binary.BigEndian.PutUint64(k, r.Uint64())
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// valueOf is the value the tests store under k.
func valueOf(k []byte, size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = k[i%len(k)] ^ 0x5A ^ byte(i)
	}
	return v
}

// newTable returns a control plane over fresh local memory.
func newTable(t testing.TB, spec tea.Spec, cfg tea.TableConfig) (*tea.Table, *tea.LocalMemory) {
	t.Helper()
	mem := tea.NewLocalMemory(spec.TableSize())
	tab, err := tea.NewTable(spec, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tab, mem
}

// checkTable asserts the table's invariants over its memory: every shadow
// equals its original bucket, every entry is in its home bucket or the next
// one, no key is held twice (in memory or the stash), and the count matches.
func checkTable(t testing.TB, tab *tea.Table, mem tea.Memory) {
	t.Helper()
	spec := tab.Spec()
	orig := make([]byte, spec.BucketSize())
	shadow := make([]byte, spec.BucketSize())
	seen := map[string]bool{}
	var n uint64
	for i := range spec.Buckets {
		if err := mem.Read(spec.BucketOffset(i), orig); err != nil {
			t.Fatal(err)
		}
		if err := mem.Read(spec.ShadowOffset(i), shadow); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(orig, shadow) {
			t.Fatalf("bucket %d: shadow %x differs from the original %x", i, shadow, orig)
		}
		for c := range spec.Cells {
			cell, err := spec.DecodeCell(orig[uint64(c)*spec.CellSize():])
			if err != nil {
				t.Fatalf("bucket %d cell %d: %v", i, c, err)
			}
			if !cell.Valid {
				continue
			}
			if h := spec.HomeOf(cell.Key); h != i && spec.Next(h) != i {
				t.Fatalf("bucket %d cell %d: key %x has home %d", i, c, cell.Key, h)
			}
			if seen[string(cell.Key)] {
				t.Fatalf("key %x held twice", cell.Key)
			}
			seen[string(cell.Key)] = true
			n++
		}
	}
	for _, k := range tab.Stash().Keys() {
		if seen[string(k)] {
			t.Fatalf("key %x both in the stash and in memory", k)
		}
		n++
	}
	if n != tab.Len() {
		t.Fatalf("memory and stash hold %d entries, the table counts %d", n, tab.Len())
	}
}

// write is one Memory write, as recordingMemory saw it.
type write struct {
	off uint64
	b   []byte
}

// recordingMemory records every write to a LocalMemory.
type recordingMemory struct {
	*tea.LocalMemory
	writes []write
}

func (m *recordingMemory) Write(off uint64, b []byte) error {
	m.writes = append(m.writes, write{off, bytes.Clone(b)})
	return m.LocalMemory.Write(off, b)
}
