package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Config configures a Sim. Zero values select the documented defaults.
type Config struct {
	Seed uint64
	// MTU is the size of a full data packet in bytes (default 1000: 80 ns
	// at 100 Gbps).
	MTU int
	// BufferBytes is each switch's shared buffer (default 16 MiB); a packet
	// that does not fit is dropped and counted.
	BufferBytes int
	// XoffBytes and XonBytes are the per-ingress PFC thresholds (defaults
	// 64 KiB and 48 KiB): above Xoff the switch pauses the ingress's
	// upstream, below Xon it resumes it.
	XoffBytes, XonBytes int
	// PauseTime is the pause time a PAUSE frame carries (default 65535
	// quanta of 512 bit times at 100 Gbps: 335.5 µs); a paused ingress
	// refreshes its PAUSE every PauseTime/2.
	PauseTime time.Duration
	// ECN marking (RED on the egress queue in bytes, at dequeue): none below KminBytes,
	// probability rising to Pmax at KmaxBytes, all above. Defaults 40 KB,
	// 160 KB, 0.2.
	KminBytes, KmaxBytes int
	Pmax                 float64
	// CNPInterval is the least time between two CNPs of one flow (default
	// 50 µs).
	CNPInterval time.Duration
	// DCQCN is the senders' congestion control (default DefaultDCQCN).
	DCQCN DCQCN
}

// DefaultConfig returns Config{} with every default spelled out.
func DefaultConfig() Config {
	return Config{
		MTU:         1000,
		BufferBytes: 16 << 20,
		XoffBytes:   64 << 10,
		XonBytes:    48 << 10,
		PauseTime:   65535 * 512 * time.Nanosecond / 100,
		KminBytes:   40_000,
		KmaxBytes:   160_000,
		Pmax:        0.2,
		CNPInterval: 50 * time.Microsecond,
		DCQCN:       DefaultDCQCN(),
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MTU == 0 {
		c.MTU = d.MTU
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = d.BufferBytes
	}
	if c.XoffBytes == 0 {
		c.XoffBytes = d.XoffBytes
	}
	if c.XonBytes == 0 {
		c.XonBytes = min(d.XonBytes, c.XoffBytes*3/4)
	}
	if c.PauseTime == 0 {
		c.PauseTime = d.PauseTime
	}
	if c.KminBytes == 0 {
		c.KminBytes = d.KminBytes
	}
	if c.KmaxBytes == 0 {
		c.KmaxBytes = d.KmaxBytes
	}
	if c.Pmax == 0 {
		c.Pmax = d.Pmax
	}
	if c.CNPInterval == 0 {
		c.CNPInterval = d.CNPInterval
	}
	if c.DCQCN == (DCQCN{}) {
		c.DCQCN = d.DCQCN
	}
	return c
}

// Validate reports every field out of range, naming it.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.MTU < 64 || c.MTU > 9000 {
		errs = append(errs, fmt.Errorf("netsim: Config.MTU = %d, want 64..9000 bytes", c.MTU))
	}
	if c.XonBytes >= c.XoffBytes {
		errs = append(errs, fmt.Errorf("netsim: Config.XonBytes = %d, want below XoffBytes = %d", c.XonBytes, c.XoffBytes))
	}
	if c.BufferBytes < 4*c.XoffBytes {
		errs = append(errs, fmt.Errorf("netsim: Config.BufferBytes = %d, want at least 4 × XoffBytes", c.BufferBytes))
	}
	if c.KmaxBytes <= c.KminBytes || c.Pmax < 0 || c.Pmax > 1 {
		errs = append(errs, fmt.Errorf("netsim: ECN Kmin %d, Kmax %d, Pmax %v: want Kmin < Kmax, 0 ≤ Pmax ≤ 1", c.KminBytes, c.KmaxBytes, c.Pmax))
	}
	if c.DCQCN.G <= 0 || c.DCQCN.G >= 1 || c.DCQCN.Timer <= 0 || c.DCQCN.F < 0 {
		errs = append(errs, fmt.Errorf("netsim: Config.DCQCN %+v out of range", c.DCQCN))
	}
	return errors.Join(errs...)
}

