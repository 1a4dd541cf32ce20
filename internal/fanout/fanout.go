// Package fanout spreads one translator front end over several collectors
// (the DTA paper's §7 "multiple collectors", DESIGN §8): every collector has
// its own translator (its own RoCEv2 uplink, postcard cache, Append heads
// and Sketch-Merge epochs), and the Router hands each report to the
// translators of the collectors that own it, as the shared partition
// function (package partition) names them: keys of Key-Write, Key-Increment
// and Postcarding reports by their key bytes, Append entries by list id,
// Sketch-Merge runs by (row, column). With Replicas R > 1 the next R−1
// collectors in the key's preference order get it too, so that a query can
// fall back on them. A collector that is down makes its translator's sink
// fail (counted per collector, reconnected by its requester) while the
// others go on.
//
// The Router is an ingest.Backend: the UDP front end drives it exactly as
// it drives a single translator. Retransmittable datagrams are checked once,
// by the Router's own sequencer, before any translator sees their reports.
// The package decides where a report goes and nothing else: it never
// translates, and it knows no sockets.
package fanout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync/atomic"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/wire/dta"
)

// Member is one collector: its name in the partition map and the
// translator writing to it.
type Member struct {
	Name string
	Tr   *translator.Translator
}

// Config configures a Router.
type Config struct {
	// Replicas is how many collectors hold each key (1: the owner only).
	Replicas int
	// LegacyHeader decodes the prototype's 2-byte base header.
	LegacyHeader bool
	// MaxReporters bounds the reporters tracked for retransmission.
	MaxReporters int
}

// Stats counts what the Router did.
type Stats struct {
	Datagrams atomic.Uint64
	Reports   atomic.Uint64 // reports routed (each once, however many copies)
	Copies    atomic.Uint64 // reports handed to translators (Replicas per report)
	Malformed atomic.Uint64 // datagrams or reports that did not decode (also in Drops, by reason)
	// Drops counts, by reason, the datagrams and reports the front end
	// refused itself, before any collector's translator saw them: those
	// that did not decode, those the sequence rules refused (duplicate,
	// out_of_order), and those the ingest refused (not_allowed,
	// rate_limited). What a collector's translator refuses (an unknown
	// store, a value of the wrong size, its sink) it counts itself.
	Drops [translator.NumReasons]atomic.Uint64
	// Acks and Nacks count the ACKs and NACKs the front end answered
	// retransmittable datagrams with (the sequence is the front end's, not
	// any collector's translator's).
	Acks, Nacks atomic.Uint64
}

// Router routes reports to the translators of their collectors.
type Router struct {
	cfg     Config
	copies  []atomic.Uint64 // per member
	members []Member
	pm      *partition.Map
	seq     *translator.Sequencer
	wake    chan struct{}
	stats   Stats
	// newestEpoch is the newest Sketch-Merge epoch seen per store id, +1
	// (0: none), so that a new epoch is opened on every collector.
	newestEpoch [1 << 16]atomic.Uint64
}

// New builds a router over members (at least one; names distinct).
func New(cfg Config, members []Member) (*Router, error) {
	if len(members) == 0 {
		return nil, errors.New("fanout: no collectors")
	}
	names := make([]string, len(members))
	for i, m := range members {
		if m.Tr == nil {
			return nil, fmt.Errorf("fanout: collector %s has no translator", m.Name)
		}
		names[i] = m.Name
	}
	pm, err := partition.New(names)
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	if cfg.Replicas < 1 || cfg.Replicas > len(members) {
		return nil, fmt.Errorf("fanout: replicas %d out of range [1, %d collectors]", cfg.Replicas, len(members))
	}
	if cfg.MaxReporters <= 0 {
		cfg.MaxReporters = 65536
	}
	r := &Router{cfg: cfg, members: members, copies: make([]atomic.Uint64, len(members)), pm: pm, seq: translator.NewSequencer(cfg.MaxReporters), wake: make(chan struct{}, 1)}
	for _, m := range members {
		go func(c <-chan struct{}) {
			for range c {
				select {
				case r.wake <- struct{}{}:
				default:
				}
			}
		}(m.Tr.Wake())
	}
	return r, nil
}

// Map returns the partition map (members in the order given to New).
func (r *Router) Map() *partition.Map { return r.pm }

// Members returns the collectors.
func (r *Router) Members() []Member { return r.members }

// CopiesTo counts the reports handed to member i's translator.
func (r *Router) CopiesTo(i int) uint64 { return r.copies[i].Load() }

