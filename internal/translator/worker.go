package translator

import (
	"errors"
	"io"
	"net/netip"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// errHopValueSize is returned for an extended postcard whose value, as a
// big-endian number, does not fit the 4 bytes a chunk holds per hop (its
// length may be up to 8 bytes: leading zeros are fine).
var errHopValueSize = errors.New("hop value wider than a slot")

// Worker translates datagrams for one goroutine. It owns its decoder state and
// op buffers, so Handle allocates nothing; it is not safe for concurrent use.
//
// The ops of Key-Write and Key-Increment reports (stateless translations) are
// collected over a datagram and applied in one sink call at its end (or every
// maxPendingOps), so that the sink can overlap their cache misses. Consecutive
// Append entries of a datagram for one list are handed to the list's writer
// together (one lock acquisition per run, not per entry). Postcarding applies
// its ops under the flow's lock as they come.
type Worker struct {
	t       *Translator
	dec     dta.Decoder
	dg      dta.Datagram
	r       dta.Report
	batch   *memop.Batch // stateful primitives' ops, applied at once
	pending *memop.Batch // stateless primitives' ops, applied per datagram
	reply   [dta.AckLen]byte
	stats   Stats

	// Reports translated since the counts were last published to stats
	// (once per datagram: an atomic add per report would cost more than the
	// translation of a Key-Write), and those whose ops wait in pending.
	applied   [dta.NumPrimitives]uint64
	inPending [dta.NumPrimitives]uint64
	dgFrom    netip.AddrPort // the datagram being handled: its reporter and arrival, for logs
	dgNow     int64

	// Append entries waiting to be added, one run per list (the lists the
	// batch's reports named last, at most maxRuns), so that a list's
	// entries go to the writer together even when reports of several lists
	// interleave, as a switch's per-list batch registers gather them.
	runs    [maxRuns]appendRun
	nRuns   int // runs[:nRuns] are keyed to a list (some may be empty)
	lastRun int // the run the last entry went to
	victim  int // the run the next list that finds none open replaces

	// sink is what the worker applies ops through: the translator's sink, or,
	// when that sink can defer its sends (memop.Deferrer, the RoCEv2
	// requester), an adapter that defers them until push at the end of the
	// datagram.
	sink memop.Sink
	push memop.Deferrer

	// mayHold: the datagram had postcards or Append entries, which the
	// translator may now hold until a Tick writes them.
	mayHold bool

	// batched: the caller ends every batch of datagrams with EndBatch
	// (DeferToBatch), so the stateless ops of a batch's datagrams are
	// applied together and the counts published once per batch. dgs counts
	// the datagrams handled since the last publish.
	batched bool
	dgs     uint64

	// Rules over the stores of Key-Write, Key-Increment and Append reports
	// (rules.go): counts by rule index, published with the reports';
	// ruleOps of the pending ops are rule counter ops.
	rc         []ruleCount
	rulesDirty bool
	ruleOps    int
	ruleKey    [4]byte // an Append report's key: its list id
	ruleEntry  []byte  // an Append entry of the largest size a rule writes
}

// deferring applies ops through a Deferrer's ApplyDeferred.
type deferring struct{ d memop.Deferrer }

func (s deferring) Apply(ops []memop.Op) error { return s.d.ApplyDeferred(ops) }

// appendRun is a run of Append entries for one list, waiting to be added.
// Its buffer is allocated the first time the worker uses the run.
type appendRun struct {
	store   uint16
	list    uint32
	imm     bool
	n       int
	now     int64  // arrival of the run's first entry, ns
	entries []byte // n entries back to back; capacity maxRunBytes
}

// Bounds of the work a worker holds back within a datagram.
const (
	maxPendingOps = 512     // stateless ops collected before they are applied
	maxRunBytes   = 4 << 10 // Append entries collected for one list
	maxRuns       = 16      // lists whose Append entries are collected at once
)

// NewWorker returns a worker bound to t.
func (t *Translator) NewWorker() *Worker {
	w := &Worker{
		t:       t,
		dec:     dta.Decoder{Legacy: t.cfg.LegacyHeader},
		batch:   memop.NewBatch(64, 32<<10),
		pending: memop.NewBatch(maxPendingOps+dta.MaxRedundancy, (maxPendingOps+dta.MaxRedundancy)*8),
		sink:    t.sink,
	}
	if d, ok := t.sink.(memop.Deferrer); ok {
		w.sink, w.push = deferring{d}, d
	}
	if n := t.rules.Len(); n > 0 {
		w.rc = make([]ruleCount, n)
		size := 0
		for _, r := range t.rules.Rules() {
			size = max(size, r.Action.EntrySize)
		}
		w.ruleEntry = make([]byte, size)
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
	w.dgs++
	w.dgFrom, w.dgNow = from, now
	defer w.datagramDone()
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
	if !w.batched || h.Retransmit() {
		// A datagram the reporter may resend is applied before it is
		// acknowledged; in a batch, the rest (Append runs included, so
		// that one-report datagrams' entries for one list reach the
		// writer together) waits for EndBatch.
		w.flushRuns()
		w.flushPending()
		if w.push != nil {
			w.push.Push()
		}
	}
	if w.mayHold {
		w.mayHold = false
		w.t.woken()
	}
	if h.Retransmit() {
		return w.ack(h.Seq, false)
	}
	return nil
}

// datagramDone publishes a datagram's counts unless a batch holds them.
func (w *Worker) datagramDone() {
	if !w.batched {
		w.publish()
	}
}

// DeferToBatch tells the worker that its caller ends every batch of
// datagrams with EndBatch (as the ingest does after each recvmmsg or
// AF_XDP ring batch): from then on Handle leaves the stateless ops of
// Key-Write, Key-Increment and Sketch-Merge reports pending, so that one
// sink call applies a whole batch's (the store prefetches their slots
// together, and one-report datagrams no longer pay a sink call and its
// counter updates each), and the counts are published once per batch.
// Append entries wait the same way, in a run per list (up to maxRuns lists
// at once), so that a list's entries from one-report datagrams, or from
// datagrams whose reports interleave lists, reach the writer as one run
// (whole batches written together, appendlist.Writer.AddEntries).
// Datagrams the reporter may resend are still applied before their ACK.
func (w *Worker) DeferToBatch() { w.batched = true }

// EndBatch applies the ops the batch's datagrams left pending, sends them
// if the sink defers, and publishes the batch's counts. Without
// DeferToBatch there is nothing left to do but it is harmless.
func (w *Worker) EndBatch() {
	if w.flushRuns() {
		// The runs' entries reach the writers only now: wake the ticker,
		// which may have found nothing held since the datagram woke it,
		// for the partial batches they may leave.
		w.t.woken()
	}
	w.flushPending()
	if w.push != nil {
		w.push.Push()
	}
	w.publish()
}

// BeginAdapted starts a datagram of another input format (INT telemetry
// reports, internal/intmap) whose adapter hands the DTA reports it derives to
// AddReport, then calls EndAdapted. They are routed, translated, batched and
// counted exactly as reports that came in a DTA datagram.
func (w *Worker) BeginAdapted(from netip.AddrPort, now int64) {
	w.dgFrom, w.dgNow = from, now
}

// AddReport translates one report derived by an input adapter; a report
// that cannot be translated is dropped and counted by reason. r is not
// retained.
func (w *Worker) AddReport(r *dta.Report) {
	if err := w.translate(r, false, w.dgNow); err != nil {
		w.drop(err, w.dgFrom, w.dgNow)
	}
}

// EndAdapted ends the datagram BeginAdapted started: what it collected is
// applied, and the counts published (after DeferToBatch: at EndBatch).
func (w *Worker) EndAdapted() {
	if !w.batched {
		w.flushRuns()
		w.flushPending()
		if w.push != nil {
			w.push.Push()
		}
	}
	if w.mayHold {
		w.mayHold = false
		w.t.woken()
	}
	if !w.batched {
		w.publish()
	}
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
	switch p {
	case dta.KeyWrite:
		s := &d.KeyWrite
		if err := s.TranslateKeyed(w.pending, idx, hashKey(s.Hash, r), r.Value, int(r.Redundancy), imm); err != nil {
			return err
		}
		w.queued(p)
		if rs := w.t.rules.For(idx); rs != nil {
			w.evaluate(rs, r, rule.ReportValue(r.Value), now)
		}
		return nil
	case dta.KeyIncrement:
		s := &d.KeyIncrement
		s.TranslateKeyed(w.pending, idx, hashKey(s.Hash, r), r.Delta)
		w.queued(p)
		if rs := w.t.rules.For(idx); rs != nil {
			w.evaluate(rs, r, r.Delta, now)
		}
		return nil
	case dta.Postcard:
		// Compat postcard keys are hashed as their big-endian wire bytes, which
		// r.Key already is.
		w.mayHold = true
		v, perr := postcard.ParseValue(r.Value)
		if perr != nil {
			return errHopValueSize
		}
		err = w.t.cache.Add(&d.Postcard, idx, r.Key, int(r.Hop), int(r.PathLen), v, imm, now, w.batch, w.sink)
	case dta.SketchMerge:
		if err := w.sketch(idx, r); err != nil {
			return err
		}
		w.queued(p)
		return nil
	case dta.Append:
		spec := w.t.writers[idx].Spec()
		switch {
		case r.List >= spec.Lists:
			return appendlist.ErrList
		case len(r.Value) != spec.EntrySize:
			return appendlist.ErrEntrySize
		}
		w.mayHold = true
		run := w.runFor(idx, r.List)
		if run.n > 0 && (run.imm != imm || len(run.entries)+len(r.Value) > cap(run.entries)) {
			w.flushRun(run)
		}
		if run.n == 0 {
			run.imm, run.now = imm, now
		}
		run.entries = append(run.entries, r.Value...)
		run.n++
		if rs := w.t.rules.For(idx); rs != nil {
			w.evaluate(rs, r, rule.ReportValue(r.Value), now)
		}
	}
	if err != nil {
		return err
	}
	w.applied[p]++
	return nil
}

// hashKey hashes the key of a Key-Write or Key-Increment report with alg: a
// compat key as its little-endian encoding (Key32), as the prototype does.
func hashKey(alg hashing.Algorithm, r *dta.Report) hashing.Keyed {
	if r.Opcode.Extended() {
		return alg.Key(r.Key)
	}
	return alg.Key32(r.Key32())
}

// runFor returns the run that collects the Append entries of list in store
// idx. A list without one gets the next free run or, when maxRuns are in
// use, takes one over in turn, whose entries are added to their list first.
// One list never has two runs, so its entries keep their order.
func (w *Worker) runFor(idx uint16, list uint32) *appendRun {
	if w.nRuns > 0 {
		if run := &w.runs[w.lastRun]; run.store == idx && run.list == list {
			return run
		}
		for i := range w.nRuns {
			if run := &w.runs[i]; run.store == idx && run.list == list {
				w.lastRun = i
				return run
			}
		}
	}
	i := w.nRuns
	if i < maxRuns {
		w.nRuns++
	} else {
		i, w.victim = w.victim, (w.victim+1)%maxRuns
		w.flushRun(&w.runs[i])
	}
	run := &w.runs[i]
	if run.entries == nil {
		run.entries = make([]byte, 0, maxRunBytes)
	}
	run.store, run.list, w.lastRun = idx, list, i
	return run
}

// flushRuns adds every waiting run to its list and reports whether any
// entry was waiting.
func (w *Worker) flushRuns() bool {
	held := false
	for i := range w.nRuns {
		if w.runs[i].n > 0 {
			held = true
			w.flushRun(&w.runs[i])
		}
	}
	w.nRuns, w.lastRun, w.victim = 0, 0, 0
	return held
}

// flushRunOf adds the run of list in store idx, if the worker holds one,
// to its list.
func (w *Worker) flushRunOf(idx uint16, list uint32) {
	for i := range w.nRuns {
		if run := &w.runs[i]; run.store == idx && run.list == list {
			w.flushRun(run)
			return
		}
	}
}

// flushRun adds a waiting run of Append entries to its list. A batch write
// the sink refuses drops one report (reason sink), as Writer.Add would.
func (w *Worker) flushRun(run *appendRun) {
	if run.n == 0 {
		return
	}
	refused, err := w.t.writers[run.store].AddEntries(run.list, run.entries, run.imm, run.now, w.batch, w.sink)
	run.n, run.entries = 0, run.entries[:0]
	if refused > 0 {
		w.applied[dta.Append] -= uint64(refused)
		w.stats.Drops[ReasonSink].Add(uint64(refused - 1))
		w.drop(errSinkWrap{err}, w.dgFrom, w.dgNow)
	}
}

// queued counts a stateless report whose ops wait in pending, and applies
// them when enough have gathered.
func (w *Worker) queued(p dta.Primitive) {
	w.applied[p]++
	w.inPending[p]++
	if len(w.pending.Ops) >= maxPendingOps {
		w.flushPending()
	}
}

// flushPending applies the stateless reports' ops (and rules' counter ops)
// in one sink call. If the sink refuses them, every report among them counts
// as dropped (reason sink), and every rule action as failed: a sink stops at
// the op it cannot apply, without saying which.
func (w *Worker) flushPending() {
	ops := w.pending.Ops
	if len(ops) == 0 {
		return
	}
	w.stats.Ops.Add(uint64(len(ops) - w.ruleOps))
	err := w.sink.Apply(ops)
	w.pending.Reset()
	if w.ruleOps != 0 {
		w.rulePendingDone(err != nil)
	}
	if err != nil {
		var n uint64
		for p, k := range w.inPending {
			w.applied[p] -= k
			n += k
		}
		if n > 0 {
			w.stats.Drops[ReasonSink].Add(n - 1)
			w.drop(errSinkWrap{err}, w.dgFrom, w.dgNow)
		}
	}
	w.inPending = [dta.NumPrimitives]uint64{}
}

// publish adds the reports translated (and rules evaluated) since the last
// call to the stats.
func (w *Worker) publish() {
	if w.dgs != 0 {
		w.stats.Datagrams.Add(w.dgs)
		w.dgs = 0
	}
	for p, n := range w.applied {
		if n != 0 {
			w.stats.Reports[p].Add(n)
			w.applied[p] = 0
		}
	}
	if w.rulesDirty {
		w.publishRules()
	}
}

// errSinkWrap marks a sink error without allocating.
type errSinkWrap struct{ err error }

func (e errSinkWrap) Error() string        { return "sink: " + e.err.Error() }
func (e errSinkWrap) Unwrap() error        { return e.err }
func (e errSinkWrap) Is(target error) bool { return target == ErrSink }

// drop counts a dropped report and logs it through the rate limiter.
// Refuse counts a datagram from from that the caller refused before
// handing it to Handle (ReasonNotAllowed, ReasonRateLimited: the ingest's
// source gate), and logs it at a bounded rate. No reply is sent.
func (w *Worker) Refuse(r Reason, from netip.AddrPort, now int64) {
	if r >= NumReasons {
		r = ReasonNotAllowed
	}
	w.stats.Datagrams.Add(1)
	w.stats.Drops[r].Add(1)
	w.LogRefusal(r, nil, from, now)
}

func (w *Worker) drop(err error, from netip.AddrPort, now int64) {
	r := Classify(err)
	w.stats.Drops[r].Add(1)
	w.LogRefusal(r, err, from, now)
}

// LogRefusal logs a datagram or report refused for r (err, if not nil,
// says why), as the worker logs its own drops: at most one line per reason
// and interval, with how many were suppressed. It counts nothing: a front
// end over several collectors counts what it refuses itself, in no
// collector's translator.
func (w *Worker) LogRefusal(r Reason, err error, from netip.AddrPort, now int64) {
	if r >= NumReasons {
		r = ReasonNotAllowed
	}
	if ok, n := w.t.limiter.Allow(int(r), now); ok {
		if err != nil {
			w.t.logger.Warn("report dropped", "reason", r.String(), "from", from.String(), "err", err.Error(), "suppressed", n)
		} else {
			w.t.logger.Warn("datagram refused", "reason", r.String(), "from", from.String(), "suppressed", n)
		}
	}
}

// CountDatagram counts one datagram of an adapter's input in
// Stats.Datagrams, published with the worker's other counts: a front end
// over several collectors counts, in each collector's translator, the
// datagrams that gave it at least one report.
func (w *Worker) CountDatagram() { w.dgs++ }