// Packet is a data packet in flight. Observers may read it during the call
// only; the simulator reuses it afterwards.
type Packet struct {
	Flow   *Flow
	Seq    uint32
	Bytes  int32
	SentAt time.Duration
	ECN    bool
	hop    int16
	inPort int16
}

// SwitchObserver sees a switch's data plane. Calls come from Run's
// goroutine, in simulated time order.
type SwitchObserver interface {
	// Enqueue is called for every data packet entering egress queue out of
	// switch sw from ingress port in, with the packets already queued there
	// (the one on the wire excluded) and whether out is paused by PFC.
	Enqueue(now time.Duration, sw NodeID, in, out int, p *Packet, queued int, paused bool)
	// PFC is called for every PFC frame switch sw receives on port; pause
	// is the pause time it carries (0: RESUME).
	PFC(now time.Duration, sw NodeID, port int, pause time.Duration)
	// PFCSent is called for every PFC frame switch sw sends out of port
	// (its ingress from that port is above Xoff, or back below Xon).
	PFCSent(now time.Duration, sw NodeID, port int, pause time.Duration)
}

// HostObserver sees the hosts' transport.
type HostObserver interface {
	// Acked is called when the acknowledgement of a data packet of f
	// reaches its sender at time at (≥ the current simulated time), with
	// the packet's round-trip time.
	Acked(at time.Duration, f *Flow, rtt time.Duration)
}

// Stats counts what a run did.
type Stats struct {
	Events       uint64        // events processed
	Packets      uint64        // data packets delivered to hosts
	Hops         uint64        // data packets enqueued at switches
	PFCFrames    uint64        // PAUSE and RESUME frames sent by switches
	Injected     uint64        // PAUSE frames injected by hosts
	Drops        uint64        // data packets dropped for want of buffer
	ECNMarks     uint64        // packets marked
	CNPs         uint64        // CNPs sent
	Simulated    time.Duration // simulated time covered
	Wall         time.Duration // wall-clock time of Run
	EventsPerSec float64       // Events / Wall
}

type fifo struct {
	buf  []*Packet
	head int
}

func (q *fifo) len() int { return len(q.buf) - q.head }

func (q *fifo) push(p *Packet) { q.buf = append(q.buf, p) }

func (q *fifo) pop() *Packet {
	p := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head >= 256 && q.head*2 >= len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	return p
}

type port struct {
	peer        PortRef
	gbps        int
	delay       time.Duration
	q           fifo
	qBytes      int
	cur         *Packet // on the wire
	busy        bool
	pausedUntil time.Duration
	// Switch ingress side: bytes buffered that arrived here, PFC state.
	ingress   int
	pauseSent bool
	pfcGen    int64
}

type node struct {
	host  bool
	ports []port
	used  int // switch: shared buffer bytes in use
	// Host: active flows, round-robin position, pending wake-up.
	flows  []*Flow
	rr     int
	wakeAt time.Duration
}

type injection struct {
	host       NodeID
	start, end time.Duration
}

// Sim is one simulation run. It is not safe for concurrent use.
type Sim struct {
	cfg   Config
	topo  *Topology
	nodes []node
	// next[sw][dst host] = equal-cost egress ports of sw toward dst.
	next  [][][]int
	flows []*Flow
	byTup map[FiveTuple]*Flow
	inj   []injection
	fns   []func()
	swObs []SwitchObserver
	hObs  []HostObserver
	ev    eventHeap
	seq   uint64
	now   time.Duration
	rng   *rand.Rand
	free  []*Packet
	stats Stats
	ran   bool
}

