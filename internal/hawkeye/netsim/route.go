package netsim

import "fmt"

// RouteVia returns an explicit route (for Flow.Route) from host src to host
// dst through the switches via, in order: the shortest path between each
// waypoint and the next (the lowest port number among equal ones). The
// first switch is src's; listing it is optional.
func (s *Sim) RouteVia(src, dst NodeID, via ...NodeID) ([]PortRef, error) {
	if !s.topo.IsHost(src) || !s.topo.IsHost(dst) {
		return nil, fmt.Errorf("netsim: RouteVia from %d to %d: want hosts", src, dst)
	}
	at := s.nodes[src].ports[0].peer.Node
	if len(via) > 0 && via[0] == at {
		via = via[1:]
	}
	var route []PortRef
	for _, w := range append(via, dst) {
		seg, err := s.shortest(at, w)
		if err != nil {
			return nil, err
		}
		route = append(route, seg...)
		at = w
	}
	return route, nil
}

// shortest returns the egress ports of a shortest path from switch a to
// node b through switches only.
func (s *Sim) shortest(a, b NodeID) ([]PortRef, error) {
	prev := make([]PortRef, len(s.nodes))
	for i := range prev {
		prev[i] = PortRef{None, -1}
	}
	prev[a] = PortRef{a, -1}
	queue := []NodeID{a}
	for len(queue) > 0 && prev[b].Node == None {
		u := queue[0]
		queue = queue[1:]
		for pi, p := range s.nodes[u].ports {
			v := p.peer.Node
			if prev[v].Node != None || (s.nodes[v].host && v != b) {
				continue
			}
			prev[v] = PortRef{u, pi}
			if v != b {
				queue = append(queue, v)
			}
		}
	}
	if prev[b].Node == None {
		return nil, fmt.Errorf("netsim: no path from %s to %s", s.topo.Name(a), s.topo.Name(b))
	}
	var rev []PortRef
	for v := b; v != a; v = prev[v].Node {
		rev = append(rev, prev[v])
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev, nil
}
