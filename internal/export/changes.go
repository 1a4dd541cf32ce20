package export

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync"
	"time"

	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// changeBlock is the block size of the change trackers: a slot is compared
// only when a write touched its block.
const changeBlock = region.MinTrackBlock

// changeStore finds the changed slots of one Key-Write or Key-Increment
// store by comparing the blocks written since the last interval with a
// shadow copy of what was last sent.
type changeStore struct {
	s         *store.Store
	tracker   *region.Tracker
	slotSize  uint64
	primitive int32
	valueSize int // Key-Write

	mu      sync.Mutex // shadow and pending (the client's callbacks restore both)
	shadow  []byte
	pending []uint64 // bit per block: written, not yet compared (or a send failed)
	taken   []uint64 // scratch for Take
}

func newChangeStore(s *store.Store) (*changeStore, error) {
	tr, err := s.Region.Track(changeBlock)
	if err != nil {
		return nil, err
	}
	c := &changeStore{s: s, tracker: tr, pending: make([]uint64, (tr.Blocks()+63)/64)}
	if s.KeyWrite != nil {
		sp := s.KeyWrite.Spec()
		c.slotSize, c.primitive, c.valueSize = sp.SlotSize(), primitiveKeyWrite, sp.ValueSize
	} else {
		c.slotSize, c.primitive = 8, primitiveKeyIncrement
	}
	// What the store holds now (restored, or empty) is the baseline: the
	// stream carries changes from here on.
	c.shadow = make([]byte, s.Region.Size())
	if err := s.Region.Read(0, c.shadow); err != nil {
		tr.Stop()
		return nil, err
	}
	return c, nil
}

// exportChanges runs one changes interval over every store: it takes the
// written blocks, compares their slots with the shadow and sends those that
// differ, as far as there is room in flight (blocks it could not get to wait
// for the next interval, their slots coalesced). While changed slots of an
// earlier interval are still unacknowledged (the brokers are slow or gone)
// it only takes the written blocks: their slots coalesce, and the newest
// value of each is sent once the brokers have taken the earlier ones.
func (e *Exporter) exportChanges() {
	if e.changesInFlight.Load() > 0 {
		var pending uint64
		for _, c := range e.changes {
			pending += c.take()
		}
		e.stats.PendingBlocks.Store(pending)
		return
	}
	interval := e.stats.Intervals.Add(1)
	now := uint64(time.Now().UnixNano())
	hdr := e.headers(StreamChanges)
	var pending uint64
	for _, c := range e.changes {
		c.take()
		pending += c.run(e, interval, now, hdr)
	}
	e.stats.PendingBlocks.Store(pending)
}

// take moves the blocks written since the last take into pending and
// returns how many blocks are pending.
func (c *changeStore) take() uint64 {
	var err error
	c.taken, err = c.tracker.Take(c.taken[:0])
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.taken {
		c.pending[b/64] |= 1 << (b % 64)
	}
	var n int
	for _, w := range c.pending {
		n += bits.OnesCount64(w)
	}
	return uint64(n)
}

// run is one interval over c's pending blocks; it returns the blocks still
// pending.
func (c *changeStore) run(e *Exporter, interval, now uint64, hdr []kgoHeader) uint64 {
	var left uint64
	bs := c.tracker.BlockSize()
	size := c.s.Region.Size()
	for w := range c.pending {
		c.mu.Lock()
		set := c.pending[w]
		c.mu.Unlock()
		for set != 0 {
			bit := uint64(bits.TrailingZeros64(set))
			set &^= 1 << bit
			if e.room() <= 0 {
				left++
				continue
			}
			b := uint64(w)*64 + bit
			c.mu.Lock()
			c.pending[w] &^= 1 << bit
			c.mu.Unlock()
			// The slots that start in this block (a write to a slot marks
			// every block it touches, so its first block is enough).
			first := (b*bs + c.slotSize - 1) / c.slotSize
			end := min((b+1)*bs, size)
			for slot := first; slot*c.slotSize < end && (slot+1)*c.slotSize <= size; slot++ {
				c.compare(e, slot, interval, now, hdr)
			}
		}
	}
	return left
}

// compare sends slot if it differs from the shadow.
func (c *changeStore) compare(e *Exporter, slot, interval, now uint64, hdr []kgoHeader) {
	off := slot * c.slotSize
	cur, err := c.s.Region.Slice(off, c.slotSize)
	if err != nil {
		return
	}
	c.mu.Lock()
	old := c.shadow[off : off+c.slotSize]
	if bytes.Equal(cur, old) {
		c.mu.Unlock()
		return
	}
	prev := bytes.Clone(old)
	copy(old, cur)
	now2 := bytes.Clone(old) // what was read, stable while it is encoded
	c.mu.Unlock()
	rec := SlotChange{Collector: e.cfg.Collector, Store: c.s.Name, Primitive: c.primitive, Slot: slot,
		Interval: interval, TimeUnixNano: now}
	if c.primitive == primitiveKeyWrite {
		rec.Data = now2
		rec.Checksum = binary.LittleEndian.Uint32(now2[:keywrite.ChecksumLen])
		rec.Value = now2[keywrite.ChecksumLen : keywrite.ChecksumLen+c.valueSize]
	} else {
		rec.Counter = binary.LittleEndian.Uint64(now2)
		rec.Previous = binary.LittleEndian.Uint64(prev)
	}
	key := []byte(c.s.Name + "/" + strconv.FormatUint(slot, 10))
	e.changesInFlight.Add(1)
	e.produce(StreamChanges, e.cfg.Topics.Changes, key, e.encode(&rec), hdr, func(err error) {
		e.changesInFlight.Add(-1)
		if err == nil || e.closing.Load() {
			return
		}
		// Not sent: restore the shadow (unless a later value was taken
		// meanwhile) and compare the block again next interval.
		c.mu.Lock()
		if sh := c.shadow[off : off+c.slotSize]; bytes.Equal(sh, now2) {
			copy(sh, prev)
		}
		b := off / c.tracker.BlockSize()
		c.pending[b/64] |= 1 << (b % 64)
		c.mu.Unlock()
	})
}