// New returns a simulation of topo. topo must not change afterwards.
func New(topo *Topology, cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Sim{
		cfg:   cfg,
		topo:  topo,
		nodes: make([]node, topo.Nodes()),
		byTup: map[FiveTuple]*Flow{},
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	for _, l := range topo.links {
		for _, end := range [2][2]PortRef{{l.A, l.B}, {l.B, l.A}} {
			n := &s.nodes[end[0].Node]
			if len(n.ports) == 0 {
				n.ports = make([]port, topo.Ports(end[0].Node))
				n.host = topo.IsHost(end[0].Node)
			}
			n.ports[end[0].Port] = port{peer: end[1], gbps: l.Gbps, delay: l.Delay}
		}
	}
	s.routes()
	return s, nil
}

// routes computes, for every switch and host, the egress ports on shortest
// paths (hosts do not forward).
func (s *Sim) routes() {
	n := len(s.nodes)
	s.next = make([][][]int, n)
	for i := range s.next {
		if !s.nodes[i].host {
			s.next[i] = make([][]int, n)
		}
	}
	dist := make([]int, n)
	for _, dst := range s.topo.hosts {
		for i := range dist {
			dist[i] = -1
		}
		dist[dst] = 0
		queue := []NodeID{dst}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if u != dst && s.nodes[u].host {
				continue
			}
			for _, p := range s.nodes[u].ports {
				if dist[p.peer.Node] < 0 {
					dist[p.peer.Node] = dist[u] + 1
					queue = append(queue, p.peer.Node)
				}
			}
		}
		for sw := range s.nodes {
			if s.nodes[sw].host || dist[sw] < 0 {
				continue
			}
			for pi, p := range s.nodes[sw].ports {
				q := p.peer.Node
				if dist[q] == dist[sw]-1 && (!s.nodes[q].host || q == dst) {
					s.next[sw][dst] = append(s.next[sw][dst], pi)
				}
			}
		}
	}
}

// Topology returns the simulated topology.
func (s *Sim) Topology() *Topology { return s.topo }

// Config returns the configuration with defaults applied.
func (s *Sim) Config() Config { return s.cfg }

// Now returns the simulated time.
func (s *Sim) Now() time.Duration { return s.now }

// Rand returns the run's seeded random source (for scenario builders and
// observers that need randomness; using it changes the run's draws).
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Flows returns every flow added, by ID.
func (s *Sim) Flows() []*Flow { return s.flows }

// FlowByTuple returns the flow with tuple t, or nil.
func (s *Sim) FlowByTuple(t FiveTuple) *Flow { return s.byTup[t] }

// Observe attaches a switch observer.
func (s *Sim) Observe(o SwitchObserver) { s.swObs = append(s.swObs, o) }

// ObserveHosts attaches a host observer.
func (s *Sim) ObserveHosts(o HostObserver) { s.hObs = append(s.hObs, o) }

// Paused reports whether port p is paused by PFC now.
func (s *Sim) Paused(p PortRef) bool { return s.nodes[p.Node].ports[p.Port].pausedUntil > s.now }

// Queued returns the packets waiting in the egress queue of p.
func (s *Sim) Queued(p PortRef) int { return s.nodes[p.Node].ports[p.Port].q.len() }

