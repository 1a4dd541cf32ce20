package translator

import (
	"errors"
	"io"
	"net/netip"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

// errHopValueSize is returned for an extended postcard whose value is wider
// than a hop slot.
var errHopValueSize = errors.New("hop value wider than a slot")

// Worker translates datagrams for one goroutine. It owns its decoder state and
// op buffers, so Handle allocates nothing; it is not safe for concurrent use.
type Worker struct {
	t     *Translator
	dec   dta.Decoder
	dg    dta.Datagram
	r     dta.Report
	batch *memop.Batch
	reply [dta.AckLen]byte
	stats Stats
}

// NewWorker returns a worker bound to t.
func (t *Translator) NewWorker() *Worker {
	w := &Worker{
		t:     t,
		dec:   dta.Decoder{Legacy: t.cfg.LegacyHeader},
		batch: memop.NewBatch(64, 32<<10),
	}
	t.mu.Lock()
	t.workers = append(t.workers, w)
	t.mu.Unlock()
	return w
}

// Handle translates one datagram received from reporter from at now (ns). It
// returns the ACK/NACK datagram to send back to the reporter, or nil; the
// returned slice is valid until the next Handle.
func (w *Worker) Handle(b []byte, from netip.AddrPort, now int64) []byte {
	w.stats.Datagrams.Add(1)
	derr := w.dec.Decode(b, &w.dg)
	h := w.dg.Header
	// A retransmittable datagram takes part in sequence tracking as soon as
	// its 3-byte base header is readable, even if the rest is malformed:
	// otherwise the reporter would resend it (and be NACKed) forever.
	if h.Retransmit() && !w.dec.Legacy && len(b) >= dta.HeaderLen {
		v, seq := w.t.seq.check(from, h.Seq)
		switch v {
		case seqDuplicate:
			w.stats.Drops[ReasonDuplicate].Add(1)
			return w.ack(seq, false)
		case seqGap:
			w.stats.Drops[ReasonOutOfOrder].Add(1)
			return w.ack(seq, true)
		}
		if derr != nil {
			w.drop(derr, from, now)
			return w.ack(h.Seq, false)
		}
	}
	if derr != nil {
		w.drop(derr, from, now)
		return nil
	}
	for {
		err := w.dg.Next(&w.r)
		if err == io.EOF {
			break
		}
		if err == nil {
			err = w.translate(&w.r, h.Immediate(), now)
		}
		if err != nil {
			w.drop(err, from, now)
			if w.dg.Done() {
				break
			}
		}
	}
	if h.Retransmit() {
		return w.ack(h.Seq, false)
	}
	return nil
}

func (w *Worker) ack(seq uint8, nack bool) []byte {
	if nack {
		w.stats.Nacks.Add(1)
	} else {
		w.stats.Acks.Add(1)
	}
	return dta.Ack{Seq: seq, NACK: nack}.AppendTo(w.reply[:0])
}

// translate routes one report, translates it and applies its ops.
func (w *Worker) translate(r *dta.Report, imm bool, now int64) error {
	p := r.Primitive()
	idx, err := w.t.route(r, p)
	if err != nil {
		return err
	}
	d := &w.t.stores[idx]
	key := r.Key
	var kb [4]byte
	switch p {
	case dta.KeyWrite:
		if !r.Opcode.Extended() {
			kb = keywrite.CompatKey(r.Key32())
			key = kb[:]
		}
		w.batch.Reset()
		if err := d.KeyWrite.Translate(w.batch, idx, key, r.Value, int(r.Redundancy), imm); err != nil {
			return err
		}
		err = w.apply()
	case dta.KeyIncrement:
		if !r.Opcode.Extended() {
			kb = keywrite.CompatKey(r.Key32())
			key = kb[:]
		}
		w.batch.Reset()
		d.KeyIncrement.Translate(w.batch, idx, key, r.Delta)
		err = w.apply()
	case dta.Postcard:
		// Compat postcard keys are hashed as their big-endian wire bytes, which
		// r.Key already is.
		v, perr := postcard.ParseValue(r.Value)
		if perr != nil {
			return errHopValueSize
		}
		err = w.t.cache.Add(&d.Postcard, idx, key, int(r.Hop), int(r.PathLen), v, imm, now, w.batch, w.t.sink)
	case dta.Append:
		err = w.t.writers[idx].Add(r.List, r.Value, imm, now, w.batch, w.t.sink)
	}
	if err != nil {
		return err
	}
	w.stats.Reports[p].Add(1)
	return nil
}

func (w *Worker) apply() error {
	w.stats.Ops.Add(uint64(len(w.batch.Ops)))
	if err := w.t.sink.Apply(w.batch.Ops); err != nil {
		return errSinkWrap{err}
	}
	return nil
}

// errSinkWrap marks a sink error without allocating.
type errSinkWrap struct{ err error }

func (e errSinkWrap) Error() string        { return "sink: " + e.err.Error() }
func (e errSinkWrap) Unwrap() error        { return e.err }
func (e errSinkWrap) Is(target error) bool { return target == ErrSink }

// drop counts a dropped report and logs it through the rate limiter.
func (w *Worker) drop(err error, from netip.AddrPort, now int64) {
	r := classify(err)
	if errors.Is(err, errHopValueSize) {
		r = ReasonValueSize
	}
	w.stats.Drops[r].Add(1)
	if ok, n := w.t.limiter.Allow(int(r), now); ok {
		w.t.logger.Warn("report dropped", "reason", r.String(), "from", from.String(), "err", err.Error(), "suppressed", n)
	}
}
