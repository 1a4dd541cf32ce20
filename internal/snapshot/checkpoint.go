package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/store"
)

// Run writes a checkpoint every Interval until ctx is done. A checkpoint
// that fails is logged and counted, and the next one copies everything the
// failed one should have (nothing is lost from later checkpoints). Run does
// not write a final checkpoint: the caller does, once writers have stopped.
func (d *Durable) Run(ctx context.Context) error {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := d.Checkpoint(); err != nil {
				d.logger.Error("checkpoint failed; the next one retries", "err", err)
			}
		}
	}
}

// Checkpoint writes a checkpoint now and returns its epoch. Every write
// that landed in a store before the call is in it.
func (d *Durable) Checkpoint() (Epoch, error) {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	start := time.Now()
	e, wrote, err := d.checkpoint(start)
	if err == nil && !wrote {
		d.stats.LastTime.Store(start.UnixNano()) // still every write before start
		return e, nil
	}
	if err != nil {
		d.stats.CheckpointFailures.Add(1)
		// Whatever was taken must go into the next one.
		for _, t := range d.trackers {
			t.MarkAll()
		}
		d.forceFull = true
		return Epoch{}, err
	}
	d.stats.Checkpoints.Add(1)
	if e.Full() {
		d.stats.FullCheckpoints.Add(1)
	}
	d.stats.LastTime.Store(e.Time.UnixNano())
	d.stats.LastDuration.Store(int64(time.Since(start)))
	d.stats.LastBytes.Store(uint64(e.Bytes))
	d.stats.BytesWritten.Add(uint64(e.Bytes))
	d.retain(time.Now())
	d.logger.Debug("checkpoint written", "epoch", e.Epoch, "full", e.Full(), "bytes", e.Bytes, "elapsed", time.Since(start))
	return e, nil
}

// checkpoint writes one; wrote is false when nothing changed since the
// newest checkpoint, which it then returns.
func (d *Durable) checkpoint(now time.Time) (_ Epoch, wrote bool, _ error) {
	if d.trackers == nil {
		return Epoch{}, false, fmt.Errorf("snapshot: closed")
	}
	full := d.parent == 0 || d.forceFull || d.chainLen >= d.cfg.MaxChain || d.chainB >= d.baseB
	// Append heads are read before the dirty blocks are taken: every entry
	// they count was written before, so its block is among those taken (or
	// in an earlier checkpoint).
	stores := d.cat.Stores()
	heads := make([][]uint64, len(stores))
	for i, s := range stores {
		if s.Append != nil {
			heads[i] = d.readHeads(s)
		}
	}
	dirty := make([][]uint64, len(stores))
	for i, t := range d.trackers {
		var err error
		if dirty[i], err = t.Take(nil); err != nil {
			return Epoch{}, false, err
		}
	}
	if !full && !anyDirty(dirty) {
		// Nothing was written since the newest checkpoint: it is current.
		if e, ok := d.epoch(d.parent); ok {
			return e, false, nil
		}
	}
	d.mu.Lock()
	epoch := d.next
	d.next++
	d.mu.Unlock()
	h := &Header{Epoch: epoch, Time: now, Stores: d.cat.Descriptors()}
	if full {
		h.Base = epoch
	} else {
		h.Parent = d.parent
		h.Base = d.baseEpoch()
	}
	fw, err := createFile(d.cfg.Dir, h)
	if err != nil {
		return Epoch{}, false, fmt.Errorf("snapshot: checkpoint %d: %w", epoch, err)
	}
	for i, s := range stores {
		runs := d.runs(s, dirty[i], full)
		out := extentWriter{fw: fw, store: i, skipZero: full, chunk: d.cfg.BlockSize}
		if s.Append != nil {
			err = d.copyAppend(&out, s, runs, heads[i])
		} else {
			err = d.copyRuns(&out, s, runs)
		}
		if err != nil {
			fw.abort()
			return Epoch{}, false, fmt.Errorf("snapshot: checkpoint %d: store %s: %w", epoch, s.Name, err)
		}
	}
	size, err := fw.finish()
	if err != nil {
		return Epoch{}, false, err
	}
	e := Epoch{Epoch: epoch, Parent: h.Parent, Base: h.Base, Time: now, Bytes: size, path: fw.final, stores: h.Stores}
	d.mu.Lock()
	d.epochs = append(d.epochs, e)
	d.mu.Unlock()
	d.parent, d.forceFull = epoch, false
	if full {
		d.chainLen, d.chainB, d.baseB = 0, 0, size
	} else {
		d.chainLen++
		d.chainB += size
	}
	return e, true, nil
}

func anyDirty(dirty [][]uint64) bool {
	for _, b := range dirty {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// epoch returns the kept file of epoch e.
func (d *Durable) epoch(e uint64) (Epoch, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, x := range d.epochs {
		if x.Epoch == e {
			return x, true
		}
	}
	return Epoch{}, false
}

// baseEpoch is the full checkpoint the current chain starts from.
func (d *Durable) baseEpoch() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.epochs) - 1; i >= 0; i-- {
		if d.epochs[i].Epoch == d.parent {
			return d.epochs[i].Base
		}
	}
	return d.parent
}

func (d *Durable) readHeads(s *store.Store) []uint64 {
	sp := s.Append.Spec()
	heads := make([]uint64, sp.Lists)
	for l := range sp.Lists {
		heads[l], _ = s.Append.Head(l)
	}
	return heads
}