// AddFlow adds f (its exported fields; ID and Tuple are assigned) and
// returns it.
func (s *Sim) AddFlow(f Flow) (*Flow, error) {
	if s.ran {
		return nil, errors.New("netsim: AddFlow after Run")
	}
	if int(f.Src) >= len(s.nodes) || int(f.Dst) >= len(s.nodes) || f.Src < 0 || f.Dst < 0 ||
		!s.nodes[f.Src].host || !s.nodes[f.Dst].host || f.Src == f.Dst {
		return nil, fmt.Errorf("netsim: flow from %d to %d: want two different hosts", f.Src, f.Dst)
	}
	if f.Size < 0 || f.MaxGbps < 0 || f.Start < 0 {
		return nil, fmt.Errorf("netsim: flow size %d, max %v Gbps, start %v: want ≥ 0", f.Size, f.MaxGbps, f.Start)
	}
	fl := new(Flow)
	*fl = f
	fl.ID = len(s.flows)
	fl.Tuple = FiveTuple{SrcIP: s.topo.IP(f.Src), DstIP: s.topo.IP(f.Dst), SrcPort: uint16(49152 + fl.ID%16384), DstPort: RoCEv2Port, Proto: 17}
	if _, dup := s.byTup[fl.Tuple]; dup {
		return nil, fmt.Errorf("netsim: more than 16384 flows between %s and %s", s.topo.Name(f.Src), s.topo.Name(f.Dst))
	}
	fl.hash = fl.Tuple.Hash()
	path, err := s.path(fl)
	if err != nil {
		return nil, err
	}
	// Base RTT: propagation both ways, an MTU per link forward, a 64-byte
	// acknowledgement per link back.
	src := s.nodes[f.Src].ports[0]
	links := len(path) + 1
	fwd := time.Duration(links) * (src.delay + txTime(s.cfg.MTU, src.gbps))
	fl.revDelay = time.Duration(links) * (src.delay + txTime(64, src.gbps))
	fl.baseRTT = fwd + fl.revDelay
	line := float64(src.gbps)
	fl.rc, fl.rt, fl.alpha = line, line, 1
	s.flows = append(s.flows, fl)
	s.byTup[fl.Tuple] = fl
	s.schedule(event{at: f.Start, kind: evFlowStart, val: int64(fl.ID)})
	return fl, nil
}

// InjectPFC makes host send PAUSE frames to its switch from start to end (a
// malfunctioning NIC): one every PauseTime/2, the last expiring PauseTime
// after end.
func (s *Sim) InjectPFC(host NodeID, start, end time.Duration) error {
	if int(host) >= len(s.nodes) || host < 0 || !s.nodes[host].host || end <= start {
		return fmt.Errorf("netsim: inject PFC from node %d over [%v, %v): want a host and end after start", host, start, end)
	}
	s.inj = append(s.inj, injection{host, start, end})
	s.schedule(event{at: start, kind: evInject, node: host, val: int64(len(s.inj) - 1)})
	return nil
}

// At calls fn at simulated time t (not before the current time).
func (s *Sim) At(t time.Duration, fn func()) {
	s.fns = append(s.fns, fn)
	s.schedule(event{at: max(t, s.now), kind: evCall, val: int64(len(s.fns) - 1)})
}

// Every calls fn every period from the current time while it returns true.
func (s *Sim) Every(period time.Duration, fn func() bool) {
	var tick func()
	tick = func() {
		if fn() {
			s.At(s.now+period, tick)
		}
	}
	s.At(s.now+period, tick)
}

// Path returns the egress ports f crosses, switch by switch.
func (s *Sim) Path(f *Flow) []PortRef {
	p, _ := s.path(f)
	return p
}

// NextHop returns the egress port switch sw forwards f's packets to, or -1
// when f does not cross sw.
func (s *Sim) NextHop(sw NodeID, f *Flow) int {
	for _, p := range s.Path(f) {
		if p.Node == sw {
			return p.Port
		}
	}
	return -1
}

func (s *Sim) path(f *Flow) ([]PortRef, error) {
	if f.Route != nil {
		at := s.nodes[f.Src].ports[0].peer.Node
		for i, h := range f.Route {
			if h.Node != at || h.Port < 0 || h.Port >= len(s.nodes[at].ports) {
				return nil, fmt.Errorf("netsim: flow route hop %d is %v, but the packet is at %s", i, h, s.topo.Name(at))
			}
			at = s.nodes[at].ports[h.Port].peer.Node
		}
		if at != f.Dst {
			return nil, fmt.Errorf("netsim: flow route ends at %s, not %s", s.topo.Name(at), s.topo.Name(f.Dst))
		}
		return f.Route, nil
	}
	var p []PortRef
	at := s.nodes[f.Src].ports[0].peer.Node
	for at != f.Dst {
		if s.nodes[at].host || len(p) > len(s.nodes) {
			return nil, fmt.Errorf("netsim: no route from %s to %s", s.topo.Name(f.Src), s.topo.Name(f.Dst))
		}
		out := s.ecmp(at, f)
		if out < 0 {
			return nil, fmt.Errorf("netsim: no route from %s to %s", s.topo.Name(at), s.topo.Name(f.Dst))
		}
		p = append(p, PortRef{at, out})
		at = s.nodes[at].ports[out].peer.Node
	}
	return p, nil
}

