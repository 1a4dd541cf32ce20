package region

import (
	"slices"
	"sync"
	"testing"
)

func newTrackedRegion(t *testing.T, size, block uint64) (*Region, *Tracker) {
	t.Helper()
	r := newTestRegion(t, size)
	tr, err := r.Track(block)
	if err != nil {
		t.Fatal(err)
	}
	return r, tr
}

func take(t *testing.T, tr *Tracker) []uint64 {
	t.Helper()
	got, err := tr.Take(nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTrackRejectsBadBlockSizes(t *testing.T) {
	r := newTestRegion(t, 1<<20)
	for _, bs := range []uint64{0, 1, 4095, 6000, MinTrackBlock + 1, MaxTrackBlock * 2} {
		if _, err := r.Track(bs); err == nil {
			t.Errorf("Track(%d) accepted", bs)
		}
	}
}

func TestWrittenMarksTheBlocksARangeTouches(t *testing.T) {
	const block = 4096
	for _, tc := range []struct {
		name   string
		off, n uint64
		want   []uint64
	}{
		{"a range inside one block", block + 10, 3, []uint64{1}},
		{"a range across three blocks", block - 1, block + 2, []uint64{0, 1, 2}},
		{"a word across a block edge", 4*block - 4, 8, []uint64{3, 4}},
		{"the last byte", 10*block - 1, 1, []uint64{9}},
		{"nothing", 5 * block, 0, nil},
		{"a range past the end", 10*block - 2, 3, nil},
		{"a range that wraps around", 8, ^uint64(0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, tr := newTrackedRegion(t, 10*block, block)
			r.Written(tc.off, tc.n)
			if got := take(t, tr); !slices.Equal(got, tc.want) {
				t.Errorf("blocks taken = %v, want %v", got, tc.want)
			}
			if got := take(t, tr); len(got) != 0 {
				t.Errorf("a second Take returned %v, want nothing", got)
			}
		})
	}
}

func TestZeroMarksEveryBlock(t *testing.T) {
	r, tr := newTrackedRegion(t, 3*4096, 4096)
	r.Zero()
	if got := take(t, tr); !slices.Equal(got, []uint64{0, 1, 2}) {
		t.Errorf("Zero marked %v, want every block", got)
	}
}

func TestReadsAndWritesBeforeTrackAreNotRecorded(t *testing.T) {
	r := newTestRegion(t, 1<<16)
	r.Written(0, 1)
	tr, err := r.Track(4096)
	if err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	_ = r.Read(100, b[:])
	_, _ = r.Load64(200)
	if got := take(t, tr); len(got) != 0 {
		t.Errorf("Take = %v after reads only", got)
	}
}

func TestTrackersAreIndependent(t *testing.T) {
	r, a := newTrackedRegion(t, 1<<16, 4096)
	b, err := r.Track(8192)
	if err != nil {
		t.Fatal(err)
	}
	r.Written(4096*3, 1)
	if got := take(t, a); !slices.Equal(got, []uint64{3}) {
		t.Errorf("tracker a took %v, want [3]", got)
	}
	r.Written(0, 1)
	if got := take(t, b); !slices.Equal(got, []uint64{0, 1}) {
		t.Errorf("tracker b took %v, want [0 1] (its own blocks of 8 KiB, both writes)", got)
	}
	if got := take(t, a); !slices.Equal(got, []uint64{0}) {
		t.Errorf("tracker a took %v, want [0]", got)
	}
	b.Stop()
	b.Stop()
	if _, err := b.Take(nil); err == nil {
		t.Error("Take after Stop succeeded")
	}
	r.Written(4096*5, 1)
	if got := take(t, a); !slices.Equal(got, []uint64{5}) {
		t.Errorf("after b stopped, a took %v, want [5]", got)
	}
}

func TestMarkAllCoversExactlyTheRegion(t *testing.T) {
	// 70 blocks: the bitmap's second word is partial.
	r, tr := newTrackedRegion(t, 70*4096-100, 4096)
	if tr.Blocks() != 70 {
		t.Fatalf("Blocks = %d, want 70", tr.Blocks())
	}
	tr.MarkAll()
	got := take(t, tr)
	if len(got) != 70 || got[0] != 0 || got[69] != 69 {
		t.Errorf("MarkAll then Take gave %d blocks (%v...), want 0..69", len(got), got[:min(3, len(got))])
	}
	r.Written(r.Size()-1, 1)
	if got := take(t, tr); !slices.Equal(got, []uint64{69}) {
		t.Errorf("a write to the last byte marked %v, want [69]", got)
	}
}

// Every write that completes before Take is called is in what Take returns or
// in a later Take: nothing written is ever missed.
func TestConcurrentWritesAreNeverMissed(t *testing.T) {
	const block, blocks = 4096, 64
	r, tr := newTrackedRegion(t, block*blocks, block)
	const writers, rounds = 2, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := make(map[uint64]bool)
	written := make([]map[uint64]bool, writers)
	for w := range writers {
		written[w] = make(map[uint64]bool)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				b := uint64((i*7 + w*13) % blocks)
				if _, err := r.Add64(b*block+uint64(w)*8, 1); err != nil {
					t.Error(err)
					return
				}
				r.Written(b*block+uint64(w)*8, 8)
				written[w][b] = true
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			got, _ := tr.Take(nil)
			mu.Lock()
			for _, b := range got {
				seen[b] = true
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	got, _ := tr.Take(nil)
	for _, b := range got {
		seen[b] = true
	}
	for w := range writers {
		for b := range written[w] {
			if !seen[b] {
				t.Errorf("block %d was written by writer %d but never taken", b, w)
			}
		}
	}
}

func TestWrittenDoesNotAllocate(t *testing.T) {
	r, _ := newTrackedRegion(t, 1<<20, 4096)
	if n := testing.AllocsPerRun(100, func() {
		r.Written(12345, 4)
		r.Written(4096, 8)
	}); n != 0 {
		t.Errorf("%v allocations per tracked write", n)
	}
}