// Replicas returns how many collectors hold each key.
func (r *Router) Replicas() int { return r.cfg.Replicas }

// Stats returns the router's counters.
func (r *Router) Stats() *Stats { return &r.stats }

// Tick ticks every translator; idle only when all are.
func (r *Router) Tick(now int64) bool {
	idle := true
	for _, m := range r.members {
		if !m.Tr.Tick(now) {
			idle = false
		}
	}
	return idle
}

// Wake signals when any translator holds something again.
func (r *Router) Wake() <-chan struct{} { return r.wake }

// FlushAll writes out what every translator holds.
func (r *Router) FlushAll() {
	for _, m := range r.members {
		m.Tr.FlushAll()
	}
}

// NewWorker returns a worker for one reader: a translator worker per
// collector.
func (r *Router) NewWorker() ingest.Worker {
	w := &Worker{r: r, ws: make([]*translator.Worker, len(r.members)), used: make([]bool, len(r.members)), touched: make([]bool, len(r.members)),
		dec: dta.Decoder{Legacy: r.cfg.LegacyHeader}, owners: make([]int, 0, len(r.members))}
	for i, m := range r.members {
		w.ws[i] = m.Tr.NewWorker()
	}
	return w
}

// Worker routes the reports of one reader's datagrams.
type Worker struct {
	r    *Router
	ws   []*translator.Worker
	used []bool // ws[i] began a datagram
	// batched: the ingest ends every batch with EndBatch (DeferToBatch);
	// touched: ws[i] got reports since the last EndBatch.
	batched bool
	touched []bool
	dec     dta.Decoder
	dg      dta.Datagram
	rep     dta.Report
	owners  []int
	key     [8]byte
	reply   [dta.AckLen]byte
	from    netip.AddrPort
	now     int64
}

// Handle routes one datagram's reports and returns the ACK/NACK to send,
// or nil.
func (w *Worker) Handle(b []byte, from netip.AddrPort, now int64) []byte {
	w.r.stats.Datagrams.Add(1)
	derr := w.dec.Decode(b, &w.dg)
	h := w.dg.Header
	var reply []byte
	if h.Retransmit() && !w.dec.Legacy && len(b) >= dta.HeaderLen {
		apply, reason, ack := w.r.seq.Check(w.reply[:0], from, h.Seq)
		reply = ack
		var a dta.Ack
		if a.Decode(ack) == nil {
			if a.NACK {
				w.r.stats.Nacks.Add(1)
			} else {
				w.r.stats.Acks.Add(1)
			}
		}
		if !apply {
			w.refuse(reason, nil, from, now)
			return reply
		}
	}
	if derr != nil {
		w.r.stats.Malformed.Add(1)
		w.refuse(translator.Classify(derr), derr, from, now)
		return reply
	}
	w.BeginAdapted(from, now)
	for {
		err := w.dg.Next(&w.rep)
		if err == io.EOF {
			break
		}
		if err != nil {
			w.r.stats.Malformed.Add(1)
			w.refuse(translator.Classify(err), err, from, now)
			if w.dg.Done() {
				break
			}
			continue
		}
		w.AddReport(&w.rep)
	}
	// Each collector's translator counts the DTA datagrams that gave it a
	// report (INT packets, which come through BeginAdapted too, are
	// counted by the INT mapper).
	for i, u := range w.used {
		if u {
			w.ws[i].CountDatagram()
		}
	}
	w.EndAdapted()
	if w.batched && h.Retransmit() {
		w.EndBatch() // applied before its ACK leaves
	}
	return reply
}

// DeferToBatch makes every collector's translator worker hold a batch's
// stateless ops and counts until EndBatch (translator.Worker.DeferToBatch).
func (w *Worker) DeferToBatch() {
	w.batched = true
	for _, x := range w.ws {
		x.DeferToBatch()
	}
}

// EndBatch ends the batch in every translator worker that got reports in
// it: their ops are applied (sent) and their counts published.
func (w *Worker) EndBatch() {
	for i, t := range w.touched {
		if t {
			w.ws[i].EndBatch()
			w.touched[i] = false
		}
	}
}

// Refuse counts a datagram the ingest refused (source not allowed, rate
// limited).
func (w *Worker) Refuse(reason translator.Reason, from netip.AddrPort, now int64) {
	w.r.stats.Datagrams.Add(1)
	w.refuse(reason, nil, from, now)
}