// ecmp picks sw's egress toward f.Dst by a per-switch hash of the tuple.
func (s *Sim) ecmp(sw NodeID, f *Flow) int {
	c := s.next[sw][f.Dst]
	switch len(c) {
	case 0:
		return -1
	case 1:
		return c[0]
	}
	h := f.hash ^ uint32(sw)*0x9e3779b9
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	return c[h%uint32(len(c))]
}

func txTime(bytes, gbps int) time.Duration {
	return time.Duration((bytes*8 + gbps - 1) / gbps)
}

func (s *Sim) schedule(e event) {
	s.seq++
	e.seq = s.seq
	s.ev.push(e)
}

func (s *Sim) newPacket() *Packet {
	if n := len(s.free); n > 0 {
		p := s.free[n-1]
		s.free = s.free[:n-1]
		return p
	}
	return new(Packet)
}

func (s *Sim) freePacket(p *Packet) {
	*p = Packet{}
	s.free = append(s.free, p)
}

// Run processes events until simulated time until (or until none is
// left) and returns the run's statistics. It may be called again with a
// later time to continue.
func (s *Sim) Run(until time.Duration) Stats {
	s.ran = true
	start := time.Now()
	for len(s.ev) > 0 && s.ev[0].at <= until {
		e := s.ev.pop()
		s.now = e.at
		s.stats.Events++
		switch e.kind {
		case evArrive:
			if s.nodes[e.node].host {
				s.deliver(e.pkt)
			} else {
				s.forward(e.node, int(e.port), e.pkt)
			}
		case evTxDone:
			s.txDone(e.node, int(e.port))
		case evPFC:
			s.pfcArrive(e.node, int(e.port), time.Duration(e.val))
		case evPauseEnd:
			p := &s.nodes[e.node].ports[e.port]
			if p.pausedUntil <= s.now {
				s.kick(e.node, int(e.port))
			}
		case evPFCRefresh:
			p := &s.nodes[e.node].ports[e.port]
			if p.pauseSent && p.pfcGen == e.val {
				s.sendPFC(e.node, int(e.port), s.cfg.PauseTime)
				s.schedule(event{at: s.now + s.cfg.PauseTime/2, kind: evPFCRefresh, node: e.node, port: e.port, val: p.pfcGen})
			}
		case evFlowStart:
			f := s.flows[e.val]
			f.lastInc, f.lastAlpha = s.now, s.now
			n := &s.nodes[f.Src]
			n.flows = append(n.flows, f)
			s.kick(f.Src, 0)
		case evHostWake:
			n := &s.nodes[e.node]
			if n.wakeAt == s.now {
				n.wakeAt = 0
			}
			s.kick(e.node, 0)
		case evCNP:
			f := s.flows[e.val]
			f.ccCut(s.now, &s.cfg.DCQCN, float64(s.nodes[f.Src].ports[0].gbps))
		case evInject:
			in := s.inj[e.val]
			if s.now < in.end {
				s.stats.Injected++
				s.sendPFC(in.host, 0, s.cfg.PauseTime)
				s.schedule(event{at: s.now + s.cfg.PauseTime/2, kind: evInject, node: e.node, val: e.val})
			}
		case evCall:
			fn := s.fns[e.val]
			s.fns[e.val] = nil
			fn()
		}
	}
	if until > s.now {
		s.now = until
	}
	s.stats.Simulated = s.now
	s.stats.Wall += time.Since(start)
	if s.stats.Wall > 0 {
		s.stats.EventsPerSec = float64(s.stats.Events) / s.stats.Wall.Seconds()
	}
	return s.stats
}

