package intmap

import (
	"encoding/binary"
	"io"

	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/intreport"
)

// Sink takes the DTA reports a Worker derives (translator.Worker's
// AddReport); a report is not retained after the call.
type Sink interface {
	AddReport(r *dta.Report)
}

// Worker maps the packets of one reader. It owns its buffers and allocates
// nothing per packet; it is not safe for concurrent use.
type Worker struct {
	m     *Mapper
	dec   intreport.Decoder
	r     intreport.Report
	in    intreport.Inner
	hop   intreport.Metadata
	nodes [intreport.MaxHops + 1]uint32
	flow  dta.FiveTuple
	fkey  [64]byte // the flow's 5-tuple key
	key   [64]byte // a counter key
	val   [dta.MaxValueLen]byte
	out   dta.Report
	stats workerStats
}

type workerStats struct {
	reports, paths, postcards, counters, drops, noFlow, truncated, outOfTTL uint64
}

// NewWorker returns a worker of m.
func (m *Mapper) NewWorker() *Worker { return &Worker{m: m} }

// Map derives the DTA reports of one telemetry report packet (a UDP
// payload) that arrived at now (Unix ns) and hands them to sink. A
// malformed packet or report is counted by reason and skipped; the other
// reports of the packet are still mapped. It returns the first error, for
// logging.
func (w *Worker) Map(pkt []byte, now int64, sink Sink) error {
	st := &w.m.stats
	st.Packets.Add(1)
	defer w.publish()
	if err := w.dec.Reset(pkt); err != nil {
		st.Malformed[intreport.ReasonOf(err)].Add(1)
		return err
	}
	var first error
	for {
		err := w.dec.Next(&w.r)
		if err == io.EOF {
			return first
		}
		if err == nil {
			err = intreport.ParseInner(w.r.Inner, w.r.Contents, &w.m.cfg.Detect, &w.in)
		}
		if err != nil {
			st.Malformed[intreport.ReasonOf(err)].Add(1)
			if first == nil {
				first = err
			}
			continue
		}
		w.report(now, sink)
	}
}

func (w *Worker) publish() {
	st, s := &w.m.stats, &w.stats
	st.Reports.Add(s.reports)
	st.Paths.Add(s.paths)
	st.Postcards.Add(s.postcards)
	st.Counters.Add(s.counters)
	st.Drops.Add(s.drops)
	st.NoFlow.Add(s.noFlow)
	st.Truncated.Add(s.truncated)
	st.OutOfTTL.Add(s.outOfTTL)
	*s = workerStats{}
}

// report maps the decoded report w.r with its inner packet w.in.
func (w *Worker) report(now int64, sink Sink) {
	r, in, m := &w.r, &w.in, w.m
	w.stats.reports++
	node := w.dec.Group.NodeID
	own := r.Type == intreport.RepINT // the reporting node added its own metadata
	stack := in.HasINT && !in.INT.MX
	var fkey []byte
	if in.HasFlow {
		w.flow = dta.FiveTuple{Src: in.Flow.Src, Dst: in.Flow.Dst, SrcPort: in.Flow.SrcPort, DstPort: in.Flow.DstPort, Proto: in.Flow.Proto}
		fkey = w.flow.AppendTo(w.fkey[:0])
	} else {
		w.stats.noFlow++
	}

	// Counters: every hop of the stack, then the reporting node's own
	// metadata; the path's node ids on the way.
	path := w.nodes[:0]
	var flowLatency uint64
	sampled := false
	if stack {
		for i := in.Hops - 1; i >= 0; i-- { // the first hop is the deepest in the stack
			in.Hop(i, &w.hop)
			if w.hop.Has(intreport.BitNodeID) {
				path = append(path, w.hop.NodeID)
			}
			if w.hop.Has(intreport.BitNodeID) {
				flowLatency, sampled = w.sample(&w.hop, w.hop.NodeID, flowLatency, sampled, sink)
			}
		}
	}
	if own {
		// A sink may push its own hop onto the stack as well as report its
		// metadata in the header: then it is on the path, and counted,
		// once.
		onTop := stack && len(path) > 0 && path[len(path)-1] == node
		if stack && len(path) > 0 && !onTop {
			path = append(path, node)
		}
		if !onTop {
			flowLatency, sampled = w.sample(&r.Metadata, node, flowLatency, sampled, sink)
		}
	}
	if fkey != nil && sampled && m.counter.ok {
		w.count(FlowKey(w.key[:0], KindFlowLatency, w.flow), flowLatency, sink)
		w.count(FlowKey(w.key[:0], KindFlowCount, w.flow), 1, sink)
	}

	// The path, keyed by the flow. An intermediate report (I, from a
	// transit node) holds the path so far, not the flow's: it does not
	// replace the path a sink reported.
	if fkey != nil && len(path) > 0 && m.path.ok && !r.Intermediate {
		size := m.path.desc.KeyWrite.ValueSize
		if len(path)*4 > size {
			path = path[:size/4]
			w.stats.truncated++
		}
		v := w.val[:size]
		clear(v)
		for i, id := range path {
			binary.BigEndian.PutUint32(v[4*i:], id)
		}
		w.out = dta.Report{Opcode: dta.OpKeyWriteExt, Store: m.path.id, Redundancy: uint8(m.path.desc.KeyWrite.MaxRedundancy), Key: fkey, Value: v}
		sink.AddReport(&w.out)
		w.stats.paths++
	}

	// A postcard: a node's own report of a packet that carries no stack
	// (INT-XD, INT-MX) and was not dropped, at the hop its TTL gives.
	dropped := r.Dropped || own && r.Metadata.Has(intreport.BitDrop)
	if fkey != nil && own && !stack && !dropped && m.postcard.ok {
		hop := w.hopOf(in.TTL)
		pc := &m.postcard.desc.Postcard
		if hop < 1 || hop > pc.Hops || node < pc.MinValue || node > pc.MaxValue {
			w.stats.outOfTTL++
		} else {
			v := w.val[:4]
			binary.BigEndian.PutUint32(v, node)
			w.out = dta.Report{Opcode: dta.OpPostcardExt, Store: m.postcard.id, Key: fkey, Hop: uint8(hop), Value: v}
			sink.AddReport(&w.out)
			w.stats.postcards++
		}
	}

	// A drop.
	if m.dropped.ok && dropped {
		e := DropEntry{Node: node, Arrival: uint32(now / 1e9)}
		if own && r.Metadata.Has(intreport.BitDrop) {
			e.Queue, e.Reason = r.Metadata.DropQueueID, r.Metadata.DropReason
		} else if own && r.Metadata.Has(intreport.BitQueue) {
			e.Queue = r.Metadata.QueueID
		}
		for i, f := range []bool{r.Dropped, r.Congested, r.Tracked, r.Intermediate} {
			if f {
				e.Flags |= 0x80 >> i
			}
		}
		if in.HasFlow {
			e.Flow = w.flow
		}
		lists := m.dropped.desc.Append.Lists
		w.out = dta.Report{Opcode: dta.OpAppendExt, Store: m.dropped.id, List: node % lists, Value: e.AppendTo(w.val[:0])}
		sink.AddReport(&w.out)
		w.stats.drops++
	}
}

// sample counts one node's hop latency and queue occupancy per (node,
// queue), and adds the latency to the flow's sum.
func (w *Worker) sample(md *intreport.Metadata, node uint32, flowLatency uint64, sampled bool, sink Sink) (uint64, bool) {
	if !w.m.counter.ok {
		return flowLatency, sampled
	}
	lat := md.Has(intreport.BitHopLatency) && md.HopLatency != intreport.Invalid
	occ := md.Has(intreport.BitQueue) && md.QueueOccupancy != intreport.Invalid&0xFFFFFF
	if !lat && !occ {
		return flowLatency, sampled
	}
	q := md.QueueID
	if lat {
		w.countQueue(KindQueueLatency, node, q, uint64(md.HopLatency), sink)
		flowLatency += uint64(md.HopLatency)
		sampled = true
	}
	if occ {
		w.countQueue(KindQueueOccupancy, node, q, uint64(md.QueueOccupancy), sink)
	}
	w.countQueue(KindQueueCount, node, q, 1, sink)
	return flowLatency, sampled
}

func (w *Worker) countQueue(kind byte, node uint32, queue uint8, delta uint64, sink Sink) {
	k := QueueKey(kind, node, queue)
	w.count(w.key[:copy(w.key[:], k[:])], delta, sink)
}

func (w *Worker) count(key []byte, delta uint64, sink Sink) {
	c := &w.m.counter
	w.out = dta.Report{Opcode: dta.OpKeyIncrementExt, Store: c.id, Redundancy: uint8(c.desc.KeyIncrement.Redundancy), Key: key, Delta: delta}
	sink.AddReport(&w.out)
	w.stats.counters++
}

// hopOf is the hop number of a packet seen with ttl: the smallest initial
// TTL at or above it, minus ttl, plus 1 (0: none fits).
func (w *Worker) hopOf(ttl uint8) int {
	best := -1
	for _, init := range w.m.cfg.InitialTTLs {
		if init >= ttl && (best < 0 || int(init) < best) {
			best = int(init)
		}
	}
	if best < 0 {
		return 0
	}
	return best - int(ttl) + 1
}
