package telemetry

import (
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// Config configures the switches' telemetry.
type Config struct {
	// EpochBits selects the epoch size, 2^EpochBits ns (default 20:
	// 1.05 ms; 17 is 131 µs, 21 is 2.1 ms).
	EpochBits uint
	// Epochs is the ring's length, a power of two (default 4).
	Epochs int
	// FlowSlots is the flow table's slots per epoch (default 4096).
	FlowSlots int
	// Evicted bounds the entries a switch's controller keeps after
	// eviction (default 65536; more are dropped and counted).
	Evicted int
}

// DefaultConfig returns the defaults spelled out.
func DefaultConfig() Config {
	return Config{EpochBits: 20, Epochs: 4, FlowSlots: 4096, Evicted: 65536}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.EpochBits == 0 {
		c.EpochBits = d.EpochBits
	}
	if c.Epochs == 0 {
		c.Epochs = d.Epochs
	}
	if c.FlowSlots == 0 {
		c.FlowSlots = d.FlowSlots
	}
	if c.Evicted == 0 {
		c.Evicted = d.Evicted
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.EpochBits < 10 || c.EpochBits > 30:
		return fmt.Errorf("telemetry: Config.EpochBits = %d, want 10..30", c.EpochBits)
	case c.Epochs < 1 || c.Epochs > 256 || c.Epochs&(c.Epochs-1) != 0:
		return fmt.Errorf("telemetry: Config.Epochs = %d, want a power of two up to 256", c.Epochs)
	case c.FlowSlots < 1 || c.FlowSlots > 1<<20:
		return fmt.Errorf("telemetry: Config.FlowSlots = %d, want 1..2^20", c.FlowSlots)
	}
	return nil
}

// Epoch returns the epoch size.
func (c Config) Epoch() time.Duration { return time.Duration(1) << c.withDefaults().EpochBits }

// EpochBitsFor returns the EpochBits whose epoch is closest to d (on a log
// scale): 100 µs → 17 (131 µs), 1 ms → 20 (1.05 ms), 2 ms → 21.
func EpochBitsFor(d time.Duration) uint {
	b := uint(10)
	for b < 30 && time.Duration(1)<<(b+1) <= d {
		b++
	}
	// d is in [2^b, 2^(b+1)): round on the geometric mean.
	lo := float64(int64(1) << b)
	if float64(d)*float64(d) > lo*lo*2 {
		b++
	}
	return b
}

type flowSlot struct {
	num    int64 // the epoch it belongs to (lazy reset)
	tuple  netsim.FiveTuple
	port   uint8
	pkts   uint32
	paused uint32
	qdepth uint32 // over unpaused packets
	queued uint16 // unpaused packets that found a queue
}

type portCounters struct {
	pkts, paused, qdepth, pauseRx uint32
	pauseTx                       uint16
}

type epoch struct {
	num   int64 // absolute epoch number, -1 when never used
	flows []flowSlot
	ports []portCounters
	meter []uint64 // ports × ports bytes, [in*ports+out]
}

type evicted struct {
	rec record.Flow
	num int64
}

type switchState struct {
	ports       int
	epochs      []epoch
	evicted     []evicted // the controller's evicted entries
	lostEvicted uint64
	pausedUntil []time.Duration // PFC status per port
}

// Telemetry holds the data-plane registers of every switch of a simulation.
// Attach it with Sim.Observe; it is not safe for concurrent use (the
// simulator calls it from one goroutine).
type Telemetry struct {
	cfg   Config
	topo  *netsim.Topology
	mask  int64
	sw    []*switchState // by NodeID; nil for hosts
	stats Stats
}

// Stats counts what the data plane did.
type Stats struct {
	Packets   uint64 // packets recorded
	Paused    uint64 // of which paused
	Evictions uint64 // flow entries evicted to the controller
	Resets    uint64 // epochs reset on wrap-around
}

// New returns the telemetry of topo's switches.
func New(topo *netsim.Topology, cfg Config) (*Telemetry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &Telemetry{cfg: cfg, topo: topo, mask: int64(cfg.Epochs - 1), sw: make([]*switchState, topo.Nodes())}
	for _, n := range topo.Switches() {
		np := topo.Ports(n)
		st := &switchState{ports: np, epochs: make([]epoch, cfg.Epochs), pausedUntil: make([]time.Duration, np)}
		for i := range st.epochs {
			st.epochs[i] = epoch{num: -1, flows: make([]flowSlot, cfg.FlowSlots), ports: make([]portCounters, np), meter: make([]uint64, np*np)}
			for j := range st.epochs[i].flows {
				st.epochs[i].flows[j].num = -1
			}
		}
		t.sw[n] = st
	}
	return t, nil
}

// Config returns the configuration with defaults applied.
func (t *Telemetry) Config() Config { return t.cfg }

// Stats returns the data plane's counters.
func (t *Telemetry) Stats() Stats { return t.stats }

// epochAt returns the ring slot of the epoch of time now, reset if it held
// an older epoch.
func (t *Telemetry) epochAt(st *switchState, now time.Duration) (*epoch, int64) {
	n := int64(now) >> t.cfg.EpochBits
	ep := &st.epochs[n&t.mask]
	if ep.num != n {
		if ep.num >= 0 {
			t.stats.Resets++
		}
		ep.num = n
		clear(ep.ports)
		clear(ep.meter)
	}
	return ep, n
}

// Enqueue implements netsim.SwitchObserver.
func (t *Telemetry) Enqueue(now time.Duration, sw netsim.NodeID, in, out int, p *netsim.Packet, queued int, paused bool) {
	st := t.sw[sw]
	ep, n := t.epochAt(st, now)
	t.stats.Packets++
	var pz uint32
	if paused {
		pz = 1
		t.stats.Paused++
	}
	tuple := p.Flow.Tuple
	s := &ep.flows[tuple.Hash()%uint32(len(ep.flows))]
	if s.num != n || s.tuple != tuple {
		if s.num == n && s.pkts > 0 {
			t.evict(st, sw, n, s)
		}
		*s = flowSlot{num: n, tuple: tuple, port: uint8(out)}
	}
	s.pkts++
	s.paused += pz
	if !paused {
		s.qdepth += uint32(queued)
		if queued > 0 && s.queued < 0xffff {
			s.queued++
		}
	}
	pc := &ep.ports[out]
	pc.pkts++
	pc.paused += pz
	pc.qdepth += uint32(queued)
	ep.meter[in*st.ports+out] += uint64(p.Bytes)
}

func (t *Telemetry) evict(st *switchState, sw netsim.NodeID, n int64, s *flowSlot) {
	t.stats.Evictions++
	if len(st.evicted) >= t.cfg.Evicted {
		st.lostEvicted++
		return
	}
	st.evicted = append(st.evicted, evicted{record.Flow{Switch: uint16(sw), Epoch: epochID(n), Port: s.port, Tuple: record.Tuple(s.tuple),
		Pkts: s.pkts, Paused: s.paused, QDepth: s.qdepth, Queued: s.queued}, n})
}

// PFC implements netsim.SwitchObserver: it updates the port's PFC status
// register and counts PAUSE frames.
func (t *Telemetry) PFC(now time.Duration, sw netsim.NodeID, port int, pause time.Duration) {
	st := t.sw[sw]
	st.pausedUntil[port] = now + pause
	if pause > 0 {
		ep, _ := t.epochAt(st, now)
		ep.ports[port].pauseRx++
	}
}

// PFCSent implements netsim.SwitchObserver: it counts PAUSE frames the
// switch sends (its PFC status toward each peer).
func (t *Telemetry) PFCSent(now time.Duration, sw netsim.NodeID, port int, pause time.Duration) {
	if pause == 0 {
		return
	}
	ep, _ := t.epochAt(t.sw[sw], now)
	if ep.ports[port].pauseTx < 0xffff {
		ep.ports[port].pauseTx++
	}
}

// epochID is the epoch's identity in records: its ring index and the 8 bits
// above it (timestamp bits [b+9:b] for a 4-epoch ring, b = EpochBits).
func epochID(n int64) uint16 { return uint16(n & 0x3ff) }

// live reports whether ring epoch ep holds one of the Epochs epochs up to
// the current one n.
func (t *Telemetry) live(ep *epoch, n int64) bool {
	return ep.num >= 0 && ep.num > n-int64(t.cfg.Epochs) && ep.num <= n
}

// VictimPaused reports whether the flow was paused at switch sw's egress in
// any live epoch (the check a switch makes on a polling packet of flag 01).
func (t *Telemetry) VictimPaused(now time.Duration, sw netsim.NodeID, tuple netsim.FiveTuple) bool {
	st := t.sw[sw]
	n := int64(now) >> t.cfg.EpochBits
	h := tuple.Hash() % uint32(t.cfg.FlowSlots)
	for i := range st.epochs {
		ep := &st.epochs[i]
		if !t.live(ep, n) {
			continue
		}
		s := &ep.flows[h]
		if s.num == ep.num && s.tuple == tuple && s.paused > 0 {
			return true
		}
	}
	for _, r := range st.evicted {
		if r.rec.Tuple == record.Tuple(tuple) && r.rec.Paused > 0 && r.num > n-int64(t.cfg.Epochs) {
			return true
		}
	}
	return false
}

// Causal returns the egress ports of switch sw that are paused (paused
// packets or PAUSE frames received in a live epoch: a port paused after
// its queue filled enqueues nothing more from a paused ingress, but the
// PAUSE it received shows its downstream holds it) and received traffic
// from ingress in (the meter): where a polling packet of flag 1* that came
// in by in goes next.
func (t *Telemetry) Causal(now time.Duration, sw netsim.NodeID, in int) []int {
	st := t.sw[sw]
	n := int64(now) >> t.cfg.EpochBits
	var out []int
	for j := range st.ports {
		if j == in {
			continue
		}
		var meter uint64
		var paused uint32
		for i := range st.epochs {
			ep := &st.epochs[i]
			if t.live(ep, n) {
				meter += ep.meter[in*st.ports+j]
				paused += ep.ports[j].paused + ep.ports[j].pauseRx
			}
		}
		if meter > 0 && paused > 0 {
			out = append(out, j)
		}
	}
	return out
}

// Snapshot is what one switch's controller reads and reports: the non-zero
// entries of its live epochs and the evicted entries of those epochs.
type Snapshot struct {
	Switch netsim.NodeID
	At     time.Duration
	Flows  []record.Flow
	Ports  []record.Port
	Meters []record.Meter
}

// Collect returns switch sw's snapshot at time now.
func (t *Telemetry) Collect(now time.Duration, sw netsim.NodeID) Snapshot {
	st := t.sw[sw]
	n := int64(now) >> t.cfg.EpochBits
	snap := Snapshot{Switch: sw, At: now}
	for i := range st.epochs {
		ep := &st.epochs[i]
		if !t.live(ep, n) {
			continue
		}
		id := epochID(ep.num)
		for k := range ep.flows {
			s := &ep.flows[k]
			if s.num == ep.num && s.pkts > 0 {
				snap.Flows = append(snap.Flows, record.Flow{Switch: uint16(sw), Epoch: id, Port: s.port, Tuple: record.Tuple(s.tuple),
					Pkts: s.pkts, Paused: s.paused, QDepth: s.qdepth, Queued: s.queued})
			}
		}
		for p, pc := range ep.ports {
			if pc == (portCounters{}) {
				continue
			}
			peer := t.topo.Peer(netsim.PortRef{Node: sw, Port: p})
			kind := record.PeerSwitch
			if t.topo.IsHost(peer.Node) {
				kind = record.PeerHost
			}
			var flags uint8
			if st.pausedUntil[p] > now {
				flags |= record.FlagPausedNow
			}
			snap.Ports = append(snap.Ports, record.Port{Switch: uint16(sw), Epoch: id, Port: uint8(p), PeerKind: kind,
				Peer: uint16(peer.Node), PeerPort: uint8(peer.Port), Flags: flags,
				Pkts: pc.pkts, Paused: pc.paused, QDepth: pc.qdepth, PauseRx: pc.pauseRx, PauseTx: pc.pauseTx})
		}
		for k, b := range ep.meter {
			if b > 0 {
				snap.Meters = append(snap.Meters, record.Meter{Switch: uint16(sw), Epoch: id, In: uint8(k / st.ports), Out: uint8(k % st.ports), Bytes: b})
			}
		}
	}
	for _, r := range st.evicted {
		if r.num > n-int64(t.cfg.Epochs) && r.num <= n {
			snap.Flows = append(snap.Flows, r.rec)
		}
	}
	return snap
}
