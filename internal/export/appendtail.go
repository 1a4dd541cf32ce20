package export

import (
	"errors"
	"hash/maphash"
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

// Generations. An Append list numbers its entries 0, 1, 2, ... and a reset
// (the query API's append:reset), a writer that restarts without resuming, or
// a collector restored from a checkpoint older than what was exported starts
// the numbering over: the same index then names another entry. So every
// record also carries a generation, and (store, list, generation, index)
// names one entry for ever. A segment is one generation of a list: it holds
// the indices from start on; the indices below start that the segment still
// sends (a restart resends what was not acknowledged) keep the generation
// they were first sent under, prev.
//
// A new segment begins:
//   - at a reset seen while running (the head went below the cursor, the
//     last entry read changed under the same index, or AfterReset): start 0,
//     every index is named anew; read again from the oldest entry;
//   - at a start with no saved state for the list: start 0;
//   - at a start after a crash (the cursor file was not written by a clean
//     stop, or the restored head is below what was sent): start at the
//     restored head, since the entries beyond it may have been sent and will
//     now be numbered again; the entries from the cursor to the head keep
//     their names, so resending them makes exact duplicates. A head below
//     the cursor (the checkpoint is older than the acknowledgements) also
//     resumes at the head: everything below it was acknowledged.
//
// After a clean stop whose final checkpoint holds everything sent, the
// segment goes on unchanged.

// segment is one generation of one list. gen, start and prev never change;
// the client's callbacks update acked and rewind of the segment the record
// was sent in, so a callback from before a reset cannot move the new
// segment's cursor.
type segment struct {
	gen    uint64
	start  uint64
	prev   uint64
	acked  atomic.Uint64 // every index below is acknowledged
	rewind atomic.Uint64 // the lowest index whose send failed (MaxUint64: none)
	sent   atomic.Uint64 // every index handed to the client is below
}

func newSegment(gen, start, prev, acked uint64) *segment {
	sg := &segment{gen: gen, start: start, prev: prev}
	sg.acked.Store(acked)
	sg.sent.Store(acked)
	sg.rewind.Store(math.MaxUint64)
	return sg
}

// generation names index i in this segment.
func (sg *segment) generation(i uint64) uint64 {
	if i < sg.start {
		return sg.prev
	}
	return sg.gen
}

// nextGeneration returns a generation above prev: the Unix time in
// microseconds (below 2^53, exact in any JSON parser), or prev+1 if that is
// not above prev.
func nextGeneration(prev uint64, now time.Time) uint64 {
	if g := uint64(now.UnixMicro()); g > prev {
		return g
	}
	return prev + 1
}

// appendTail follows every list of one Append store.
type appendTail struct {
	s     *store.Store
	lists []listTail
	buf   []byte
	// last holds, per list, a hash of entry next-1 as it was read, to see
	// a reset that the head alone does not show: the writer started over
	// and already wrote past the cursor.
	last   []uint64
	lastOK []bool
	seed   maphash.Seed
	// resets counts AfterReset calls; seen is how many the poll handled.
	resets atomic.Uint64
	seen   uint64
}

// listTail is one list's position. next, and the tail's last and lastOK,
// are touched only by the polling goroutine; seg is read by the cursor
// saver too.
type listTail struct {
	key  []byte // the record key, "<store>/<list>"
	next uint64 // the next index to read
	seg  atomic.Pointer[segment]
}

func newAppendTail(s *store.Store, saved []listCursor, clean, latest bool, st *Stats, now time.Time) *appendTail {
	spec := s.Append.Spec()
	t := &appendTail{s: s, lists: make([]listTail, spec.Lists), last: make([]uint64, spec.Lists), lastOK: make([]bool, spec.Lists),
		seed: maphash.MakeSeed()}
	var newest uint64 // the newest generation the file knows: new ones are above
	for _, c := range saved {
		newest = max(newest, c.gen)
	}
	if saved != nil && len(saved) != int(spec.Lists) {
		st.CursorResets.Add(1) // the store's geometry changed: start over
		saved = nil
	}
	fresh := nextGeneration(newest, now)
	for l := range t.lists {
		lt := &t.lists[l]
		lt.key = []byte(s.Name + "/" + strconv.FormatUint(uint64(l), 10))
		head, _ := s.Append.Head(uint32(l))
		var sg *segment
		switch {
		case l < len(saved):
			c := saved[l]
			gen := nextGeneration(c.gen, now)
			switch {
			case clean && head >= c.sent:
				sg = newSegment(c.gen, c.start, c.prev, c.acked) // the same numbering goes on
				lt.next = c.acked
			case head >= c.acked:
				// The entries from the cursor to the head keep their names.
				// If the old segment began between the cursor and the head,
				// the entries below its start, sent under c.prev, are named
				// c.gen now: a name never used (c.gen begins at c.start), so
				// their resend is a duplicate a consumer cannot recognise,
				// never a clash.
				prev := c.gen
				if head <= c.start {
					prev = c.prev
				}
				sg = newSegment(gen, head, prev, c.acked)
				lt.next = c.acked
			default:
				st.CursorResets.Add(1) // the list is behind its cursor
				sg = newSegment(gen, head, c.gen, head)
				lt.next = head
			}
		case latest:
			sg = newSegment(fresh, 0, 0, head)
			lt.next = head
		default:
			sg = newSegment(fresh, 0, 0, 0)
		}
		lt.seg.Store(sg)
	}
	return t
}

// AfterReset tells the exporter that s was reset (the query API's
// append:reset zeroes every list): every list of it starts a new
// generation and is read again from its oldest entry at the next poll.
// Without it a reset is still seen when the head falls below the cursor or
// the last entry read changes; with it also when the writer already wrote
// past the cursor the same bytes at the same index. Safe for concurrent use;
// other stores are ignored.
func (e *Exporter) AfterReset(s *store.Store) {
	for _, t := range e.tails {
		if t.s == s {
			t.resets.Add(1)
		}
	}
}

// restart begins a new generation of list l from index 0 (a reset).
func (e *Exporter) restart(t *appendTail, l int, now time.Time) *segment {
	lt := &t.lists[l]
	old := lt.seg.Load()
	sg := newSegment(nextGeneration(old.gen, now), 0, 0, 0)
	lt.seg.Store(sg)
	lt.next = 0
	t.lastOK[l] = false
	e.stats.CursorResets.Add(1)
	return sg
}

// pollAppend reads the new entries of every list and hands them to the
// client, as many as there is room for. It reports whether any list still
// has entries it did not take (no room).
func (e *Exporter) pollAppend() bool {
	wall := time.Now()
	now := uint64(wall.UnixNano())
	hdr := e.headers(StreamAppend)
	behind := false
	var lag uint64
	for _, t := range e.tails {
		spec := t.s.Append.Spec()
		es := int(spec.EntrySize)
		force := false
		if r := t.resets.Load(); r != t.seen {
			t.seen, force = r, true
		}
		if cap(t.buf) < (pollChunk+1)*es {
			t.buf = make([]byte, 0, (pollChunk+1)*es)
		}
		for l := range t.lists {
			lt := &t.lists[l]
			sg := lt.seg.Load()
			if force && (lt.next > 0 || sg.sent.Load() > 0) { // a list that never moved keeps its (unused) generation
				sg = e.restart(t, l, wall)
			}
			if r := sg.rewind.Swap(math.MaxUint64); r < lt.next {
				lt.next = r // a send failed: from there again, in order
				t.lastOK[l] = false
			}
			room := min(e.room(), pollChunk)
			if room <= 0 {
				behind = true
				head, _ := t.s.Append.Head(uint32(l))
				lag += head - min(head, sg.acked.Load())
				continue
			}
			res, reset, err := e.pollList(t, l, room)
			if reset {
				// The list was reset (query API), or its writer started
				// over: a new numbering, from the oldest entry.
				sg = e.restart(t, l, wall)
				res, err = t.s.Append.Poll(uint32(l), 0, room, t.buf)
			}
			if err != nil {
				continue
			}
			if res.Lost > 0 {
				e.stats.Dropped[StreamAppend][DropLapped].Add(res.Lost)
			}
			for j := range res.Count {
				idx := res.First + uint64(j)
				rec := AppendEntry{Collector: e.cfg.Collector, Store: t.s.Name, List: uint32(l), Index: idx,
					Data: res.Data[j*es : (j+1)*es], ReadTimeUnixNano: now, Generation: sg.generation(idx)}
				if j == 0 {
					rec.LostBefore = res.Lost
				}
				maxStore(&sg.sent, idx+1)
				e.produce(StreamAppend, e.cfg.Topics.Append, lt.key, e.encode(&rec), hdr, func(err error) {
					if err == nil {
						maxStore(&sg.acked, idx+1)
					} else if !e.closing.Load() {
						minStore(&sg.rewind, idx)
					}
				})
			}
			if res.Count > 0 {
				t.last[l] = maphash.Bytes(t.seed, res.Data[(res.Count-1)*es:])
				t.lastOK[l] = true
			}
			if res.Count > 0 || res.Lost > 0 {
				lt.next = res.Next
			}
			if res.Next < res.Head {
				behind = true
			}
			lag += res.Head - min(res.Head, sg.acked.Load())
		}
	}
	e.stats.AppendLag.Store(lag)
	return behind
}

// pollList reads up to room entries of list l from its cursor. It reads
// entry next-1 too, when it is still in the ring, and compares it with the
// hash kept when it was first read: a different entry there (or a head
// below the cursor) means the list was reset, reported as reset with
// nothing read. The result never holds entry next-1.
func (e *Exporter) pollList(t *appendTail, l, room int) (appendlist.PollResult, bool, error) {
	lt := &t.lists[l]
	es := t.s.Append.Spec().EntrySize
	from, limit := lt.next, room
	if from > 0 {
		from, limit = from-1, room+1
	}
	res, err := t.s.Append.Poll(uint32(l), from, limit, t.buf)
	if errors.Is(err, appendlist.ErrCursorAhead) || err == nil && res.Head < lt.next {
		return appendlist.PollResult{}, true, nil
	}
	if err != nil || from == lt.next {
		return res, false, err
	}
	if res.First > from { // entry next-1 is gone from the ring
		res.Lost--
		return res, false, nil
	}
	if res.Count == 0 {
		return res, false, nil
	}
	h := maphash.Bytes(t.seed, res.Data[:es])
	if !t.lastOK[l] {
		t.last[l], t.lastOK[l] = h, true // the first look since a start or a resend
	} else if h != t.last[l] {
		return appendlist.PollResult{}, true, nil
	}
	res.Data, res.Count, res.First = res.Data[es:], res.Count-1, res.First+1
	return res, false, nil
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
