package netsim

import (
	"math"
	"math/rand/v2"
	"time"
)

// sizeCDF is the long-tailed flow size distribution of the paper's workload
// (§4.1, after Roy et al., SIGCOMM 2015): 80 % of flows below 10 MB, 90 %
// below 100 MB, the last 10 % between 100 and 300 MB. Points are (bytes,
// cumulative probability); sizes between points are log-uniform.
var sizeCDF = [...]struct {
	bytes float64
	p     float64
}{
	{1e3, 0}, {1e4, 0.15}, {1e5, 0.45}, {1e6, 0.65}, {1e7, 0.80}, {1e8, 0.90}, {3e8, 1},
}

// SampleSize draws a flow size from the workload's distribution.
func SampleSize(r *rand.Rand) int64 {
	u := r.Float64()
	for i := 1; i < len(sizeCDF); i++ {
		a, b := sizeCDF[i-1], sizeCDF[i]
		if u <= b.p {
			x := (u - a.p) / (b.p - a.p)
			return int64(math.Exp(math.Log(a.bytes) + x*(math.Log(b.bytes)-math.Log(a.bytes))))
		}
	}
	return int64(sizeCDF[len(sizeCDF)-1].bytes)
}

// MeanSize is the distribution's mean in bytes.
func MeanSize() float64 {
	m := 0.0
	for i := 1; i < len(sizeCDF); i++ {
		a, b := sizeCDF[i-1], sizeCDF[i]
		// Mean of a log-uniform variable on [a, b]: (b−a)/ln(b/a).
		m += (b.p - a.p) * (b.bytes - a.bytes) / math.Log(b.bytes/a.bytes)
	}
	return m
}

// Workload is background traffic: flows between random host pairs with
// sizes from the long-tailed distribution, arriving as a Poisson process
// whose rate makes the offered load Load × hosts × line rate. The window
// starts in steady state: Poisson(Load × hosts) flows are already running
// at time 0.
type Workload struct {
	Load float64       // offered load per host, fraction of the line rate (0..1)
	Gbps float64       // host line rate (default 100)
	Span time.Duration // arrivals over [0, Span)
}

// Add adds the workload's flows to s, drawing from r, and returns them.
func (w Workload) Add(s *Sim, r *rand.Rand) ([]*Flow, error) {
	if w.Load <= 0 {
		return nil, nil
	}
	gbps := w.Gbps
	if gbps == 0 {
		gbps = DefaultGbps
	}
	hosts := s.topo.Hosts()
	pair := func() (NodeID, NodeID) {
		a := r.IntN(len(hosts))
		b := r.IntN(len(hosts) - 1)
		if b >= a {
			b++
		}
		return hosts[a], hosts[b]
	}
	var out []*Flow
	add := func(at time.Duration) error {
		src, dst := pair()
		f, err := s.AddFlow(Flow{Src: src, Dst: dst, Start: at, Size: SampleSize(r), Tag: "background"})
		if err == nil {
			out = append(out, f)
		}
		return err
	}
	// Steady state at 0: by Little's law a flow lasts mean/line rate on
	// average, so Load × hosts flows run at once.
	for range poisson(r, w.Load*float64(len(hosts))) {
		if err := add(time.Duration(r.Float64() * float64(10*time.Microsecond))); err != nil {
			return nil, err
		}
	}
	// Arrivals: λ = Load × hosts × rate / mean size.
	lambda := w.Load * float64(len(hosts)) * gbps * 1e9 / 8 / MeanSize() // flows per second
	for t := 0.0; ; {
		t += r.ExpFloat64() / lambda
		at := time.Duration(t * 1e9)
		if at >= w.Span {
			break
		}
		if err := add(at); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// poisson draws from a Poisson distribution of mean m (Knuth; m is small).
func poisson(r *rand.Rand, m float64) int {
	l, k, p := math.Exp(-m), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
