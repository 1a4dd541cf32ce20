package tea_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea"
)

func TestInsertedKeysAreFoundWhereTheLayoutSays(t *testing.T) {
	for _, tc := range []struct {
		cells int
		load  float64
	}{{1, 0.5}, {2, 0.8}, {4, 0.9}, {8, 0.95}} {
		t.Run(fmt.Sprintf("%d cells per bucket at load %.2f", tc.cells, tc.load), func(t *testing.T) {
			spec := tea.Spec{Buckets: 512, Cells: tc.cells, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}
			tab, mem := newTable(t, spec, tea.DefaultTableConfig())
			ks := keys(int(tc.load*float64(spec.Entries())), 13, 7)
			for _, k := range ks {
				if err := tab.Insert(k, valueOf(k, 6)); err != nil {
					t.Fatalf("Insert(%x): %v", k, err)
				}
			}
			for _, k := range ks {
				v, loc, err := tab.Get(k)
				if err != nil || !bytes.Equal(v, valueOf(k, 6)) {
					t.Fatalf("Get(%x) = %x, %v", k, v, err)
				}
				if h := spec.HomeOf(k); !loc.Stash && loc.Bucket != h && loc.Bucket != spec.Next(h) {
					t.Fatalf("key %x with home %d is in bucket %d", k, h, loc.Bucket)
				}
			}
			checkTable(t, tab, mem)
			if got := tab.Len(); got != uint64(len(ks)) {
				t.Errorf("Len = %d, want %d", got, len(ks))
			}
		})
	}
}

func TestAnOverfullTableKeepsTheRestInTheStash(t *testing.T) {
	spec := tea.Spec{Buckets: 8, Cells: 1, KeySize: 4, ValueSize: 4, Hash: tea.CRC64}
	tab, mem := newTable(t, spec, tea.TableConfig{MaxTries: 10, Seed: 3})
	ks := keys(20, 4, 1)
	for _, k := range ks {
		if err := tab.Insert(k, valueOf(k, 4)); err != nil {
			t.Fatal(err)
		}
	}
	if n := tab.Stash().Len(); n < 12 {
		t.Errorf("stash holds %d entries, want at least 20 − 8 cells = 12", n)
	}
	if tab.LoadFactor() != 1 {
		t.Errorf("load factor %v, want every cell used", tab.LoadFactor())
	}
	st := tab.Stats()
	if st.Inserts != 20 || st.Stashed < 12 || st.Kicks == 0 {
		t.Errorf("stats %+v: want 20 inserts, ≥ 12 stashed, some kicks", st)
	}
	for _, k := range ks {
		if v, _, err := tab.Get(k); err != nil || !bytes.Equal(v, valueOf(k, 4)) {
			t.Fatalf("Get(%x) = %x, %v", k, v, err)
		}
	}
	checkTable(t, tab, mem)
}

