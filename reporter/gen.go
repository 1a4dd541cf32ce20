package reporter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/dta-go/dta/wire/dta"
)

// Kind is a kind of generated telemetry stream, named after the paper's
// typical use of each primitive (Table 2).
type Kind uint8

// The generated streams.
const (
	// INTPath is INT-MD path tracing with Key-Write: key = the flow's 13-byte
	// IPv4 5-tuple, value = its path as 5 hops × 4-byte switch ids (20 B,
	// zero after the last hop). Needs a Key-Write store with 20-byte values.
	INTPath Kind = iota + 1
	// INTPostcards is INT-XD/MX postcards with Postcarding: one postcard per
	// hop of a flow's path (key = 5-tuple, hop 1..length, value = 4-byte
	// switch id, path length carried), the postcards of a few flows
	// interleaved as they reach the collector from different switches.
	INTPostcards
	// Events is Append: INT congestion events (4-byte entries: switch id in
	// the top 20 bits, queue depth in KiB in the low 12, bursty on a hot
	// switch) or, with GenConfig.EntrySize 18, NetSeer packet-loss events
	// (5-tuple, switch id, 1-byte drop reason); each switch reports into
	// one of GenConfig.Lists lists.
	Events
	// Counters is per-host byte counters with Key-Increment: key = the
	// sending host's IPv4 address as a 32-bit key, delta = bytes sent since
	// its last report; a few heavy hitters send most bytes.
	Counters
)

// Kinds lists the generated streams.
var Kinds = [...]Kind{INTPath, INTPostcards, Events, Counters}

// String returns the command-line name of k.
func (k Kind) String() string {
	switch k {
	case INTPath:
		return "int-path"
	case INTPostcards:
		return "postcards"
	case Events:
		return "events"
	case Counters:
		return "counters"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Primitive returns the primitive the stream feeds.
func (k Kind) Primitive() dta.Primitive {
	switch k {
	case INTPath:
		return dta.KeyWrite
	case INTPostcards:
		return dta.Postcard
	case Events:
		return dta.Append
	case Counters:
		return dta.KeyIncrement
	}
	return 0
}

// ParseKind maps a command-line name to a Kind.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if s == k.String() {
			return k, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.String()
	}
	return 0, fmt.Errorf("unknown stream %q (want %s)", s, strings.Join(names, ", "))
}

// Generator limits and defaults.
const (
	DefaultFatTreeK   = 16      // fat-tree arity: 1024 hosts, 320 switches
	MaxFatTreeK       = 64      // 65536 hosts, 5120 switches
	DefaultFlows      = 4096    // live flows
	MaxFlows          = 1 << 20 // largest GenConfig.Flows
	DefaultLists      = 16      // Append lists, as in the default Append store
	DefaultRedundancy = 2       // copies N, the paper's usual compromise
	inflightPaths     = 8       // postcard paths interleaved
	reportArena       = 64      // bytes of key and value per generated report
)

// GenConfig configures a Generator. Zero values select the defaults.
//
// The network is a k-ary fat tree: k pods of k/2 edge and k/2 aggregation
// switches, (k/2)² core switches, k/2 hosts per edge switch, host addresses
// 10.pod.edge.(2+i). Switch ids are layer<<16 | pod<<8 | index for edge
// (layer 1) and aggregation (layer 2) switches and 3<<16 | index for core
// switches: all below 2^18, inside the default Postcarding value set. A
// flow's path is 1 hop (same edge switch), 3 (same pod) or 5 (across pods),
// chosen by ECMP on the 5-tuple; a flow is occasionally rerouted.
type GenConfig struct {
	Kind       Kind   // the stream; required
	Seed       uint64 // the same seed and config give the same stream
	Store      uint16 // target store id; 0 = the primitive's default store
	Redundancy int    // Key-Write, Key-Increment: copies N, 1..dta.MaxRedundancy; 0 = 2
	FatTreeK   int    // fat-tree arity k, even, 4..MaxFatTreeK; 0 = DefaultFatTreeK
	Flows      int    // live flows, 1..MaxFlows; 0 = DefaultFlows
	EntrySize  int    // Events: 4 (congestion) or 18 (loss); 0 = 4
	Lists      int    // Events: lists, 1..2^24; 0 = DefaultLists
}

