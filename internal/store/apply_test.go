package store_test

import (
	"sync"
	"testing"

	"github.com/dta-go/dta/internal/memop"
)

func TestBatchedFetchAddsAreExact(t *testing.T) {
	t.Run("several adds to one counter in one call all count", func(t *testing.T) {
		cat := openSmall(t)
		ops := make([]memop.Op, 0, 150)
		for i := range 150 { // more than one look-ahead window
			ops = append(ops, memop.Op{Kind: memop.FetchAdd, Store: 1, Offset: uint64(i%3) * 8, Delta: 1})
		}
		if err := cat.Apply(ops); err != nil {
			t.Fatal(err)
		}
		for c := range uint64(3) {
			if v, _ := cat.Stores()[1].Region.Load64(c * 8); v != 50 {
				t.Errorf("counter %d = %d, want 50", c, v)
			}
		}
		if n := cat.Stats().Ops.Load(); n != 150 {
			t.Errorf("ops counted %d, want 150", n)
		}
	})
	t.Run("adds racing from several goroutines are not lost", func(t *testing.T) {
		cat := openSmall(t)
		const workers, rounds = 4, 2000
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				ops := []memop.Op{
					{Kind: memop.FetchAdd, Store: 1, Offset: 0, Delta: 1},
					{Kind: memop.FetchAdd, Store: 1, Offset: 8, Delta: 2},
					{Kind: memop.FetchAdd, Store: 1, Offset: 0, Delta: 3},
				}
				for range rounds {
					if err := cat.Apply(ops); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		r := cat.Stores()[1].Region
		if v, _ := r.Load64(0); v != workers*rounds*4 {
			t.Errorf("counter 0 = %d, want %d", v, workers*rounds*4)
		}
		if v, _ := r.Load64(8); v != workers*rounds*2 {
			t.Errorf("counter 1 = %d, want %d", v, workers*rounds*2)
		}
	})
	t.Run("a bad add in a batch stops the call there", func(t *testing.T) {
		cat := openSmall(t)
		err := cat.Apply([]memop.Op{
			{Kind: memop.FetchAdd, Store: 1, Offset: 0, Delta: 1},
			{Kind: memop.FetchAdd, Store: 1, Offset: 3, Delta: 1}, // misaligned
			{Kind: memop.FetchAdd, Store: 1, Offset: 8, Delta: 1},
		})
		if err == nil {
			t.Fatal("a misaligned add was applied")
		}
		r := cat.Stores()[1].Region
		a, _ := r.Load64(0)
		b, _ := r.Load64(8)
		if a != 1 || b != 0 {
			t.Errorf("counters %d, %d; want 1, 0 (applied up to the bad op)", a, b)
		}
		if st := cat.Stats(); st.Ops.Load() != 1 || st.Rejected.Load() != 1 {
			t.Errorf("ops %d rejected %d; want 1 and 1", st.Ops.Load(), st.Rejected.Load())
		}
	})
}
