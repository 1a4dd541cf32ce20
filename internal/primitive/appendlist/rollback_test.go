package appendlist_test

import (
	"errors"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
)

// failOnce refuses the first Apply, then passes ops on.
type failOnce struct {
	next   memop.Sink
	failed bool
}

func (s *failOnce) Apply(ops []memop.Op) error {
	if !s.failed {
		s.failed = true
		return errors.New("link down")
	}
	return s.next.Apply(ops)
}

func TestARefusedBatchIsNeverPublished(t *testing.T) {
	spec := appendlist.Spec{Lists: 1, Capacity: 16, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	sink := &failOnce{next: f.cat}
	b := memop.NewBatch(4, 256)
	for i := range uint64(4) {
		err := f.w.Add(0, entry(100+i, 8), false, 1, b, sink)
		if i < 3 && err != nil || i == 3 && err == nil {
			t.Fatalf("entry %d: err %v", i, err)
		}
	}
	// The refused batch rolled the head back: the next batch takes its slots.
	for i := range uint64(4) {
		if err := f.w.Add(0, entry(i, 8), false, 2, b, sink); err != nil {
			t.Fatal(err)
		}
	}
	res := f.poll(t, 0, 0, 16)
	if res.Count != 4 || res.Head != 4 {
		t.Fatalf("poll %+v, want the 4 entries of the batch that landed", res)
	}
	checkEntries(t, spec, res)
}