func TestInsertRefusals(t *testing.T) {
	spec := tea.Spec{Buckets: 4, Cells: 1, KeySize: 4, ValueSize: 2, Hash: tea.CRC64}
	t.Run("a key already in memory or in the stash is refused", func(t *testing.T) {
		tab, _ := newTable(t, spec, tea.TableConfig{MaxTries: 2, Seed: 1})
		ks := keys(10, 4, 2)
		for _, k := range ks {
			if err := tab.Insert(k, []byte{1, 2}); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range ks {
			if err := tab.Insert(k, []byte{1, 2}); !errors.Is(err, tea.ErrExists) {
				t.Fatalf("second Insert(%x) = %v, want ErrExists", k, err)
			}
		}
	})
	t.Run("a full stash refuses inserts", func(t *testing.T) {
		tab, _ := newTable(t, spec, tea.TableConfig{MaxTries: 2, StashLimit: 2, Seed: 1})
		var err error
		for _, k := range keys(20, 4, 3) {
			if err = tab.Insert(k, []byte{1, 2}); err != nil {
				break
			}
		}
		if !errors.Is(err, tea.ErrStashFull) || tab.Stash().Len() != 2 || tab.Len() > 6 {
			t.Errorf("err %v, stash %d, len %d; want ErrStashFull with at most 4 cells and 2 stashed", err, tab.Stash().Len(), tab.Len())
		}
	})
	t.Run("sizes other than the spec's are refused", func(t *testing.T) {
		tab, _ := newTable(t, spec, tea.DefaultTableConfig())
		if err := tab.Insert([]byte{1, 2, 3}, []byte{1, 2}); !errors.Is(err, tea.ErrKeySize) {
			t.Errorf("3-byte key: %v", err)
		}
		if err := tab.Insert([]byte{1, 2, 3, 4}, []byte{1}); !errors.Is(err, tea.ErrValueSize) {
			t.Errorf("1-byte value: %v", err)
		}
	})
}

func TestUpdateAndDeleteReachEveryCopy(t *testing.T) {
	spec := tea.Spec{Buckets: 16, Cells: 2, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	tab, mem := newTable(t, spec, tea.TableConfig{MaxTries: 3, CacheSize: 4, Seed: 5})
	ks := keys(40, 8, 9) // more than the 32 cells: some are stashed
	for _, k := range ks {
		if err := tab.Insert(k, valueOf(k, 8)); err != nil {
			t.Fatal(err)
		}
	}
	if tab.Stash().Len() == 0 {
		t.Fatal("no key was stashed; the test wants both kinds")
	}
	pop := func([]byte) uint64 { return 1 }
	for _, k := range ks[:4] {
		if ok, err := tab.Promote(k, pop); !ok || err != nil {
			t.Fatalf("Promote: %v %v", ok, err)
		}
	}
	newVal := bytes.Repeat([]byte{0xEE}, 8)
	for i, k := range ks {
		if i%2 == 0 {
			if err := tab.Update(k, newVal); err != nil {
				t.Fatal(err)
			}
		} else if err := tab.Delete(k); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range ks {
		v, _, err := tab.Get(k)
		cached, inCache := tab.Cache().Get(k, nil)
		switch {
		case i%2 == 0 && (err != nil || !bytes.Equal(v, newVal)):
			t.Errorf("updated key %x: %x, %v", k, v, err)
		case i%2 == 0 && inCache && !bytes.Equal(cached, newVal):
			t.Errorf("updated key %x: the cache still holds %x", k, cached)
		case i%2 == 1 && !errors.Is(err, tea.ErrNotFound):
			t.Errorf("deleted key %x: %x, %v", k, v, err)
		case i%2 == 1 && inCache:
			t.Errorf("deleted key %x is still cached", k)
		}
	}
	if err := tab.Update(ks[1], newVal); !errors.Is(err, tea.ErrNotFound) {
		t.Errorf("update of a deleted key: %v", err)
	}
	if err := tab.Delete(ks[1]); !errors.Is(err, tea.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	checkTable(t, tab, mem)
}

// op is a write or a grace period, as the write-order test logs them.
func logWrites(spec tea.Spec, m *recordingMemory, graces []int) []string {
	var out []string
	g := 0
	for i, w := range m.writes {
		for g < len(graces) && graces[g] == i {
			out = append(out, "grace")
			g++
		}
		what := "body"
		if len(w.b) == 1 {
			what = fmt.Sprintf("flag=%d", w.b[0])
		} else if bytes.Count(w.b, []byte{0}) == len(w.b) {
			what = "zero body"
		}
		copyOf := "original"
		if w.off%spec.RowSize() >= spec.BucketSize() {
			copyOf = "shadow"
		}
		out = append(out, copyOf+" "+what)
	}
	for ; g < len(graces); g++ {
		out = append(out, "grace")
	}
	return out
}

func TestWritesFollowTheOrderThatKeepsRacingLookupsRight(t *testing.T) {
	spec := tea.Spec{Buckets: 4, Cells: 1, KeySize: 4, ValueSize: 4, Hash: tea.CRC64}
	for _, tc := range []struct {
		name string
		do   func(tab *tea.Table, k []byte) error
		want []string
	}{
		{"an insert into an empty cell writes key and value, then the flag; the original, then the shadow",
			func(tab *tea.Table, k []byte) error { return nil },
			nil},
		{"an update invalidates both copies, waits, then rewrites them",
			func(tab *tea.Table, k []byte) error { return tab.Update(k, []byte{9, 9, 9, 9}) },
			[]string{"grace", "original flag=0", "shadow flag=0", "grace", "original body", "original flag=1", "shadow body", "shadow flag=1"}},
		{"a delete invalidates both copies, waits, then zeroes them",
			func(tab *tea.Table, k []byte) error { return tab.Delete(k) },
			[]string{"original flag=0", "shadow flag=0", "grace", "original zero body", "shadow zero body"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &recordingMemory{LocalMemory: tea.NewLocalMemory(spec.TableSize())}
			var graces []int
			cfg := tea.TableConfig{MaxTries: 1, Grace: time.Second, Sleep: func(time.Duration) { graces = append(graces, len(m.writes)) }}
			tab, err := tea.NewTable(spec, m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			k := []byte{1, 2, 3, 4}
			if err := tab.Insert(k, []byte{5, 6, 7, 8}); err != nil {
				t.Fatal(err)
			}
			insert := []string{"original body", "original flag=1", "shadow body", "shadow flag=1"}
			if got := logWrites(spec, m, graces); !slices.Equal(got, insert) {
				t.Fatalf("insert wrote %q, want %q", got, insert)
			}
			m.writes, graces = nil, nil
			if err := tc.do(tab, k); err != nil {
				t.Fatal(err)
			}
			if got := logWrites(spec, m, graces); !slices.Equal(got, tc.want) {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAVictimIsInTheStashBeforeItsCellIsOverwritten(t *testing.T) {
	spec := tea.Spec{Buckets: 2, Cells: 1, KeySize: 4, ValueSize: 0, Hash: tea.CRC64}
	var tab *tea.Table
	ks := keys(3, 4, 11)
	m := &checkingMemory{LocalMemory: tea.NewLocalMemory(spec.TableSize())}
	m.check = func(off uint64, b []byte) {
		// Every entry written over must be reachable from the stash.
		if len(b) != 1 || b[0] != 0 {
			return
		}
		old := make([]byte, spec.CellSize())
		_ = m.LocalMemory.Read(off, old)
		if old[0] == tea.FlagValid {
			if _, ok := tab.Stash().Get(old[1:], nil); !ok {
				t.Errorf("the entry %x at %d is invalidated while not in the stash", old[1:], off)
			}
		}
	}
	tab, _ = tea.NewTable(spec, m, tea.TableConfig{MaxTries: 5, Seed: 1})
	for _, k := range ks {
		if err := tab.Insert(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if tab.Stats().Kicks == 0 {
		t.Fatal("no victim was displaced")
	}
}

// checkingMemory calls check before every write.
type checkingMemory struct {
	*tea.LocalMemory
	check func(off uint64, b []byte)
}

func (m *checkingMemory) Write(off uint64, b []byte) error {
	m.check(off, b)
	return m.LocalMemory.Write(off, b)
}

func TestTheSeedDecidesTheTable(t *testing.T) {
	spec := tea.Spec{Buckets: 64, Cells: 2, KeySize: 8, ValueSize: 2, Hash: tea.CRC64}
	ks := keys(128, 8, 4)
	fill := func(seed uint64) []byte {
		tab, mem := newTable(t, spec, tea.TableConfig{MaxTries: 20, Seed: seed})
		for _, k := range ks {
			if err := tab.Insert(k, []byte{k[0], k[1]}); err != nil {
				t.Fatal(err)
			}
		}
		b := make([]byte, mem.Size())
		_ = mem.Read(0, b)
		return b
	}
	if !bytes.Equal(fill(1), fill(1)) {
		t.Error("two tables with seed 1 differ")
	}
	if bytes.Equal(fill(1), fill(2)) {
		t.Error("tables with seeds 1 and 2 are equal: the victims are not random")
	}
}

func TestRandomOperationsKeepTheInvariants(t *testing.T) {
	spec := tea.Spec{Buckets: 32, Cells: 2, KeySize: 4, ValueSize: 4, Hash: tea.CRC64}
	tab, mem := newTable(t, spec, tea.TableConfig{MaxTries: 8, CacheSize: 8, Seed: 1})
	r := rand.New(rand.NewPCG(1, 2))
	pool := keys(96, 4, 5)
	model := map[string][]byte{}
	for i := range 3000 {
		k := pool[r.IntN(len(pool))]
		v := []byte{byte(i), byte(i >> 8), 0, 1}
		_, held := model[string(k)]
		var err error
		switch op := r.IntN(4); {
		case op == 0 && !held:
			err = tab.Insert(k, v)
			model[string(k)] = v
		case op == 1 && held:
			err = tab.Update(k, v)
			model[string(k)] = v
		case op == 2 && held:
			err = tab.Delete(k)
			delete(model, string(k))
		case op == 3 && held:
			_, err = tab.Promote(k, func(k []byte) uint64 { return uint64(k[0]) })
		}
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	for _, k := range pool {
		v, _, err := tab.Get(k)
		want, held := model[string(k)]
		if held != (err == nil) || !bytes.Equal(v, want) {
			t.Fatalf("key %x: got %x, %v; want %x (held %v)", k, v, err, want, held)
		}
		if c, ok := tab.Cache().Get(k, nil); ok && !bytes.Equal(c, want) {
			t.Fatalf("key %x: cache holds %x, the table %x", k, c, want)
		}
	}
	checkTable(t, tab, mem)
}

func TestPromoteKeepsTheMostPopular(t *testing.T) {
	spec := tea.Spec{Buckets: 64, Cells: 4, KeySize: 4, ValueSize: 1, Hash: tea.CRC64}
	tab, _ := newTable(t, spec, tea.TableConfig{MaxTries: 8, CacheSize: 2, Seed: 1})
	ks := keys(4, 4, 6)
	for _, k := range ks {
		if err := tab.Insert(k, []byte{k[0]}); err != nil {
			t.Fatal(err)
		}
	}
	pop := map[string]uint64{string(ks[0]): 10, string(ks[1]): 5, string(ks[2]): 7, string(ks[3]): 1}
	p := func(k []byte) uint64 { return pop[string(k)] }
	for _, tc := range []struct {
		name string
		key  []byte
		want bool
	}{
		{"the first key enters an empty cache", ks[0], true},
		{"the second fills it", ks[1], true},
		{"a cached key does not enter twice", ks[0], false},
		{"a more popular key replaces the coldest", ks[2], true},
		{"a less popular key stays out", ks[3], false},
		{"an unknown key stays out", []byte{0, 0, 0, 0}, false},
	} {
		if ok, err := tab.Promote(tc.key, p); ok != tc.want || err != nil {
			t.Errorf("%s: Promote = %v, %v", tc.name, ok, err)
		}
	}
	if got := tab.Cache().Keys(); len(got) != 2 || !slices.ContainsFunc(got, func(k []byte) bool { return bytes.Equal(k, ks[0]) }) ||
		!slices.ContainsFunc(got, func(k []byte) bool { return bytes.Equal(k, ks[2]) }) {
		t.Errorf("cache holds %x, want the keys of popularity 10 and 7", got)
	}
	if st := tab.Stats(); st.Promotions != 3 || st.Evictions != 1 {
		t.Errorf("stats %+v", st)
	}
}
