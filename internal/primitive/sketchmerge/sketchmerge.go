// Package sketchmerge is the Sketch-Merge primitive (the DTA draft's fifth,
// §6.3 and §7.3.3): reporters keep a count-min or count-sketch locally (the
// switch's memory as a cache, package sketch), flush it once per epoch as
// runs of counters of one row, and the translator turns every non-zero
// counter into a FETCH_ADD on the collector's copy of the sketch for that
// epoch. Sketches are linear, so the collector holds the network-wide
// sketch: counter for counter, the sketch of the union of every reporter's
// stream. Count-sketch counters are signed; a negative delta travels as its
// two's complement, which a 64-bit FETCH_ADD adds correctly.
//
// Epochs. The store holds Epochs ≥ 3 copies of the sketch; epoch e lives in
// copy e mod Epochs. Reporters flush epoch e once it has ended, so the newest
// epoch the translator has seen is the one being flushed: it accumulates, and
// the epochs before it are closed. When the translator sees epoch e for the
// first time it writes e into copy e's tag word and clears the copy of epoch
// e+1 ahead of time (writing e+1 into its tag), so that the next epoch starts
// on zeros without a clear racing its first adds; Epochs-2 closed epochs stay
// readable. A report for an epoch older than the newest is dropped (the epoch
// is closed: its counters no longer change under a reader). A copy is cleared
// at the open of its own epoch only when it was not prepared ahead (the first
// epoch a translator sees, or after a gap). Queries check the tag, so a reader
// never takes another epoch's counters for the ones it asked for.
//
// Memory layout (docs/PROTOCOL.md, "Sketch-Merge"):
//
//	[0, 64)           tag words: copy c's epoch as a little-endian u64 at 8c
//	                  (0: never used; epoch e is stored as e+1)
//	[64 + c·R·W·8 + r·W·8 + w·8, +8)
//	                  the counter of copy c, row r, column w: little-endian
//	                  two's-complement int64
//
// Spec is the pure geometry shared by the writer (Translate, Opener) and the
// reader (Store); nothing else decides where a byte goes. The package does no
// I/O.
package sketchmerge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/dta-go/dta/sketch"
)

// CounterSize is the size of one counter (RDMA atomics are 64-bit).
const CounterSize = 8

// HeaderSize is the bytes of tag words before the copies.
const HeaderSize = 64

// LastEpoch is the last epoch number: after it no epoch is prepared, and
// epochs do not wrap to 0 (a report of epoch 0 after it is of a closed
// epoch). At one epoch a second that is 136 years.
const LastEpoch = 1<<32 - 1

// Epoch limits.
const (
	MinEpochs = 3
	MaxEpochs = HeaderSize / 8
)

// MaxRun bounds the counters of one report.
const MaxRun = 512

// Spec is the geometry of one Sketch-Merge store.
type Spec struct {
	sketch.Geometry
	Epochs int // copies of the sketch, 3..8
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	if err := s.Geometry.Validate(); err != nil {
		return err
	}
	if s.Epochs < MinEpochs || s.Epochs > MaxEpochs {
		return fmt.Errorf("epochs: %d out of range [%d, %d] (one accumulating, one being cleared ahead, at least one closed to read)", s.Epochs, MinEpochs, MaxEpochs)
	}
	return nil
}

// CopySize is the bytes of one copy of the sketch.
func (s Spec) CopySize() uint64 { return s.Counters() * CounterSize }

// RegionSize is the bytes of memory the store needs.
func (s Spec) RegionSize() uint64 { return HeaderSize + uint64(s.Epochs)*s.CopySize() }

// ColumnsFor returns how many columns fit in memory bytes.
func (s Spec) ColumnsFor(memory uint64) uint64 {
	if memory < HeaderSize || s.Rows < 1 || s.Epochs < 1 {
		return 0
	}
	return min((memory-HeaderSize)/(uint64(s.Epochs)*uint64(s.Rows)*CounterSize), sketch.MaxColumns)
}

// Copy is the copy epoch e lives in.
func (s Spec) Copy(e uint32) int { return int(uint64(e) % uint64(s.Epochs)) }

// TagOffset is the offset of copy c's tag word.
func (s Spec) TagOffset(c int) uint64 { return uint64(c) * 8 }

// CounterOffset is the offset of the counter of epoch e, row r, column w.
func (s Spec) CounterOffset(e uint32, r int, w uint64) uint64 {
	return HeaderSize + uint64(s.Copy(e))*s.CopySize() + (uint64(r)*s.Columns+w)*CounterSize
}

// Tag is the tag word's value for epoch e.
func Tag(e uint32) uint64 { return uint64(e) + 1 }

// Translation errors; each is a reason a report is dropped.
var (
	ErrRow      = errors.New("sketchmerge: row out of range")
	ErrColumns  = errors.New("sketchmerge: counters beyond the row's last column")
	ErrRunLen   = errors.New("sketchmerge: run of counters empty, too long or not whole 8-byte counters")
	ErrOldEpoch = errors.New("sketchmerge: the epoch is closed (a newer one has opened)")
)

// Run is one report's worth of counters: row Row, columns Column.. of epoch
// Epoch, big-endian two's-complement int64s as they travel.
type Run struct {
	Epoch    uint32
	Row      int
	Column   uint64
	Counters []byte // 8 × n bytes
}

