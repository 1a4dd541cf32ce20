package region

import (
	"sync"
	"testing"
)

// The race detector does not see accesses to mmap'd memory; these tests check
// the arithmetic, and -race checks the Go-side bookkeeping.

func TestConcurrentAdd64IsExact(t *testing.T) {
	r := newTestRegion(t, testSize)
	const (
		goroutines = 8
		adds       = 20000
		off        = 64
	)
	var wg sync.WaitGroup
	for g := range goroutines {
		delta := uint64(g + 1)
		wg.Go(func() {
			for range adds {
				if _, err := r.Add64(off, delta); err != nil {
					t.Error(err)
					return
				}
				// Contend on the neighbouring word with plain byte writes too.
				_ = r.Write(off+8, []byte{byte(delta)})
			}
		})
	}
	wg.Wait()
	want := uint64(adds * goroutines * (goroutines + 1) / 2)
	if got, _ := r.Load64(off); got != want {
		t.Fatalf("sum = %d; want %d", got, want)
	}
}

func TestConcurrentCompareAndSwap64IncrementsAreExact(t *testing.T) {
	r := newTestRegion(t, testSize)
	const (
		goroutines = 8
		incs       = 5000
		off        = 128
	)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range incs {
				cur, _ := r.Load64(off)
				for {
					swapped, prev, err := r.CompareAndSwap64(off, cur, cur+1)
					if err != nil {
						t.Error(err)
						return
					}
					if swapped {
						break
					}
					if prev == cur {
						t.Errorf("failed CAS reported prev == old (%d)", prev)
						return
					}
					cur = prev
				}
			}
		})
	}
	wg.Wait()
	if got, want := must(r.Load64(off)), uint64(goroutines*incs); got != want {
		t.Fatalf("count = %d; want %d", got, want)
	}
}

func must(v uint64, err error) uint64 {
	if err != nil {
		panic(err)
	}
	return v
}