// forward handles a data packet arriving at switch sw on port in.
func (s *Sim) forward(sw NodeID, in int, p *Packet) {
	n := &s.nodes[sw]
	f := p.Flow
	var out int
	if f.Route != nil {
		out = f.Route[p.hop].Port
	} else {
		out = s.ecmp(sw, f)
	}
	p.hop++
	if n.used+int(p.Bytes) > s.cfg.BufferBytes {
		s.stats.Drops++
		s.freePacket(p)
		return
	}
	q := &n.ports[out]
	paused := q.pausedUntil > s.now
	for _, o := range s.swObs {
		o.Enqueue(s.now, sw, in, out, p, q.q.len(), paused)
	}
	s.stats.Hops++
	p.inPort = int16(in)
	n.used += int(p.Bytes)
	ip := &n.ports[in]
	ip.ingress += int(p.Bytes)
	q.q.push(p)
	q.qBytes += int(p.Bytes)
	if !ip.pauseSent && ip.ingress > s.cfg.XoffBytes {
		ip.pauseSent = true
		ip.pfcGen++
		s.sendPFC(sw, in, s.cfg.PauseTime)
		s.schedule(event{at: s.now + s.cfg.PauseTime/2, kind: evPFCRefresh, node: sw, port: int32(in), val: ip.pfcGen})
	}
	if !q.busy && !paused {
		s.startTx(sw, out)
	}
}

// startTx puts the head of sw's out queue on the wire.
func (s *Sim) startTx(sw NodeID, out int) {
	n := &s.nodes[sw]
	q := &n.ports[out]
	p := q.q.pop()
	// RED/ECN on the queue left behind, at dequeue (as HPCC's ns-3
	// switch, the paper's simulator, does): a paused queue marks nothing
	// until it drains.
	if !p.ECN && q.qBytes > s.cfg.KminBytes {
		mark := q.qBytes >= s.cfg.KmaxBytes
		if !mark {
			pr := s.cfg.Pmax * float64(q.qBytes-s.cfg.KminBytes) / float64(s.cfg.KmaxBytes-s.cfg.KminBytes)
			mark = s.rng.Float64() < pr
		}
		if mark {
			p.ECN = true
			s.stats.ECNMarks++
		}
	}
	q.qBytes -= int(p.Bytes)
	n.used -= int(p.Bytes)
	ip := &n.ports[p.inPort]
	ip.ingress -= int(p.Bytes)
	if ip.pauseSent && ip.ingress < s.cfg.XonBytes {
		ip.pauseSent = false
		ip.pfcGen++
		s.sendPFC(sw, int(p.inPort), 0)
	}
	q.busy, q.cur = true, p
	s.schedule(event{at: s.now + txTime(int(p.Bytes), q.gbps), kind: evTxDone, node: sw, port: int32(out)})
}

func (s *Sim) txDone(nd NodeID, pt int) {
	q := &s.nodes[nd].ports[pt]
	p := q.cur
	q.busy, q.cur = false, nil
	s.schedule(event{at: s.now + q.delay, kind: evArrive, node: q.peer.Node, port: int32(q.peer.Port), pkt: p})
	s.kick(nd, pt)
}

// kick starts a transmission on port pt of nd if it is idle, unpaused and
// has something to send.
func (s *Sim) kick(nd NodeID, pt int) {
	n := &s.nodes[nd]
	q := &n.ports[pt]
	if q.busy || q.pausedUntil > s.now {
		return
	}
	if !n.host {
		if q.q.len() > 0 {
			s.startTx(nd, pt)
		}
		return
	}
	s.hostSend(nd)
}