func (c GenConfig) withDefaults() GenConfig {
	if c.Redundancy == 0 {
		c.Redundancy = DefaultRedundancy
	}
	if c.FatTreeK == 0 {
		c.FatTreeK = DefaultFatTreeK
	}
	if c.Flows == 0 {
		c.Flows = DefaultFlows
	}
	if c.EntrySize == 0 {
		c.EntrySize = 4
	}
	if c.Lists == 0 {
		c.Lists = DefaultLists
	}
	return c
}

// Validate reports every field that is out of range, naming the field.
func (c GenConfig) Validate() error {
	var errs []error
	if c.Kind.Primitive() == 0 {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.Kind = %d is not a stream", c.Kind))
	}
	if c.Redundancy < 0 || c.Redundancy > dta.MaxRedundancy {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.Redundancy = %d, want 0 (default) or 1 to %d", c.Redundancy, dta.MaxRedundancy))
	}
	if k := c.FatTreeK; k != 0 && (k < 4 || k > MaxFatTreeK || k%2 != 0) {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.FatTreeK = %d, want an even number from 4 to %d", k, MaxFatTreeK))
	}
	if c.Flows < 0 || c.Flows > MaxFlows {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.Flows = %d, want 0 (default) or 1 to %d", c.Flows, MaxFlows))
	}
	if c.EntrySize != 0 && c.EntrySize != 4 && c.EntrySize != 18 {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.EntrySize = %d, want 4 (congestion events) or 18 (loss events)", c.EntrySize))
	}
	if c.Lists < 0 || c.Lists > 1<<24 {
		errs = append(errs, fmt.Errorf("reporter: GenConfig.Lists = %d, want 0 (default) or 1 to %d", c.Lists, 1<<24))
	}
	return errors.Join(errs...)
}

// flow is one live flow of the generator.
type flow struct {
	key      [13]byte // 5-tuple wire form
	src, dst int      // host indices
	route    uint8    // bumped when the flow is rerouted
}

// path is one postcard path being reported hop by hop.
type path struct {
	key  [13]byte
	hops [5]uint32
	n    int // path length
	next int // next hop to report, 0-based; n = done
}

// Generator yields a deterministic stream of realistic reports. It is not
// safe for concurrent use; give every goroutine its own.
type Generator struct {
	cfg   GenConfig
	rng   splitMix
	k     int // fat-tree arity
	half  int // k/2
	hosts int
	flows []flow
	arena []byte

	inflight [inflightPaths]path // postcards
	hot      uint32              // events: the congested switch
	depth    int                 // events: its queue depth, KiB
}

// NewGenerator returns a generator of the stream cfg describes.
func NewGenerator(cfg GenConfig) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &Generator{cfg: cfg, rng: splitMix(cfg.Seed ^ uint64(cfg.Kind)<<56), k: cfg.FatTreeK, half: cfg.FatTreeK / 2}
	g.hosts = g.k * g.half * g.half
	g.flows = make([]flow, cfg.Flows)
	for i := range g.flows {
		g.newFlow(&g.flows[i])
	}
	g.hot = g.randomSwitch()
	return g, nil
}

// Kind returns the stream the generator yields.
func (g *Generator) Kind() Kind { return g.cfg.Kind }

// Fill overwrites every element of rs with the next reports of the stream
// and returns len(rs). The reports' Key and Value point into memory the
// generator owns, valid until the next Fill; they are ready for
// Reporter.Send. Fill allocates only when rs is longer than in every
// earlier call.
func (g *Generator) Fill(rs []dta.Report) int {
	if need := len(rs) * reportArena; cap(g.arena) < need {
		g.arena = make([]byte, need)
	}
	g.arena = g.arena[:cap(g.arena)]
	for i := range rs {
		mem := g.arena[i*reportArena : (i+1)*reportArena : (i+1)*reportArena]
		switch g.cfg.Kind {
		case INTPath:
			g.intPath(&rs[i], mem)
		case INTPostcards:
			g.postcard(&rs[i], mem)
		case Events:
			g.event(&rs[i], mem)
		case Counters:
			g.counter(&rs[i], mem)
		}
	}
	return len(rs)
}

