package tea

import (
	"errors"
	"fmt"
	"sort"
)

// MaxReplicas is the most servers one bucket range is held by.
const MaxReplicas = 4

// MaxServers is the most servers one table is placed over: a switch
// matches one bucket range per server, and a placement keeps a few words
// per server.
const MaxServers = 1 << 16

// ErrCrossesRow reports a ClusterMemory access that spans two rows.
var ErrCrossesRow = errors.New("tea: access crosses a row boundary")

// ServerSpec is one DRAM server as the placement sees it.
type ServerSpec struct {
	Name   string // for messages and metrics
	Memory uint64 // bytes it lends to the table
}

// Holder is one server holding a copy of a bucket range.
type Holder struct {
	Server int    // index into the placement's servers
	Base   uint64 // byte offset of the range's first row in that server's memory
}

// Range is a contiguous range of buckets [Lo, Hi) and the servers holding
// it, primary first.
type Range struct {
	Lo, Hi  uint64
	Holders []Holder
}

// Placement cuts a table into one contiguous bucket range per server, sized
// in proportion to the servers' memory (§4.3: a switch then needs one range
// match per server), and gives range s to server s and, with replicas R, to
// servers s+1, …, s+R−1 (mod N) as well (§4.4). A server's memory holds its
// ranges one after the other: the range it is primary for first, then the
// ranges it replicates in the order s−1, s−2, …. Lookups and writes address
// a server's memory with RowAddr; the switch side and the control plane
// call the same method.
type Placement struct {
	spec     Spec
	servers  []ServerSpec
	replicas int
	ranges   []Range
	used     []uint64 // bytes each server holds
}