// hostSend sends the next packet of the host's flows, round robin among the
// flows whose pacing allows one now.
func (s *Sim) hostSend(h NodeID) {
	n := &s.nodes[h]
	q := &n.ports[0]
	line := float64(q.gbps)
	var f *Flow
	earliest := time.Duration(-1)
	for i := range n.flows {
		j := (n.rr + i) % len(n.flows)
		c := n.flows[j]
		if c.nextAvail <= s.now {
			f = c
			n.rr = j + 1
			break
		}
		if earliest < 0 || c.nextAvail < earliest {
			earliest = c.nextAvail
		}
	}
	if f == nil {
		if earliest >= 0 && (n.wakeAt == 0 || earliest < n.wakeAt) {
			n.wakeAt = earliest
			s.schedule(event{at: earliest, kind: evHostWake, node: h})
		}
		return
	}
	size := int64(s.cfg.MTU)
	if f.Size > 0 {
		size = min(size, f.Size-f.sent)
	}
	p := s.newPacket()
	*p = Packet{Flow: f, Seq: f.pkts, Bytes: int32(size), SentAt: s.now}
	f.pkts++
	f.sent += size
	f.inflight = append(f.inflight, inflight{p.Seq, s.now})
	f.ccCatchUp(s.now, &s.cfg.DCQCN, line)
	f.nextAvail = s.now + time.Duration(float64(size*8)/f.rate(line))
	if f.Size > 0 && f.sent >= f.Size {
		f.sendDone = true
		for i, c := range n.flows {
			if c == f {
				n.flows = append(n.flows[:i], n.flows[i+1:]...)
				break
			}
		}
	}
	q.busy, q.cur = true, p
	s.schedule(event{at: s.now + txTime(int(size), q.gbps), kind: evTxDone, node: h, port: 0})
}

// deliver hands a data packet to its receiving host.
func (s *Sim) deliver(p *Packet) {
	f := p.Flow
	s.stats.Packets++
	f.delivered += int64(p.Bytes)
	if p.ECN && (!f.cnpSeen || s.now-f.lastCNP >= s.cfg.CNPInterval) {
		f.cnpSeen, f.lastCNP = true, s.now
		s.stats.CNPs++
		s.schedule(event{at: s.now + f.revDelay, kind: evCNP, val: int64(f.ID)})
	}
	for f.inflightOff < len(f.inflight) && f.inflight[f.inflightOff].seq <= p.Seq {
		f.inflightOff++
	}
	if f.inflightOff > 1024 && f.inflightOff*2 > len(f.inflight) {
		n := copy(f.inflight, f.inflight[f.inflightOff:])
		f.inflight, f.inflightOff = f.inflight[:n], 0
	}
	at := s.now + f.revDelay
	rtt := at - p.SentAt
	for _, o := range s.hObs {
		o.Acked(at, f, rtt)
	}
	if f.Size > 0 && f.delivered >= f.Size {
		f.finish = s.now
	}
	s.freePacket(p)
}

// sendPFC sends a PFC frame out of port pt of nd (pause 0: RESUME).
func (s *Sim) sendPFC(nd NodeID, pt int, pause time.Duration) {
	if !s.nodes[nd].host {
		s.stats.PFCFrames++
		for _, o := range s.swObs {
			o.PFCSent(s.now, nd, pt, pause)
		}
	}
	q := &s.nodes[nd].ports[pt]
	s.schedule(event{at: s.now + q.delay, kind: evPFC, node: q.peer.Node, port: int32(q.peer.Port), val: int64(pause)})
}

func (s *Sim) pfcArrive(nd NodeID, pt int, pause time.Duration) {
	if !s.nodes[nd].host {
		for _, o := range s.swObs {
			o.PFC(s.now, nd, pt, pause)
		}
	}
	q := &s.nodes[nd].ports[pt]
	q.pausedUntil = s.now + pause
	if pause > 0 {
		s.schedule(event{at: q.pausedUntil, kind: evPauseEnd, node: nd, port: int32(pt)})
		return
	}
	s.kick(nd, pt)
}
