package netsim

import (
	"fmt"
	"time"
)

// Defaults of a link: the paper's 100 Gbps and 2 µs.
const (
	DefaultGbps  = 100
	DefaultDelay = 2 * time.Microsecond
)

// NodeID names a node (switch or host) of a Topology: its index in the order
// the nodes were added.
type NodeID int32

// None is the NodeID of no node.
const None NodeID = -1

// PortRef is one port of one node.
type PortRef struct {
	Node NodeID
	Port int
}

// Link is one full-duplex link between two ports.
type Link struct {
	A, B  PortRef
	Gbps  int           // line rate of both directions
	Delay time.Duration // propagation delay of each direction
}

// Topology declares nodes and links. Build it with AddSwitch, AddHost and
// Connect (or FatTree), then give it to New; it must not change afterwards.
type Topology struct {
	names  []string
	isHost []bool
	ports  [][]PortRef // ports[n][p] = the peer of port p of node n
	links  []Link
	ip     []uint32 // hosts' IPv4 addresses (0 for switches)
	hosts  []NodeID
}

// NewTopology returns an empty topology.
func NewTopology() *Topology { return &Topology{} }

func (t *Topology) add(name string, host bool) NodeID {
	id := NodeID(len(t.names))
	t.names = append(t.names, name)
	t.isHost = append(t.isHost, host)
	t.ports = append(t.ports, nil)
	var ip uint32
	if host {
		n := uint32(len(t.hosts) + 1)
		ip = 10<<24 | (n>>8)<<8&0xff00 | n&0xff // 10.0.x.y, one per host
		t.hosts = append(t.hosts, id)
	}
	t.ip = append(t.ip, ip)
	return id
}

// AddSwitch adds a switch and returns its id.
func (t *Topology) AddSwitch(name string) NodeID { return t.add(name, false) }

// AddHost adds a host (one NIC port) and returns its id. Hosts get the IPv4
// addresses 10.0.0.1, 10.0.0.2, ... in the order they are added.
func (t *Topology) AddHost(name string) NodeID { return t.add(name, true) }

// Connect links a new port of a to a new port of b at DefaultGbps and
// DefaultDelay and returns the two port numbers.
func (t *Topology) Connect(a, b NodeID) (pa, pb int) {
	return t.ConnectLink(a, b, DefaultGbps, DefaultDelay)
}

// ConnectLink links a new port of a to a new port of b.
func (t *Topology) ConnectLink(a, b NodeID, gbps int, delay time.Duration) (pa, pb int) {
	pa, pb = len(t.ports[a]), len(t.ports[b])
	t.ports[a] = append(t.ports[a], PortRef{b, pb})
	t.ports[b] = append(t.ports[b], PortRef{a, pa})
	t.links = append(t.links, Link{A: PortRef{a, pa}, B: PortRef{b, pb}, Gbps: gbps, Delay: delay})
	return pa, pb
}

// Nodes returns the number of nodes.
func (t *Topology) Nodes() int { return len(t.names) }

// Name returns a node's name.
func (t *Topology) Name(n NodeID) string { return t.names[n] }

// IsHost reports whether n is a host.
func (t *Topology) IsHost(n NodeID) bool { return t.isHost[n] }

// Hosts returns the hosts in the order they were added.
func (t *Topology) Hosts() []NodeID { return t.hosts }

// Switches returns the switches in the order they were added.
func (t *Topology) Switches() []NodeID {
	var s []NodeID
	for i, h := range t.isHost {
		if !h {
			s = append(s, NodeID(i))
		}
	}
	return s
}

// Ports returns the number of ports of n.
func (t *Topology) Ports(n NodeID) int { return len(t.ports[n]) }

// Peer returns the port at the other end of p's link.
func (t *Topology) Peer(p PortRef) PortRef { return t.ports[p.Node][p.Port] }

// IP returns a host's IPv4 address (0 for a switch).
func (t *Topology) IP(n NodeID) uint32 { return t.ip[n] }

