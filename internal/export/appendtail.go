package export

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/store"
)

// pollChunk bounds the entries read from one list per poll, so that one
// busy list does not hold the others back.
const pollChunk = 4096

// appendTail follows every list of one Append store.
type appendTail struct {
	s     *store.Store
	lists []listTail
	buf   []byte
}

// listTail is one list's position. next is touched only by the polling
// goroutine; acked and rewind also by the client's callbacks.
type listTail struct {
	key    []byte        // the record key, "<store>/<list>"
	next   uint64        // the next index to read
	acked  atomic.Uint64 // every index below is acknowledged
	rewind atomic.Uint64 // the lowest index whose send failed (MaxUint64: none)
}

func newAppendTail(s *store.Store, saved []uint64, latest bool, st *Stats) *appendTail {
	spec := s.Append.Spec()
	t := &appendTail{s: s, lists: make([]listTail, spec.Lists)}
	if saved != nil && len(saved) != int(spec.Lists) {
		st.CursorResets.Add(1) // the store's geometry changed: start over
		saved = nil
	}
	for l := range t.lists {
		lt := &t.lists[l]
		lt.key = []byte(s.Name + "/" + strconv.FormatUint(uint64(l), 10))
		lt.rewind.Store(math.MaxUint64)
		head, _ := s.Append.Head(uint32(l))
		switch {
		case l < len(saved) && saved[l] <= head:
			lt.next = saved[l]
		case l < len(saved):
			st.CursorResets.Add(1) // the list is behind its cursor: reset
		case latest:
			lt.next = head
		}
		lt.acked.Store(lt.next)
	}
	return t
}

// pollAppend reads the new entries of every list and hands them to the
// client, as many as there is room for. It reports whether any list still
// has entries it did not take (no room).
func (e *Exporter) pollAppend() bool {
	now := uint64(time.Now().UnixNano())
	hdr := e.headers(StreamAppend)
	behind := false
	var lag uint64
	for _, t := range e.tails {
		spec := t.s.Append.Spec()
		for l := range t.lists {
			lt := &t.lists[l]
			if r := lt.rewind.Swap(math.MaxUint64); r < lt.next {
				lt.next = r // a send failed: from there again, in order
			}
			room := min(e.room(), pollChunk)
			if room <= 0 {
				behind = true
				head, _ := t.s.Append.Head(uint32(l))
				lag += head - min(head, lt.acked.Load())
				continue
			}
			if cap(t.buf) < pollChunk*int(spec.EntrySize) {
				t.buf = make([]byte, 0, pollChunk*int(spec.EntrySize))
			}
			res, err := t.s.Append.Poll(uint32(l), lt.next, room, t.buf)
			if errors.Is(err, appendlist.ErrCursorAhead) {
				// The list was reset (query API) or replaced: start over.
				e.stats.CursorResets.Add(1)
				lt.next = 0
				lt.acked.Store(0)
				res, err = t.s.Append.Poll(uint32(l), 0, room, t.buf)
			}
			if err != nil {
				continue
			}
			if res.Lost > 0 {
				e.stats.Dropped[StreamAppend][DropLapped].Add(res.Lost)
			}
			es := int(spec.EntrySize)
			for j := range res.Count {
				rec := AppendEntry{Collector: e.cfg.Collector, Store: t.s.Name, List: uint32(l), Index: res.First + uint64(j),
					Data: res.Data[j*es : (j+1)*es], ReadTimeUnixNano: now}
				if j == 0 {
					rec.LostBefore = res.Lost
				}
				idx := rec.Index
				e.produce(StreamAppend, e.cfg.Topics.Append, lt.key, e.encode(&rec), hdr, func(err error) {
					if err == nil {
						maxStore(&lt.acked, idx+1)
					} else if !e.closing.Load() {
						minStore(&lt.rewind, idx)
					}
				})
			}
			if res.Count > 0 || res.Lost > 0 {
				lt.next = res.Next
			}
			if res.Next < res.Head {
				behind = true
			}
			lag += res.Head - min(res.Head, lt.acked.Load())
		}
	}
	e.stats.AppendLag.Store(lag)
	return behind
}

func maxStore(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func minStore(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v >= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// cursors returns the acknowledged position of every list, by store.
func (e *Exporter) cursors() map[string][]uint64 {
	m := make(map[string][]uint64, len(e.tails))
	for _, t := range e.tails {
		c := make([]uint64, len(t.lists))
		for l := range t.lists {
			c[l] = t.lists[l].acked.Load()
		}
		m[t.s.Name] = c
	}
	return m
}