// Check validates r against the geometry.
func (s *Spec) Check(r *Run) error {
	n := len(r.Counters) / CounterSize
	switch {
	case r.Row < 0 || r.Row >= s.Rows:
		return ErrRow
	case len(r.Counters) == 0 || len(r.Counters)%CounterSize != 0 || n > MaxRun:
		return ErrRunLen
	case r.Column >= s.Columns || uint64(n) > s.Columns-r.Column:
		return ErrColumns
	}
	return nil
}

// Add appends a FETCH_ADD to b for every non-zero counter of r (zero
// counters change nothing and cost nothing), and returns how many. Call
// Check first.
func (s *Spec) Add(b batch, store uint16, r *Run) int {
	n := 0
	off := s.CounterOffset(r.Epoch, r.Row, r.Column)
	for i := 0; i+CounterSize <= len(r.Counters); i += CounterSize {
		if d := binary.BigEndian.Uint64(r.Counters[i:]); d != 0 {
			b.FetchAdd(store, off+uint64(i), d)
			n++
		}
	}
	return n
}

// batch is the part of memop.Batch the primitive writes into.
type batch interface {
	FetchAdd(store uint16, off uint64, delta uint64)
	Write(store uint16, off uint64, data []byte)
}

// zeros backs the clears: writes of zeros alias it (it is never written).
var zeros [64 << 10]byte

// tagBytes returns the 8 little-endian bytes of e's tag from the scratch
// table (one per copy, so that a batch may carry several tag writes).
func tagBytes(dst *[MaxEpochs][8]byte, c int, e uint32) []byte {
	binary.LittleEndian.PutUint64(dst[c][:], Tag(e))
	return dst[c][:]
}

// Opener decides, for one store, when an epoch opens and what opening it
// writes. It is the translator's state for the store; it is not safe for
// concurrent use (the translator serializes opens).
type Opener struct {
	spec   *Spec
	opened uint32 // the newest epoch opened
	any    bool   // an epoch has been opened
	prep   uint32 // the epoch whose copy was cleared ahead
	hasPre bool
	tags   [MaxEpochs][8]byte
}

// NewOpener returns the epoch state of a store with spec.
func NewOpener(spec *Spec) *Opener { return &Opener{spec: spec} }

// Resume tells the opener that epoch e is open already (its copy holds e
// and e+1's copy was prepared), e.g. from a restored store's tags, so that
// a restarted translator neither clears e's counters nor e+1's.
func (o *Opener) Resume(e uint32) {
	o.opened, o.any, o.prep, o.hasPre = e, true, e+1, true
}

// Newest returns the newest epoch opened and whether there is one.
func (o *Opener) Newest() (uint32, bool) { return o.opened, o.any }

// Accept reports what a report of epoch e needs: nothing when e is the
// newest epoch (add at once), open when it is newer (call Open first),
// ErrOldEpoch when it is older (closed).
func (o *Opener) Accept(e uint32) (open bool, err error) {
	switch {
	case !o.any || e > o.opened:
		return true, nil
	case e < o.opened:
		return false, ErrOldEpoch
	}
	return false, nil
}

// Open appends to b what opening epoch e writes: a clear of e's copy unless
// it was prepared ahead, e's tag, and the clear of e+1's copy with its tag.
// The last epoch, LastEpoch, has no next one to prepare: epochs do not wrap.
// Apply b before any counter of e is added.
func (o *Opener) Open(b batch, store uint16, e uint32) {
	s := o.spec
	if !o.hasPre || o.prep != e {
		o.clear(b, store, e)
	}
	b.Write(store, s.TagOffset(s.Copy(e)), tagBytes(&o.tags, s.Copy(e), e))
	o.opened, o.any, o.hasPre = e, true, false
	if e != LastEpoch {
		o.clear(b, store, e+1)
		b.Write(store, s.TagOffset(s.Copy(e+1)), tagBytes(&o.tags, s.Copy(e+1), e+1))
		o.prep, o.hasPre = e+1, true
	}
}

// Restarted appends to b what the store must be written to hold the newest
// epoch opened again after its memory was lost or replaced (a collector that
// restarted, empty or from a checkpoint), given header, the HeaderSize bytes
// of tags the store holds now. It writes nothing and returns false when the
// store shows that epoch open already (restored from a checkpoint taken
// while it was). When the tags show the epoch prepared (cleared ahead) or no
// epoch at all (an empty store), only the tags and the next copy are
// written, so that counters added since the restart stay; otherwise (the
// copy may hold an older epoch's counters) the epoch's copy is cleared too.
// Apply b before the translator's next counters of the epoch, if it can.
func (o *Opener) Restarted(b batch, store uint16, header []byte) bool {
	if !o.any || len(header) < HeaderSize {
		return false
	}
	s := o.spec
	e := o.opened
	var tags []uint64
	for c := range s.Epochs {
		if t := binary.LittleEndian.Uint64(header[s.TagOffset(c):]); t != 0 {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	switch {
	case len(tags) >= 2 && tags[len(tags)-2] == Tag(e):
		return false // open already: the checkpoint holds it
	case len(tags) == 0 || tags[len(tags)-1] == Tag(e):
		o.hasPre, o.prep = true, e // empty, or e prepared: its copy is clean
	default:
		o.hasPre = false
	}
	o.Open(b, store, e)
	return true
}

// clear appends writes of zeros over e's copy.
func (o *Opener) clear(b batch, store uint16, e uint32) {
	s := o.spec
	off := HeaderSize + uint64(s.Copy(e))*s.CopySize()
	for left := s.CopySize(); left > 0; {
		n := min(left, uint64(len(zeros)))
		b.Write(store, off, zeros[:n])
		off += n
		left -= n
	}
}