func (g *Generator) intPath(r *dta.Report, mem []byte) {
	f := g.pickFlow()
	key := mem[:13]
	copy(key, f.key[:])
	var hops [5]uint32
	g.path(f, &hops)
	val := mem[16:36]
	for i, h := range hops {
		binary.BigEndian.PutUint32(val[4*i:], h)
	}
	*r = KeyWrite(dta.Key{Bytes: key}, val, g.cfg.Redundancy, g.cfg.Store)
}

func (g *Generator) postcard(r *dta.Report, mem []byte) {
	p := &g.inflight[g.rng.intn(inflightPaths)]
	if p.next >= p.n {
		f := g.pickFlow()
		for g.inFlight(f) { // one sampled packet per flow at a time
			f = g.pickFlow()
		}
		p.key = f.key
		p.n = g.path(f, &p.hops)
		p.next = 0
	}
	key := mem[:13]
	copy(key, p.key[:])
	val := mem[16:20]
	binary.BigEndian.PutUint32(val, p.hops[p.next])
	p.next++
	*r = Postcard(dta.Key{Bytes: key}, p.next, p.n, val, g.cfg.Store)
}

// inFlight reports whether a path of f is being reported.
func (g *Generator) inFlight(f *flow) bool {
	for i := range g.inflight {
		if p := &g.inflight[i]; p.next < p.n && p.key == f.key {
			return true
		}
	}
	return false
}

// Drop reasons of loss events (NetSeer's categories).
const (
	dropCongestion = 1
	dropACL        = 2
	dropCorruption = 3
	dropRouting    = 4
	dropPipeline   = 5
)

func (g *Generator) event(r *dta.Report, mem []byte) {
	if g.cfg.EntrySize == 18 {
		f := g.pickFlow()
		var hops [5]uint32
		n := g.path(f, &hops)
		sw := hops[g.rng.intn(n)]
		reason := byte(dropCongestion)
		switch x := g.rng.intn(100); {
		case x < 10:
			reason = dropACL
		case x < 15:
			reason = dropCorruption
		case x < 20:
			reason = dropRouting
		case x < 30:
			reason = dropPipeline
		}
		val := mem[:18]
		copy(val, f.key[:])
		binary.BigEndian.PutUint32(val[13:], sw)
		val[17] = reason
		*r = Append(g.list(sw), val, g.cfg.Store)
		return
	}
	// Congestion comes in bursts: most events come from one hot switch
	// whose queue depth wanders; the hot spot moves now and then.
	if g.rng.intn(64) == 0 {
		g.hot, g.depth = g.randomSwitch(), 0
	}
	sw, depth := g.hot, 0
	if g.rng.intn(5) == 0 {
		sw, depth = g.randomSwitch(), 16+g.rng.intn(256)
	} else {
		g.depth = min(max(g.depth+g.rng.intn(129)-64, 16), 4095)
		depth = g.depth
	}
	val := mem[:4]
	binary.BigEndian.PutUint32(val, sw<<12|uint32(depth))
	*r = Append(g.list(sw), val, g.cfg.Store)
}

func (g *Generator) counter(r *dta.Report, mem []byte) {
	// Heavy hitters: host ranks are skewed towards 0, then scattered over
	// the tree by a multiplier coprime with the host count.
	u := g.rng.float()
	h := int(uint64(float64(g.hosts)*u*u*u) * 1000003 % uint64(g.hosts))
	key := mem[:4]
	ip := g.hostIP(h)
	copy(key, ip[:])
	pkts := 1 + g.rng.intn(64)
	var size int
	switch x := g.rng.intn(10); {
	case x < 4:
		size = 64 + g.rng.intn(40) // ACKs
	case x < 9:
		size = 1500
	default:
		size = 100 + g.rng.intn(1400)
	}
	*r = KeyIncrement(dta.Key{Compat: true, Bytes: key}, uint64(pkts*size), g.cfg.Redundancy, g.cfg.Store)
}

// pickFlow returns the flow of the next report: mostly a live flow, popular
// ones more often; sometimes a new flow replacing a live one; sometimes a
// live flow after a reroute.
func (g *Generator) pickFlow() *flow {
	if g.rng.intn(8) == 0 {
		f := &g.flows[g.rng.intn(len(g.flows))]
		g.newFlow(f)
		return f
	}
	u := g.rng.float()
	f := &g.flows[int(float64(len(g.flows))*u*u)]
	if g.rng.intn(128) == 0 {
		f.route++
	}
	return f
}

// newFlow draws a new flow: 10 % within a rack, 30 % within a pod, the rest
// across pods; 85 % TCP to common service ports, the rest UDP.
func (g *Generator) newFlow(f *flow) {
	f.src = g.rng.intn(g.hosts)
	perEdge, perPod := g.half, g.half*g.half
	switch x := g.rng.intn(10); {
	case x == 0:
		f.dst = f.src - f.src%perEdge + g.rng.intn(perEdge)
	case x < 4:
		f.dst = f.src - f.src%perPod + g.rng.intn(perPod)
	default:
		pod := (f.src/perPod + 1 + g.rng.intn(g.k-1)) % g.k
		f.dst = pod*perPod + g.rng.intn(perPod)
	}
	if f.dst == f.src {
		f.dst = f.src - f.src%perEdge + (f.src%perEdge+1)%perEdge
	}
	f.route = 0
	proto, dport := uint8(6), tcpPorts[g.rng.intn(len(tcpPorts))]
	if g.rng.intn(100) < 15 {
		proto, dport = 17, udpPorts[g.rng.intn(len(udpPorts))]
	}
	sport := uint16(32768 + g.rng.intn(60999-32768+1))
	s, d := g.hostIP(f.src), g.hostIP(f.dst)
	copy(f.key[0:4], s[:])
	copy(f.key[4:8], d[:])
	binary.BigEndian.PutUint16(f.key[8:], sport)
	binary.BigEndian.PutUint16(f.key[10:], dport)
	f.key[12] = proto
}

var (
	tcpPorts = [...]uint16{443, 443, 443, 80, 8080, 3306, 6379, 9092, 5432, 22}
	udpPorts = [...]uint16{53, 123, 443, 4789}
)

// hostIP returns 10.pod.edge.(2+i) for host index h.
func (g *Generator) hostIP(h int) [4]byte {
	pod, edge, i := h/(g.half*g.half), h/g.half%g.half, h%g.half
	return [4]byte{10, byte(pod), byte(edge), byte(2 + i)}
}

// path writes f's switch ids into hops (zero after the last) and returns
// the path length.
func (g *Generator) path(f *flow, hops *[5]uint32) int {
	*hops = [5]uint32{}
	perPod := g.half * g.half
	sp, se := f.src/perPod, f.src/g.half%g.half
	dp, de := f.dst/perPod, f.dst/g.half%g.half
	// ECMP: the flow hash and the reroute count pick the uplinks.
	e := ecmp(f.key[:], f.route)
	a, c := int(e%uint64(g.half)), int(e>>32%uint64(g.half))
	hops[0] = switchID(1, sp, se)
	switch {
	case sp == dp && se == de:
		return 1
	case sp == dp:
		hops[1], hops[2] = switchID(2, sp, a), switchID(1, dp, de)
		return 3
	}
	hops[1] = switchID(2, sp, a)
	hops[2] = 3<<16 | uint32(a*g.half+c)
	hops[3], hops[4] = switchID(2, dp, a), switchID(1, dp, de)
	return 5
}

func switchID(layer, pod, i int) uint32 { return uint32(layer<<16 | pod<<8 | i) }

func (g *Generator) randomSwitch() uint32 {
	n := g.rng.intn(g.k*g.k + g.half*g.half) // edge+agg: k pods × k; core: (k/2)²
	if n < g.k*g.k {
		return switchID(1+n%2, n/g.k, n%g.k/2)
	}
	return 3<<16 | uint32(n-g.k*g.k)
}

// list maps a switch to the list its events go to.
func (g *Generator) list(sw uint32) uint32 {
	return uint32(uint64(sw) * 0x9E3779B97F4A7C15 >> 32 % uint64(g.cfg.Lists))
}

func ecmp(key []byte, route uint8) uint64 {
	h := uint64(route) + 0x9E3779B97F4A7C15
	for _, b := range key {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return mix64(h)
}

// splitMix is SplitMix64: small, fast, and the same on every platform, so a
// seed names one stream for good.
type splitMix uint64

func (s *splitMix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	return mix64(uint64(*s))
}

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// intn returns a number in [0, n), n > 0.
func (s *splitMix) intn(n int) int {
	hi, _ := bits.Mul64(s.next(), uint64(n))
	return int(hi)
}

// float returns a number in [0, 1).
func (s *splitMix) float() float64 { return float64(s.next()>>11) / (1 << 53) }