// HostByIP returns the host with address ip, or None.
func (t *Topology) HostByIP(ip uint32) NodeID {
	for _, h := range t.hosts {
		if t.ip[h] == ip {
			return h
		}
	}
	return None
}

// Link returns the link of port p.
func (t *Topology) Link(p PortRef) Link {
	for _, l := range t.links {
		if l.A == p || l.B == p {
			return l
		}
	}
	return Link{}
}

// PortName returns "name.pN".
func (t *Topology) PortName(p PortRef) string { return fmt.Sprintf("%s.p%d", t.names[p.Node], p.Port) }

// Validate checks that every host has exactly one port and the topology is
// connected.
func (t *Topology) Validate() error {
	if len(t.hosts) == 0 {
		return fmt.Errorf("netsim: topology has no host")
	}
	for _, h := range t.hosts {
		if len(t.ports[h]) != 1 {
			return fmt.Errorf("netsim: host %s has %d ports, want 1", t.names[h], len(t.ports[h]))
		}
	}
	seen := make([]bool, len(t.names))
	stack := []NodeID{0}
	seen[0] = true
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range t.ports[n] {
			if !seen[p.Node] {
				seen[p.Node] = true
				stack = append(stack, p.Node)
			}
		}
	}
	for i, s := range seen {
		if !s {
			return fmt.Errorf("netsim: node %s is not connected", t.names[i])
		}
	}
	for _, l := range t.links {
		if l.Gbps <= 0 || l.Delay < 0 {
			return fmt.Errorf("netsim: link %s–%s: %d Gbps, delay %v", t.PortName(l.A), t.PortName(l.B), l.Gbps, l.Delay)
		}
	}
	return nil
}

// FatTree returns the k-ary fat-tree (k even): k pods of k/2 edge and k/2
// aggregation switches, (k/2)² cores, k/2 hosts per edge switch. Switches
// are added first (edges pod by pod, then aggregations, then cores), then
// hosts; FatTree(4) has 20 switches and 16 hosts. Port numbers: an edge
// switch's ports 0..k/2-1 go to its hosts, k/2.. to its pod's aggregation
// switches in order; an aggregation switch's ports 0..k/2-1 go to its pod's
// edges, k/2.. to its cores; core c's port p goes to pod p.
func FatTree(k int) *Topology {
	if k < 2 || k%2 != 0 {
		panic("netsim: FatTree needs an even k ≥ 2")
	}
	h := k / 2
	t := NewTopology()
	edge := make([][]NodeID, k)
	agg := make([][]NodeID, k)
	for p := range k {
		for e := range h {
			edge[p] = append(edge[p], t.AddSwitch(fmt.Sprintf("e%d.%d", p, e)))
		}
	}
	for p := range k {
		for a := range h {
			agg[p] = append(agg[p], t.AddSwitch(fmt.Sprintf("a%d.%d", p, a)))
		}
	}
	core := make([]NodeID, h*h)
	for c := range core {
		core[c] = t.AddSwitch(fmt.Sprintf("c%d", c))
	}
	hosts := make([][][]NodeID, k)
	for p := range k {
		hosts[p] = make([][]NodeID, h)
		for e := range h {
			for i := range h {
				hosts[p][e] = append(hosts[p][e], t.AddHost(fmt.Sprintf("h%d", p*h*h+e*h+i)))
			}
		}
	}
	// Edge ports: hosts first, then aggregations.
	for p := range k {
		for e := range h {
			for i := range h {
				t.Connect(edge[p][e], hosts[p][e][i])
			}
		}
	}
	for p := range k {
		for e := range h {
			for a := range h {
				t.Connect(edge[p][e], agg[p][a])
			}
		}
	}
	// Aggregation a of every pod connects to cores a*h .. a*h+h-1; core
	// ports in pod order.
	for p := range k {
		for a := range h {
			for j := range h {
				t.Connect(agg[p][a], core[a*h+j])
			}
		}
	}
	return t
}