// run is a byte range of a region to copy.
type run struct{ off, n uint64 }

// runs turns dirty blocks (or the whole region, for a full checkpoint) into
// byte ranges of at most MaxExtent bytes.
func (d *Durable) runs(s *store.Store, blocks []uint64, full bool) []run {
	size := s.Region.Size()
	bs := d.cfg.BlockSize
	var out []run
	add := func(off, end uint64) {
		for off < end {
			n := min(end-off, MaxExtent)
			out = append(out, run{off, n})
			off += n
		}
	}
	if full {
		add(0, size)
		return out
	}
	for i := 0; i < len(blocks); {
		j := i + 1
		for j < len(blocks) && blocks[j] == blocks[j-1]+1 {
			j++
		}
		add(blocks[i]*bs, min((blocks[j-1]+1)*bs, size))
		i = j
	}
	return out
}

func (d *Durable) buffer(n uint64) []byte {
	if uint64(cap(d.buf)) < n {
		d.buf = make([]byte, MaxExtent)
	}
	return d.buf[:n]
}

// copyRuns copies each run of a store into the file. The copy is made
// before the CRC is computed, so the bytes checked are the bytes written.
func (d *Durable) copyRuns(out *extentWriter, s *store.Store, runs []run) error {
	for _, r := range runs {
		b := d.buffer(r.n)
		if err := s.Region.Read(r.off, b); err != nil {
			return err
		}
		if err := out.write(r.off, b); err != nil {
			return err
		}
	}
	return nil
}

// extentWriter writes a store's extents. A full checkpoint leaves out
// chunks that are all zero (a restore starts from zeroed regions); a delta
// must keep them, since they may overwrite older bytes.
type extentWriter struct {
	fw       *fileWriter
	store    int
	skipZero bool
	chunk    uint64
}

func (w *extentWriter) write(off uint64, b []byte) error {
	if !w.skipZero {
		return w.fw.extent(w.store, off, b)
	}
	start := -1 // first byte of a run of non-zero chunks
	for at := 0; at < len(b); at += int(w.chunk) {
		end := min(at+int(w.chunk), len(b))
		if !allZero(b[at:end]) {
			if start < 0 {
				start = at
			}
			continue
		}
		if start >= 0 {
			if err := w.fw.extent(w.store, off+uint64(start), b[start:at]); err != nil {
				return err
			}
			start = -1
		}
	}
	if start >= 0 {
		return w.fw.extent(w.store, off+uint64(start), b[start:])
	}
	return nil
}

var zeros [64 << 10]byte

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// copyAppend copies the runs of an Append store, fixing each copied list
// header: its head becomes the head read before the blocks were taken
// (heads), and its low watermark excludes the entries the writer may have
// overwritten while the list was being copied.
func (d *Durable) copyAppend(out *extentWriter, s *store.Store, runs []run, heads []uint64) error {
	sp := s.Append.Spec()
	stride := sp.ListStride()
	var pending []pendingHeader // headers copied whose list goes on past the run
	finish := func(upto uint64) error {
		k := 0
		for _, p := range pending {
			if p.end > upto {
				pending[k] = p
				k++
				continue
			}
			fixHeader(p.hdr[:], sp, heads[p.list], d.headNow(s, p.list))
			if err := out.fw.extent(out.store, sp.HeadOffset(p.list), p.hdr[:]); err != nil {
				return err
			}
		}
		pending = pending[:k]
		return nil
	}
	for _, r := range runs {
		if err := finish(r.off); err != nil {
			return err
		}
		b := d.buffer(r.n)
		if err := s.Region.Read(r.off, b); err != nil {
			return err
		}
		end := r.off + r.n
		for l := (r.off + stride - 1) / stride; l*stride < end && l < uint64(sp.Lists); l++ {
			at := l*stride - r.off
			if l*stride+stride <= end {
				fixHeader(b[at:at+appendlist.HeaderSize], sp, heads[l], d.headNow(s, uint32(l)))
				continue
			}
			p := pendingHeader{list: uint32(l), end: l*stride + stride}
			copy(p.hdr[:], b[at:at+appendlist.HeaderSize])
			pending = append(pending, p)
		}
		if err := out.write(r.off, b); err != nil {
			return err
		}
	}
	return finish(^uint64(0))
}

type pendingHeader struct {
	list uint32
	end  uint64
	hdr  [appendlist.HeaderSize]byte
}

// headNow reads list's head after its entries were copied, with the same
// read-modify-write a reader uses, which orders the copies before it.
func (d *Durable) headNow(s *store.Store, list uint32) uint64 {
	h, _ := s.Region.Add64(s.Append.Spec().HeadOffset(list), 0)
	return h
}

// fixHeader sets a copied list header's head to before (the head when the
// checkpoint began) and raises its low watermark past every entry the writer
// could have overwritten by the time the head was after: entries below
// after + Window - Capacity (appendlist.Spec.Lowest).
func fixHeader(hdr []byte, sp appendlist.Spec, before, after uint64) {
	low := le64(hdr[8:])
	if lost := sp.Lowest(after, 0); after > before && lost > low {
		low = lost
	}
	low = min(low, before)
	putLE64(hdr[0:], before)
	putLE64(hdr[8:], low)
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func putLE64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }
