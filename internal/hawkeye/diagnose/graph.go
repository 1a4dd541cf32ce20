package diagnose

import (
	"fmt"
	"math"
	"sort"

	"github.com/dta-go/dta/internal/hawkeye/record"
)

// Port names an egress port of a switch.
type Port struct {
	Switch uint16
	Port   uint8
}

// String returns "s5.p2".
func (p Port) String() string { return fmt.Sprintf("s%d.p%d", p.Switch, p.Port) }

// PortNode is a port of the provenance graph with its counters summed over
// the epochs collected.
type PortNode struct {
	Port
	PeerKind uint8
	Peer     uint16
	PeerPort uint8
	Pkts     uint64
	Paused   uint64
	QDepth   uint64 // sum over packets, packets
	PauseRx  uint64
	PauseTx  uint64
	// Stub marks a port of a switch that was not polled, known only
	// because a polled switch paused it (PAUSE frames sent).
	Stub bool
	// Out are the port-level edges p_i → p_j: p_i waits for p_j.
	Out []Edge
	// All are the port-level edges before Options.MinEdge dropped the
	// light ones, heaviest first: a deadlock's loop port may wait, lightly,
	// for a port out of the loop that holds the initial congestion.
	All []Edge
	// Flows are the port→flow edges: each flow's contribution to the
	// port's queue (positive: a contributor, negative: a victim).
	Flows map[record.Tuple]float64
}

// AvgQueue returns the average queue depth packets found, packets.
func (n *PortNode) AvgQueue() float64 {
	if n.Pkts == 0 {
		return 0
	}
	return float64(n.QDepth) / float64(n.Pkts)
}

// Edge is a weighted port-level edge.
type Edge struct {
	To     Port
	Weight float64
}

// FlowNode is a flow of the provenance graph.
type FlowNode struct {
	Tuple record.Tuple
	// PausedAt are the flow→port edges: paused packets per port.
	PausedAt map[Port]uint64
	// Pkts are the flow's packets per port.
	Pkts map[Port]uint64
}

// Graph is the heterogeneous wait-for provenance graph of one poll.
type Graph struct {
	Ports  map[Port]*PortNode
	Flows  map[record.Tuple]*FlowNode
	Victim record.Tuple
	// Switches are the switches whose telemetry the graph holds.
	Switches map[uint16]bool
	// VictimSwitches are those the polling reached along the victim's
	// path (the manifests' roles).
	VictimSwitches map[uint16]bool
}

// Options tune Build.
type Options struct {
	// MinQueue is the average queue depth, packets, from which a port that
	// is not paused counts as congested: a port-level edge p_i → p_j needs
	// p_j congested (default 8).
	MinQueue float64
	// MinEdge drops port-level edges lighter than this fraction of the
	// heaviest edge out of the same port (default 0.05).
	MinEdge float64
	// NoFlows and NoPorts ignore flow records, and port records and
	// meters: the flow-only and port-only telemetry baselines.
	NoFlows, NoPorts bool
}

func (o Options) withDefaults() Options {
	if o.MinQueue == 0 {
		o.MinQueue = 8
	}
	if o.MinEdge == 0 {
		o.MinEdge = 0.05
	}
	return o
}

// Build constructs the provenance graph of t (Algorithm 1).
func Build(t *Telemetry, opt Options) *Graph {
	opt = opt.withDefaults()
	g := &Graph{Ports: map[Port]*PortNode{}, Flows: map[record.Tuple]*FlowNode{}, Victim: t.Victim, Switches: map[uint16]bool{},
		VictimSwitches: map[uint16]bool{}}
	for _, m := range t.Manifests {
		g.Switches[m.Switch] = true
		if m.Role&record.RoleVictimPath != 0 {
			g.VictimSwitches[m.Switch] = true
		}
	}
	node := func(p Port) *PortNode {
		n := g.Ports[p]
		if n == nil {
			n = &PortNode{Port: p, Flows: map[record.Tuple]float64{}}
			g.Ports[p] = n
		}
		return n
	}
	// Port vertices (port records), summed over epochs.
	type se struct {
		sw    uint16
		epoch uint16
	}
	epochPorts := map[se][]record.Port{}
	if !opt.NoPorts {
		for _, r := range t.Ports {
			n := node(Port{r.Switch, r.Port})
			n.PeerKind, n.Peer, n.PeerPort = r.PeerKind, r.Peer, r.PeerPort
			n.Pkts += uint64(r.Pkts)
			n.Paused += uint64(r.Paused)
			n.QDepth += uint64(r.QDepth)
			n.PauseRx += uint64(r.PauseRx)
			n.PauseTx += uint64(r.PauseTx)
			epochPorts[se{r.Switch, r.Epoch}] = append(epochPorts[se{r.Switch, r.Epoch}], r)
		}
	}
	// Port-level edges: p_i paused → p_j of p_i's peer switch, weighted by
	// p_i's paused packets, the share of p_i's traffic the meter sends to
	// p_j, and p_j's queue.
	if !opt.NoPorts {
		type pair struct{ from, to Port }
		w := map[pair]float64{}
		for _, r := range t.Ports {
			if r.Paused == 0 || r.PeerKind != record.PeerSwitch {
				continue
			}
			var sum float64
			var meters []struct {
				to    Port
				bytes float64
			}
			for _, q := range epochPorts[se{r.Peer, r.Epoch}] {
				if q.Port == r.PeerPort {
					continue
				}
				b := float64(t.Meter(r.Peer, r.Epoch, r.PeerPort, q.Port))
				if b > 0 {
					sum += b
					meters = append(meters, struct {
						to    Port
						bytes float64
					}{Port{q.Switch, q.Port}, b})
				}
			}
			for _, m := range meters {
				to := g.Ports[m.to]
				if to.Paused == 0 && to.AvgQueue() < opt.MinQueue {
					continue
				}
				w[pair{Port{r.Switch, r.Port}, m.to}] += float64(r.Paused) * m.bytes / sum * to.AvgQueue()
			}
		}
		// A switch that paused its upstream neighbour: the upstream port
		// waits for this switch's congested ports its ingress feeds,
		// weighted by the PAUSE frames sent — when the upstream switch
		// was not polled, or its port shows no paused packet (yet).
		for _, r := range t.Ports {
			if r.PauseTx == 0 || r.PeerKind != record.PeerSwitch {
				continue
			}
			up := Port{r.Peer, r.PeerPort}
			if n := g.Ports[up]; n != nil && n.Paused > 0 {
				continue
			}
			var sum float64
			type mt struct {
				to    Port
				bytes float64
			}
			var ms []mt
			for _, q := range epochPorts[se{r.Switch, r.Epoch}] {
				if q.Port == r.Port {
					continue
				}
				if b := float64(t.Meter(r.Switch, r.Epoch, r.Port, q.Port)); b > 0 {
					sum += b
					ms = append(ms, mt{Port{q.Switch, q.Port}, b})
				}
			}
			for _, m := range ms {
				to := g.Ports[m.to]
				if to.Paused == 0 && to.AvgQueue() < opt.MinQueue {
					continue
				}
				if g.Ports[up] == nil {
					g.Ports[up] = &PortNode{Port: up, PeerKind: record.PeerSwitch, Peer: r.Switch, PeerPort: r.Port, Stub: true, Flows: map[record.Tuple]float64{}}
				}
				w[pair{up, m.to}] += float64(r.PauseTx) * m.bytes / sum * to.AvgQueue()
			}
		}
		for pr, x := range w {
			if x > 0 {
				n := g.Ports[pr.from]
				n.Out = append(n.Out, Edge{pr.to, x})
			}
		}
		for _, n := range g.Ports {
			var top float64
			for _, e := range n.Out {
				top = math.Max(top, e.Weight)
			}
			sort.Slice(n.Out, func(i, j int) bool { return n.Out[i].Weight > n.Out[j].Weight })
			n.All = append([]Edge(nil), n.Out...)
			kept := n.Out[:0]
			for _, e := range n.Out {
				if e.Weight >= opt.MinEdge*top {
					kept = append(kept, e)
				}
			}
			n.Out = kept
		}
	}
	if opt.NoFlows {
		return g
	}
	// Flow vertices and flow→port edges.
	type fe struct {
		port  Port
		epoch uint16
	}
	perEpoch := map[fe][]record.Flow{}
	for _, r := range t.Flows {
		p := Port{r.Switch, r.Port}
		f := g.Flows[r.Tuple]
		if f == nil {
			f = &FlowNode{Tuple: r.Tuple, PausedAt: map[Port]uint64{}, Pkts: map[Port]uint64{}}
			g.Flows[r.Tuple] = f
		}
		f.Pkts[p] += uint64(r.Pkts)
		if r.Paused > 0 {
			f.PausedAt[p] += uint64(r.Paused)
		}
		node(p)
		perEpoch[fe{p, r.Epoch}] = append(perEpoch[fe{p, r.Epoch}], r)
	}
	// Port→flow edges: contributions from the replayed queue of each epoch
	// in which the port was congested (Algorithm 1 per epoch; see congested).
	for k, flows := range perEpoch {
		n := g.Ports[k.port]
		if !congested(flows, opt.MinQueue) {
			continue
		}
		for tup, c := range contribution(flows) {
			n.Flows[tup] += c
		}
	}
	return g
}

// contribution replays one epoch's queue at one port from the per-flow
// counts (ReplayQueue: each flow's queued packets — unpaused, having found a
// non-empty queue — spread evenly over the epoch, merged by time) and
// returns each flow's contribution (Contribution: how much the others wait
// for it minus how much it waits for the others). A packet is taken to wait
// for the packets enqueued just before it, as many as the flow's average
// queue depth when queued. Packets that found an empty queue neither wait
// nor make anyone wait; leaving them out keeps a long flow's packets from
// before the congestion from diluting its depth.
func contribution(flows []record.Flow) map[record.Tuple]float64 {
	type fl struct {
		n     int
		depth int
	}
	var fs []fl
	var tuples []record.Tuple
	total := 0
	for _, r := range flows {
		n := int(r.Queued)
		if n <= 0 {
			continue
		}
		fs = append(fs, fl{n, int(math.Round(float64(r.QDepth) / float64(n)))})
		tuples = append(tuples, r.Tuple)
		total += n
	}
	out := map[record.Tuple]float64{}
	if len(fs) < 2 {
		for _, t := range tuples {
			out[t] = 0
		}
		return out
	}
	// Merge: packet j of flow i at time (j+0.5)/n_i (ties by flow order).
	type ev struct {
		at   float64
		flow int
	}
	seq := make([]ev, 0, total)
	for i, f := range fs {
		for j := range f.n {
			seq = append(seq, ev{(float64(j) + 0.5) / float64(f.n), i})
		}
	}
	sort.Slice(seq, func(a, b int) bool {
		if seq[a].at != seq[b].at {
			return seq[a].at < seq[b].at
		}
		return seq[a].flow < seq[b].flow
	})
	// prefix[i][k] = packets of flow i among the first k of seq.
	F := len(fs)
	prefix := make([][]int32, F)
	for i := range prefix {
		prefix[i] = make([]int32, len(seq)+1)
	}
	for k, e := range seq {
		for i := range F {
			prefix[i][k+1] = prefix[i][k]
		}
		prefix[e.flow][k+1]++
	}
	W := make([][]float64, F)
	for i := range W {
		W[i] = make([]float64, F)
	}
	for k, e := range seq {
		d := fs[e.flow].depth
		if d <= 0 {
			continue
		}
		lo := max(0, k-d)
		for j := range F {
			W[e.flow][j] += float64(prefix[j][k] - prefix[j][lo])
		}
	}
	for i := range F {
		var waitsOthers, othersWait float64
		for j := range F {
			if j == i {
				continue
			}
			waitsOthers += W[i][j] / float64(fs[i].n)
			othersWait += W[j][i] / float64(fs[j].n)
		}
		out[tuples[i]] = othersWait - waitsOthers
	}
	return out
}

// congested reports whether a port's queue, as its flows' packets found it
// over one epoch, averaged at least minQueue packets: an epoch the queue
// stayed below that level shows no flow contention, and its flows neither
// wait for nor delay one another (they add no port→flow weight).
func congested(flows []record.Flow, minQueue float64) bool {
	var depth, pkts float64
	for _, r := range flows {
		depth += float64(r.QDepth)
		pkts += float64(r.Pkts)
	}
	return pkts > 0 && depth/pkts >= minQueue
}
