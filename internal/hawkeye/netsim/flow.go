package netsim

import (
	"fmt"
	"math"
	"net/netip"
	"time"
)

// RoCEv2Port is the UDP destination port of RoCEv2.
const RoCEv2Port = 4791

// FiveTuple identifies a flow: IPv4 addresses, UDP ports, IP protocol.
type FiveTuple struct {
	SrcIP, DstIP     uint32
	SrcPort, DstPort uint16
	Proto            uint8
}

// String returns "udp,10.0.0.1:49152,10.0.0.2:4791".
func (t FiveTuple) String() string {
	proto := fmt.Sprint(t.Proto)
	switch t.Proto {
	case 6:
		proto = "tcp"
	case 17:
		proto = "udp"
	}
	return fmt.Sprintf("%s,%s:%d,%s:%d", proto, ipString(t.SrcIP), t.SrcPort, ipString(t.DstIP), t.DstPort)
}

func ipString(ip uint32) string {
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}).String()
}

// Hash returns a 32-bit hash of the tuple (FNV-1a over its 13 bytes), the
// ECMP and telemetry slot hash of the simulated switches.
func (t FiveTuple) Hash() uint32 {
	h := uint32(2166136261)
	mix := func(b byte) { h ^= uint32(b); h *= 16777619 }
	for _, v := range [...]uint32{t.SrcIP, t.DstIP} {
		mix(byte(v >> 24))
		mix(byte(v >> 16))
		mix(byte(v >> 8))
		mix(byte(v))
	}
	for _, v := range [...]uint16{t.SrcPort, t.DstPort} {
		mix(byte(v >> 8))
		mix(byte(v))
	}
	mix(t.Proto)
	return h
}

// Flow is one RDMA flow (a queue pair's traffic) from one host to another.
// The exported fields are its specification, set before AddFlow; the rest is
// the simulation's state.
type Flow struct {
	ID    int       // index in Sim.Flows, set by AddFlow
	Tuple FiveTuple // set by AddFlow: RoCEv2 UDP, source port 49152+ID
	Src   NodeID    // sending host
	Dst   NodeID    // receiving host
	Start time.Duration
	// Size is the bytes to send; 0 sends until the run ends.
	Size int64
	// MaxGbps caps the sending rate (an application-limited flow); 0 means
	// the line rate.
	MaxGbps float64
	// Route, when set, is the flow's path: the egress port at every switch
	// it crosses, in order (a routing misconfiguration or a pinned path);
	// nil routes by ECMP.
	Route []PortRef
	// Tag says what the flow is for in its scenario ("background", "burst",
	// "loop", "victim", ...).
	Tag string

	hash      uint32
	sent      int64
	pkts      uint32
	delivered int64
	nextAvail time.Duration
	sendDone  bool
	finish    time.Duration
	lastCNP   time.Duration
	cnpSeen   bool
	revDelay  time.Duration
	baseRTT   time.Duration
	// inflight holds send times of packets not yet delivered, oldest first.
	inflight    []inflight
	inflightOff int
	// DCQCN state.
	rc, rt, alpha float64
	stage         int
	lastInc       time.Duration
	lastAlpha     time.Duration
	cnps          int
}

type inflight struct {
	seq uint32
	at  time.Duration
}

// Delivered returns the bytes the receiver got.
func (f *Flow) Delivered() int64 { return f.delivered }

// Sent returns the bytes the sender put on the wire.
func (f *Flow) Sent() int64 { return f.sent }

// Finish returns when the last byte arrived, or 0 while the flow runs.
func (f *Flow) Finish() time.Duration { return f.finish }

// BaseRTT returns the flow's round-trip time on an idle path: propagation
// both ways plus one MTU's serialization per hop.
func (f *Flow) BaseRTT() time.Duration { return f.baseRTT }

// RateGbps returns the congestion control's current rate.
func (f *Flow) RateGbps() float64 { return f.rc }

// CNPs returns the congestion notifications the sender received.
func (f *Flow) CNPs() int { return f.cnps }

// OldestUnacked returns the send time of the oldest packet not yet
// acknowledged and whether there is one.
func (f *Flow) OldestUnacked() (time.Duration, bool) {
	if f.inflightOff >= len(f.inflight) {
		return 0, false
	}
	return f.inflight[f.inflightOff].at, true
}

// DCQCN configures the senders' congestion control (Zhu et al., SIGCOMM
// 2015): a CNP cuts the rate Rc to Rc·(1−α/2) and raises α to (1−g)α+g;
// every Timer without a CNP α decays to (1−g)α and the rate recovers: F
// stages of fast recovery Rc = (Rt+Rc)/2, then additive (Rt += AI) and then
// hyper (Rt += HAI) increase.
type DCQCN struct {
	G       float64
	Timer   time.Duration
	AIGbps  float64
	HAIGbps float64
	F       int
	MinGbps float64
}

// DefaultDCQCN returns g = 1/256, 55 µs timers, AI 5 Gbps, HAI 50 Gbps,
// F = 5, a floor of 0.1 Gbps.
func DefaultDCQCN() DCQCN {
	return DCQCN{G: 1.0 / 256, Timer: 55 * time.Microsecond, AIGbps: 5, HAIGbps: 50, F: 5, MinGbps: 0.1}
}

// ccCatchUp applies the timers that elapsed up to now.
func (f *Flow) ccCatchUp(now time.Duration, c *DCQCN, line float64) {
	if f.rc >= line {
		return
	}
	if k := int64((now - f.lastAlpha) / c.Timer); k > 0 {
		f.alpha *= math.Pow(1-c.G, float64(k))
		f.lastAlpha += time.Duration(k) * c.Timer
	}
	for now-f.lastInc >= c.Timer && f.rc < line {
		f.lastInc += c.Timer
		f.stage++
		switch {
		case f.stage <= c.F:
		case f.stage <= 2*c.F:
			f.rt += c.AIGbps
		default:
			f.rt += c.HAIGbps
		}
		f.rt = min(f.rt, line)
		f.rc = min((f.rt+f.rc)/2, line)
		if line-f.rc < 1e-3 {
			f.rc = line
		}
	}
	if f.rc >= line {
		f.lastInc, f.lastAlpha = now, now
	}
}

// ccCut reacts to a CNP.
func (f *Flow) ccCut(now time.Duration, c *DCQCN, line float64) {
	f.ccCatchUp(now, c, line)
	f.cnps++
	f.rt = f.rc
	f.rc = max(f.rc*(1-f.alpha/2), c.MinGbps)
	f.alpha = (1-c.G)*f.alpha + c.G
	f.stage = 0
	f.lastInc, f.lastAlpha = now, now
}

// rate returns the sending rate in Gbps.
func (f *Flow) rate(line float64) float64 {
	r := min(f.rc, line)
	if f.MaxGbps > 0 {
		r = min(r, f.MaxGbps)
	}
	return r
}