// refuse counts a datagram or report the front end refused for reason (err,
// if not nil, says why) and logs it as a translator logs its drops.
func (w *Worker) refuse(reason translator.Reason, err error, from netip.AddrPort, now int64) {
	if reason >= translator.NumReasons {
		reason = translator.ReasonNotAllowed
	}
	w.r.stats.Drops[reason].Add(1)
	w.ws[0].LogRefusal(reason, err, from, now)
}

// BeginAdapted starts a datagram whose reports come one by one (INT input).
func (w *Worker) BeginAdapted(from netip.AddrPort, now int64) {
	w.from, w.now = from, now
	clear(w.used)
}

// AddReport hands rep to the translators of its collectors.
func (w *Worker) AddReport(rep *dta.Report) {
	w.r.stats.Reports.Add(1)
	// A report its translators will refuse (sketch_run, an unknown store)
	// opens nothing: the check changes nothing, and the report is then
	// routed and refused, counted by reason, as any other.
	if rep.Opcode == dta.OpSketchExt && w.r.members[0].Tr.CheckSketchRun(rep) == nil && w.r.claimEpoch(rep.Store, rep.Epoch) {
		// Counters of older epochs that this worker's translators hold go
		// out first: opening the epoch clears a copy that one of them may
		// be bound for (the copy of epoch e+1 is cleared ahead, which is
		// e−2's with three copies), and a counter applied after the clear
		// would count in the wrong epoch.
		w.applyHeld()
		w.r.openEverywhere(rep.Store, rep.Epoch)
	}
	w.owners = w.r.route(w.owners[:0], rep, &w.key)
	for _, o := range w.owners {
		if !w.used[o] {
			w.used[o], w.touched[o] = true, true
			w.ws[o].BeginAdapted(w.from, w.now)
		}
		w.ws[o].AddReport(rep)
		w.r.copies[o].Add(1)
	}
	w.r.stats.Copies.Add(uint64(len(w.owners)))
}

// EndAdapted applies what every translator collected.
func (w *Worker) EndAdapted() {
	for i, u := range w.used {
		if u {
			w.ws[i].EndAdapted()
		}
	}
}

// claimEpoch reports whether Sketch-Merge epoch e of store is newer than
// any the router has seen, and makes it the newest if so: the caller then
// opens it everywhere (openEverywhere). Of several workers seeing a new
// epoch at once, one claims it.
func (r *Router) claimEpoch(store uint16, e uint32) bool {
	n := &r.newestEpoch[store]
	for {
		old := n.Load()
		if old != 0 && uint64(e)+1 <= old {
			return false
		}
		if n.CompareAndSwap(old, uint64(e)+1) {
			return true
		}
	}
}

// openEverywhere opens Sketch-Merge epoch e of store on every collector
// (claimEpoch decides when), so that each collector's copy of the epoch
// exists (and the previous one closes) even where no run of it lands; the
// collectors' sketches then add up epoch by epoch.
func (r *Router) openEverywhere(store uint16, e uint32) {
	for _, m := range r.members {
		_ = m.Tr.OpenSketchEpoch(store, e) // a failure is the report's own drop at that collector
	}
}

// applyHeld applies what the translator workers that got reports of the
// current datagram or batch hold (translator.Worker.EndBatch, which also
// publishes their counts early; they go on taking reports).
func (w *Worker) applyHeld() {
	for i := range w.ws {
		if w.used[i] || w.touched[i] {
			w.ws[i].EndBatch()
		}
	}
}

// route appends the collectors of rep to dst.
func (r *Router) route(dst []int, rep *dta.Report, buf *[8]byte) []int {
	switch rep.Primitive() {
	case dta.Append:
		return r.pm.ListOwners(dst, rep.List, r.cfg.Replicas)
	case dta.SketchMerge:
		// Counters, not keys: spread runs by where they start; the
		// collectors' sketches add up to the whole (query: merge).
		buf[0] = rep.Row
		binary.BigEndian.PutUint32(buf[1:5], rep.Column)
		binary.BigEndian.PutUint16(buf[5:7], rep.Store)
		return r.pm.Owners(dst, buf[:7], r.cfg.Replicas)
	}
	return r.pm.Owners(dst, rep.Key, r.cfg.Replicas)
}

// Owners appends to dst the collectors (indices into Members) that hold a
// report's key, owner first: the function queries use to find it.
func (r *Router) Owners(dst []int, rep *dta.Report) []int {
	var buf [8]byte
	return r.route(dst, rep, &buf)
}
