package reporter

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/dta-go/dta/wire/intreport"
)

// INTMix is what an INTGenerator sends.
type INTMix uint8

// INT streams.
const (
	INTMD     INTMix = iota + 1 // INT-MD: the sink's report with the stack of the hops before it
	INTPerHop                   // INT-XD/MX: one report per hop, its TTL giving the hop
	INTDrops                    // drop reports (D flag, drop reason)
	INTMixed                    // INT-MD, with 1 % drop reports
)

// ParseINTMix parses md, postcards, drops or mixed.
func ParseINTMix(s string) (INTMix, error) {
	for m, n := range map[INTMix]string{INTMD: "md", INTPerHop: "postcards", INTDrops: "drops", INTMixed: "mixed"} {
		if s == n {
			return m, nil
		}
	}
	return 0, fmt.Errorf("INT stream %q: want md, postcards, drops or mixed", s)
}

// Defaults of INT reports.
const (
	// INTPort is the UDP destination port (INT_TBD) the INT generator marks
	// INT over TCP/UDP with, as the INT v2.1 example does with a new UDP
	// header (IANA has assigned none).
	INTPort = 5000
	// INTInitialTTL is the TTL the generator's hosts send with.
	INTInitialTTL = 64
	// INTInstructions asks each hop for its node id, hop latency and queue.
	INTInstructions = 1<<15 | 1<<13 | 1<<12
)

// INTGenerator yields a deterministic stream of P4.org telemetry report
// packets (version 2.0) describing the generator's fat-tree flows: hop
// latencies and queue occupancies that rise on one congested switch, as the
// Generator's events do. Not safe for concurrent use.
type INTGenerator struct {
	g   *Generator
	mix INTMix
	seq uint32
	pc  struct {
		hops    [5]uint32
		n, next int
		f       *flow
	} // postcards: the path being reported
	buf  []byte
	pkt  []byte
	hops []intreport.Metadata
}

// NewINTGenerator returns a generator of mix over cfg's network (cfg.Kind
// is ignored).
func NewINTGenerator(cfg GenConfig, mix INTMix) (*INTGenerator, error) {
	cfg.Kind = INTPath
	g, err := NewGenerator(cfg)
	if err != nil {
		return nil, err
	}
	if mix < INTMD || mix > INTMixed {
		return nil, fmt.Errorf("reporter: INT mix %d", mix)
	}
	return &INTGenerator{g: g, mix: mix}, nil
}

// Next returns the next telemetry report packet (a UDP payload), valid
// until the next call.
func (t *INTGenerator) Next() []byte {
	switch t.mix {
	case INTPerHop:
		return t.postcard()
	case INTDrops:
		return t.drop()
	case INTMixed:
		if t.g.rng.intn(100) == 0 {
			return t.drop()
		}
	}
	return t.md()
}

func flowOf(f *flow) intreport.Flow {
	k := f.key
	return intreport.Flow{Src: netip.AddrFrom4([4]byte(k[0:4])), Dst: netip.AddrFrom4([4]byte(k[4:8])),
		SrcPort: binary.BigEndian.Uint16(k[8:]), DstPort: binary.BigEndian.Uint16(k[10:]), Proto: k[12]}
}

// sample is a switch's hop latency (ns) and queue occupancy (cells): the
// congested switch's grow with the generator's congestion depth.
func (t *INTGenerator) sample(sw uint32) (latency, occupancy uint32, queue uint8) {
	g := t.g
	latency, occupancy = uint32(500+g.rng.intn(1500)), uint32(g.rng.intn(64))
	if sw == g.hot {
		latency += uint32(20000 + g.rng.intn(20000))
		occupancy += uint32(2000 + g.rng.intn(4000))
	}
	return latency, occupancy, uint8(sw % 8)
}

func (t *INTGenerator) group(node uint32) []byte {
	t.seq = (t.seq + 1) & intreport.MaxSeq
	return intreport.GroupHeader{NodeID: node, Seq: t.seq}.AppendTo(t.pkt[:0])
}

// md is the last hop's report: its own latency and queue in the report,
// the hops before it in the packet's INT-MD stack.
func (t *INTGenerator) md() []byte {
	f := t.g.pickFlow()
	var path [5]uint32
	n := t.g.path(f, &path)
	t.hops = t.hops[:0]
	for i := n - 2; i >= 0; i-- { // most recent first
		lat, occ, q := t.sample(path[i])
		t.hops = append(t.hops, intreport.Metadata{NodeID: path[i], HopLatency: lat, QueueID: q, QueueOccupancy: occ})
	}
	p := intreport.Packet{Flow: flowOf(f), TTL: uint8(INTInitialTTL - n + 1), INTPort: INTPort,
		INT: &intreport.MDHeader{HopML: 3, RemainingHops: uint8(8 - len(t.hops)), Instructions: INTInstructions}, Hops: t.hops}
	sink := path[n-1]
	lat, occ, q := t.sample(sink)
	return t.report(sink, &p, intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency) | intreport.Mask(intreport.BitQueue),
		HopLatency: lat, QueueID: q, QueueOccupancy: occ}, false)
}

// postcard is one hop's own report of a packet without a stack.
func (t *INTGenerator) postcard() []byte {
	pc := &t.pc
	if pc.f == nil || pc.next >= pc.n {
		pc.f = t.g.pickFlow()
		pc.n, pc.next = t.g.path(pc.f, &pc.hops), 0
	}
	sw := pc.hops[pc.next]
	pc.next++
	p := intreport.Packet{Flow: flowOf(pc.f), TTL: uint8(INTInitialTTL - pc.next + 1)}
	lat, occ, q := t.sample(sw)
	return t.report(sw, &p, intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency) | intreport.Mask(intreport.BitQueue),
		HopLatency: lat, QueueID: q, QueueOccupancy: occ}, false)
}

// drop is a report of a dropped packet from a switch on its path.
func (t *INTGenerator) drop() []byte {
	f := t.g.pickFlow()
	var path [5]uint32
	n := t.g.path(f, &path)
	sw := path[t.g.rng.intn(n)]
	if t.g.rng.intn(2) == 0 {
		sw = t.g.hot // congestion drops cluster on the hot switch
	}
	reasons := [...]uint8{71, 71, 71, 6, 15, 43} // mostly tail drops
	p := intreport.Packet{Flow: flowOf(f), TTL: INTInitialTTL - 1}
	return t.report(sw, &p, intreport.Metadata{Bits: intreport.Mask(intreport.BitDrop),
		DropQueueID: uint8(sw % 8), DropReason: reasons[t.g.rng.intn(len(reasons))]}, true)
}

func (t *INTGenerator) report(node uint32, p *intreport.Packet, own intreport.Metadata, dropped bool) []byte {
	var err error
	if t.buf, err = intreport.AppendPacket(t.buf[:0], p); err != nil {
		panic("reporter: INT generator built a bad packet: " + err.Error()) // the generator's own bug
	}
	r := intreport.Report{Type: intreport.RepINT, Inner: intreport.InIPv4, Tracked: true, Dropped: dropped, Metadata: own, Contents: t.buf}
	t.pkt = t.group(node)
	if t.pkt, err = intreport.AppendReport(t.pkt, &r); err != nil {
		panic("reporter: INT generator built a bad report: " + err.Error())
	}
	return t.pkt
}
