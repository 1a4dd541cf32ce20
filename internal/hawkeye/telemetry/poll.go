package telemetry

import (
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// Strategy says which switches a poll collects.
type Strategy uint8

// Polling strategies.
const (
	// Hawkeye follows the victim's path and PFC causality (§3.4).
	Hawkeye Strategy = 1
	// VictimOnly follows the victim's path only (SpiderMon-like).
	VictimOnly Strategy = 2
	// Full collects every switch at the trigger time.
	Full Strategy = 3
)

// String returns the strategy's name.
func (s Strategy) String() string {
	switch s {
	case Hawkeye:
		return "hawkeye"
	case VictimOnly:
		return "victim-only"
	case Full:
		return "full"
	}
	return "unknown"
}

// Polling flags (Table 1).
const (
	flagVictim uint8 = 1 // 01: along the victim's path
	flagPFC    uint8 = 2 // 10: along PFC causality
)

// Collection is what one poll collected: a snapshot per switch reached, in
// the order the polling packets reached them.
type Collection struct {
	Strategy  Strategy
	Victim    netsim.FiveTuple
	At        time.Duration // when the agent fired
	Done      time.Duration // when the last switch was read
	Snapshots []Snapshot
	Roles     map[netsim.NodeID]uint8 // record.Role* bits per switch
	// PollingPackets counts the polling packets the poll sent (its
	// bandwidth overhead; 0 for full polling, which sends none).
	PollingPackets int
}

// Poll starts a poll for the victim flow at time at and calls done (from
// the simulation, when the last polling packet has been handled) with what
// it collected. Polling packets travel at each link's propagation delay in
// a queue PFC never pauses; every switch reached is read once, when the
// first polling packet reaches it.
func (t *Telemetry) Poll(sim *netsim.Sim, strategy Strategy, victim *netsim.Flow, at time.Duration, done func(*Collection)) {
	c := &Collection{Strategy: strategy, Victim: victim.Tuple, At: at, Roles: map[netsim.NodeID]uint8{}}
	topo := sim.Topology()
	if strategy == Full {
		sim.At(at, func() {
			for _, sw := range topo.Switches() {
				c.Snapshots = append(c.Snapshots, t.Collect(sim.Now(), sw))
				c.Roles[sw] = record.RoleFull
			}
			c.Done = sim.Now()
			done(c)
		})
		return
	}
	path := sim.Path(victim)
	next := map[netsim.NodeID]int{}
	for _, p := range path {
		next[p.Node] = p.Port
	}
	collected := map[netsim.NodeID]bool{}
	seenV := map[netsim.NodeID]bool{}
	seenP := map[netsim.PortRef]bool{}
	pending := 0
	var arrive func(sw netsim.NodeID, in int, flags uint8)
	send := func(from netsim.PortRef, flags uint8) {
		peer := topo.Peer(from)
		if topo.IsHost(peer.Node) {
			return
		}
		pending++
		c.PollingPackets++
		sim.At(sim.Now()+topo.Link(from).Delay, func() {
			arrive(peer.Node, peer.Port, flags)
			pending--
			if pending == 0 {
				c.Done = sim.Now()
				done(c)
			}
		})
	}
	arrive = func(sw netsim.NodeID, in int, flags uint8) {
		now := sim.Now()
		if !collected[sw] {
			collected[sw] = true
			c.Snapshots = append(c.Snapshots, t.Collect(now, sw))
		}
		if flags&flagVictim != 0 {
			c.Roles[sw] |= record.RoleVictimPath
		}
		if flags&flagPFC != 0 {
			c.Roles[sw] |= record.RolePFC
		}
		if flags&flagVictim != 0 && !seenV[sw] {
			seenV[sw] = true
			if out, ok := next[sw]; ok {
				f := flagVictim
				if strategy == Hawkeye && t.VictimPaused(now, sw, victim.Tuple) {
					f |= flagPFC
				}
				send(netsim.PortRef{Node: sw, Port: out}, f)
			}
		}
		if flags&flagPFC != 0 && strategy == Hawkeye && !seenP[netsim.PortRef{Node: sw, Port: in}] {
			seenP[netsim.PortRef{Node: sw, Port: in}] = true
			for _, j := range t.Causal(now, sw, in) {
				send(netsim.PortRef{Node: sw, Port: j}, flagPFC)
			}
		}
	}
	// The source host sends the polling packet to its switch.
	src := netsim.PortRef{Node: victim.Src, Port: 0}
	pending++
	c.PollingPackets++
	first := topo.Peer(src)
	sim.At(at+topo.Link(src).Delay, func() {
		arrive(first.Node, first.Port, flagVictim)
		pending--
		if pending == 0 {
			c.Done = sim.Now()
			done(c)
		}
	})
}