// Place computes the placement of spec's table over servers with each range
// held by replicas servers. It fails when a server's ranges do not fit its
// memory, naming the server.
func Place(spec Spec, servers []ServerSpec, replicas int) (*Placement, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	n := len(servers)
	switch {
	case n == 0:
		return nil, errors.New("servers: none")
	case n > MaxServers:
		return nil, fmt.Errorf("servers: %d out of range [1, %d]", n, MaxServers)
	case replicas < 1 || replicas > MaxReplicas || replicas > n:
		return nil, fmt.Errorf("replicas: %d out of range [1, min(%d, servers=%d)]", replicas, MaxReplicas, n)
	case uint64(n) > spec.Buckets:
		return nil, fmt.Errorf("servers: %d, more than the %d buckets", n, spec.Buckets)
	}
	var total float64
	for i, s := range servers {
		if s.Memory == 0 {
			return nil, fmt.Errorf("servers[%d] (%s): memory is zero", i, s.Name)
		}
		total += float64(s.Memory)
	}
	// Rows in proportion to memory, at least one each; the rest goes to the
	// largest remainders in order.
	rows := make([]uint64, n)
	var given uint64
	rem := make([]float64, n)
	for i, s := range servers {
		share := float64(spec.Buckets) * float64(s.Memory) / total
		rows[i] = max(1, uint64(share))
		rem[i] = share - float64(uint64(share))
		given += rows[i]
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for i := 0; given < spec.Buckets; i = (i + 1) % n {
		rows[order[i]]++
		given++
	}
	for i := n - 1; given > spec.Buckets; i = (i + n - 1) % n {
		if rows[order[i]] > 1 {
			rows[order[i]]--
			given--
		}
	}
	p := &Placement{spec: spec, servers: append([]ServerSpec(nil), servers...), replicas: replicas,
		ranges: make([]Range, n), used: make([]uint64, n)}
	var lo uint64
	for s := range n {
		p.ranges[s] = Range{Lo: lo, Hi: lo + rows[s], Holders: make([]Holder, replicas)}
		lo += rows[s]
	}
	rs := spec.RowSize()
	for k := range replicas {
		for s := range n {
			h := (s + k) % n
			p.ranges[s].Holders[k] = Holder{Server: h, Base: p.used[h]}
			p.used[h] += rows[s] * rs
		}
	}
	for s, u := range p.used {
		if u > servers[s].Memory {
			return nil, fmt.Errorf("servers[%d] (%s): holds %d rows of %d bytes (%d bytes), more than its %d bytes",
				s, servers[s].Name, u/rs, rs, u, servers[s].Memory)
		}
	}
	return p, nil
}

// PlaceEqual places spec's table over n servers of equal memory, each given
// exactly what its ranges need.
func PlaceEqual(spec Spec, n, replicas int) (*Placement, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxServers {
		return nil, fmt.Errorf("servers: %d out of range [1, %d]", n, MaxServers)
	}
	per := (spec.Buckets + uint64(n) - 1) / uint64(n) * spec.RowSize() * uint64(max(replicas, 1))
	servers := make([]ServerSpec, n)
	for i := range servers {
		servers[i] = ServerSpec{Name: fmt.Sprintf("server%d", i), Memory: per}
	}
	return Place(spec, servers, replicas)
}

// Spec returns the layout placed.
func (p *Placement) Spec() Spec { return p.spec }

// Servers returns the servers, in index order.
func (p *Placement) Servers() []ServerSpec { return p.servers }

// Replicas returns how many servers hold each range.
func (p *Placement) Replicas() int { return p.replicas }

// Ranges returns the ranges; range s has server s as its primary.
func (p *Placement) Ranges() []Range { return p.ranges }

// Used returns the bytes of server s's memory the table occupies.
func (p *Placement) Used(s int) uint64 { return p.used[s] }

// Locate returns the index of the range holding bucket b (b < Buckets).
func (p *Placement) Locate(b uint64) int {
	return sort.Search(len(p.ranges), func(i int) bool { return p.ranges[i].Hi > b })
}

// RowAddr returns the server holding copy k (0: primary) of row b and the
// row's byte offset in that server's memory.
func (p *Placement) RowAddr(b uint64, k int) (server int, off uint64) {
	r := &p.ranges[p.Locate(b)]
	h := r.Holders[k]
	return h.Server, h.Base + (b-r.Lo)*p.spec.RowSize()
}

// ClusterMemory is the Memory of a placed table: writes in table offsets go
// to every server holding the row, reads come from the first holder that
// answers. No access may span two rows.
type ClusterMemory struct {
	p    *Placement
	mems []Memory
}

// NewClusterMemory returns the Memory of p over one Memory per server.
func NewClusterMemory(p *Placement, mems []Memory) (*ClusterMemory, error) {
	if len(mems) != len(p.servers) {
		return nil, fmt.Errorf("tea: %d memories for %d servers", len(mems), len(p.servers))
	}
	return &ClusterMemory{p: p, mems: mems}, nil
}

func (m *ClusterMemory) split(off uint64, n int) (row, in uint64, err error) {
	rs := m.p.spec.RowSize()
	row, in = off/rs, off%rs
	if row >= m.p.spec.Buckets {
		return 0, 0, ErrOutOfBounds
	}
	if in+uint64(n) > rs {
		return 0, 0, ErrCrossesRow
	}
	return row, in, nil
}

// Write copies b to table offset off on every server holding that row.
func (m *ClusterMemory) Write(off uint64, b []byte) error {
	row, in, err := m.split(off, len(b))
	if err != nil {
		return err
	}
	var errs []error
	for k := range m.p.replicas {
		s, base := m.p.RowAddr(row, k)
		if err := m.mems[s].Write(base+in, b); err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", m.p.servers[s].Name, err))
		}
	}
	return errors.Join(errs...)
}

// Read fills b from table offset off, from the first holder that answers.
func (m *ClusterMemory) Read(off uint64, b []byte) error {
	row, in, err := m.split(off, len(b))
	if err != nil {
		return err
	}
	var errs []error
	for k := range m.p.replicas {
		s, base := m.p.RowAddr(row, k)
		err := m.mems[s].Read(base+in, b)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("server %s: %w", m.p.servers[s].Name, err))
	}
	return errors.Join(errs...)
}
