package rdmabench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// LatencyConfig is Fig. 8: one server, packets of each size parked in the
// scratchpad (an RDMA WRITE) before the lookup's one RDMA READ of bucket,
// shadow bucket and scratchpad.
type LatencyConfig struct {
	Keys     int           // entries in the table
	Sizes    []int         // packet sizes, bytes
	Unloaded int           // lookups one at a time, per size, for the latency
	Window   int           // lookups in flight for the throughput
	Duration time.Duration // of the throughput run, per size
	RawReads int           // raw RDMA READs of each size, one at a time
	Seed     uint64
}

// DefaultLatencyConfig is the experiment of docs/REPRODUCTION.md.
func DefaultLatencyConfig() LatencyConfig {
	return LatencyConfig{Keys: 100_000, Sizes: []int{64, 256, 512, 1024, 1500}, Unloaded: 5000, Window: 64,
		Duration: 2 * time.Second, RawReads: 5000, Seed: 1}
}

// LatencyRow is one packet size.
type LatencyRow struct {
	Size        int         `json:"packet_bytes"`
	ReadBytes   uint64      `json:"read_bytes"`    // the lookup's READ: bucket, shadow, scratchpad header and packet
	Lookup      Percentiles `json:"lookup"`        // one lookup in flight
	Loaded      Percentiles `json:"loaded"`        // Window lookups in flight
	LookupsPerS float64     `json:"lookups_per_s"` // with Window in flight
	Lost        uint64      `json:"packets_lost"`  // parked packets not read back (another lookup reused the row)
	Failed      uint64      `json:"failed"`
	RawRead     Percentiles `json:"raw_read"` // a READ of Size bytes alone
}

// Latency runs Fig. 8.
func Latency(c LatencyConfig) ([]LatencyRow, error) {
	if c.Keys < 1 || len(c.Sizes) == 0 || c.Window < 1 || c.Unloaded < 1 || c.RawReads < 1 {
		return nil, fmt.Errorf("latency: keys %d, sizes %v, window %d, unloaded %d, raw reads %d: want positive values",
			c.Keys, c.Sizes, c.Window, c.Unloaded, c.RawReads)
	}
	pad := 0
	for _, s := range c.Sizes {
		pad = max(pad, s)
	}
	cl, err := newCluster(c.Keys, 1, 1, pad, 0, 100*time.Millisecond, 7, c.Seed)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	rnd := rand.New(rand.NewPCG(c.Seed, 8))
	next := func() int { return rnd.IntN(cl.n) }
	var rows []LatencyRow
	for _, size := range c.Sizes {
		row := LatencyRow{Size: size, ReadBytes: cl.table.Spec().ReadLen(size)}
		pkt := make([]byte, size)
		for i := range pkt {
			pkt[i] = byte(i)
		}
		r, stop, err := newRun(cl, 1, time.Second, 100*time.Millisecond, 0, 0, false)
		if err != nil {
			return nil, err
		}
		if _, _, err := r.drive(cl, pkt, time.Hour, c.Unloaded, next, nil); err != nil {
			stop()
			return nil, err
		}
		stop()
		row.Lookup = r.latencies()
		row.Failed += r.failed.Load()

		r, stop, err = newRun(cl, c.Window, time.Second, 100*time.Millisecond, 0, 0, false)
		if err != nil {
			return nil, err
		}
		_, took, err := r.drive(cl, pkt, c.Duration, 0, next, nil)
		stop()
		if err != nil {
			return nil, err
		}
		row.LookupsPerS = float64(r.done.Load()) / took.Seconds()
		row.Loaded = r.latencies()
		row.Lost, row.Failed = r.lost.Load(), row.Failed+r.failed.Load()

		buf := make([]byte, size)
		lat := make([]time.Duration, c.RawReads)
		q := cl.servers[0].q
		for i := range lat {
			t0 := time.Now()
			if err := q.Read(0, 0, buf); err != nil {
				return nil, fmt.Errorf("raw read of %d bytes: %w", size, err)
			}
			lat[i] = time.Since(t0)
		}
		row.RawRead = percentiles(lat)
		rows = append(rows, row)
	}
	return rows, nil
}

// ScaleConfig is Fig. 9b: the table partitioned by contiguous bucket
// ranges over each number of Servers, looked up uniformly with Window in
// flight.
type ScaleConfig struct {
	Keys     int
	Servers  []int
	Window   int
	Duration time.Duration
	Packet   int // bytes parked per lookup
	Seed     uint64
}

// DefaultScaleConfig is the experiment of docs/REPRODUCTION.md.
func DefaultScaleConfig() ScaleConfig {
	return ScaleConfig{Keys: 100_000, Servers: []int{1, 2, 4}, Window: 128, Duration: 2 * time.Second, Packet: 64, Seed: 1}
}

// ScaleRow is one number of servers.
type ScaleRow struct {
	Servers     int       `json:"servers"`
	LookupsPerS float64   `json:"lookups_per_s"`
	PerServer   []float64 `json:"per_server_lookups_per_s"`
	Failed      uint64    `json:"failed"`
}

// Scale runs Fig. 9b.
func Scale(c ScaleConfig) ([]ScaleRow, error) {
	if c.Keys < 1 || len(c.Servers) == 0 || c.Window < 1 || c.Duration <= 0 || c.Packet < 0 {
		return nil, fmt.Errorf("scale: keys %d, servers %v, window %d, duration %v, packet %d: want positive values",
			c.Keys, c.Servers, c.Window, c.Duration, c.Packet)
	}
	var rows []ScaleRow
	for _, n := range c.Servers {
		if n < 1 || n > 64 {
			return nil, fmt.Errorf("scale: %d servers, want 1 to 64", n)
		}
		cl, err := newCluster(c.Keys, n, 1, c.Packet, 0, 100*time.Millisecond, 7, c.Seed)
		if err != nil {
			return nil, err
		}
		rnd := rand.New(rand.NewPCG(c.Seed, 9))
		r, stop, err := newRun(cl, c.Window, time.Second, 100*time.Millisecond, 0, 0, false)
		if err != nil {
			cl.close()
			return nil, err
		}
		_, took, err := r.drive(cl, make([]byte, c.Packet), c.Duration, 0, func() int { return rnd.IntN(cl.n) }, nil)
		stop()
		if err != nil {
			cl.close()
			return nil, err
		}
		row := ScaleRow{Servers: n, LookupsPerS: float64(r.done.Load()) / took.Seconds(), Failed: r.failed.Load()}
		for i := range n {
			row.PerServer = append(row.PerServer, float64(r.eng.ServerStats(i).Served.Load())/took.Seconds())
		}
		cl.close()
		rows = append(rows, row)
	}
	return rows, nil
}

// ScaleModel extends measured rows to maxServers with the paper's model:
// aggregate lookups grow linearly with servers (each server's NIC answers
// its share, §6: 138/8 × N million) until the switch's limit, here the
// rate the lookup engine reached with one server taken as per-server rate
// and limit = +Inf unless given. It returns the modelled rate for 1..max.
func ScaleModel(rows []ScaleRow, maxServers int, limit float64) []float64 {
	var perServer float64
	for _, r := range rows {
		if r.Servers == 1 {
			perServer = r.LookupsPerS
		}
	}
	out := make([]float64, maxServers)
	for i := range out {
		out[i] = float64(i+1) * perServer
		if limit > 0 {
			out[i] = min(out[i], limit)
		}
	}
	return out
}

// FailoverConfig is Fig. 10 over RDMA: a table on two software servers,
// every bucket range on both; at Kill server 0's responder is closed.
type FailoverConfig struct {
	Keys     int
	Window   int
	Duration time.Duration
	Kill     time.Duration
	Bucket   time.Duration // one row per bucket
	Timeout  time.Duration // the engine's read timeout
	Holddown time.Duration
	// AckTimeout is the RDMA requesters' ACK timeout (2 retries after it
	// the queue pair fails); 0: 20ms, so that the killed server's queue
	// pair fails soon after the kill. A loaded machine that stalls the
	// table's load for longer fails the run: tests give more.
	AckTimeout time.Duration
	Seed       uint64
}

// DefaultFailoverConfig is the experiment of docs/REPRODUCTION.md.
func DefaultFailoverConfig() FailoverConfig {
	return FailoverConfig{Keys: 100_000, Window: 64, Duration: 600 * time.Millisecond, Kill: 200 * time.Millisecond,
		Bucket: 10 * time.Millisecond, Timeout: 20 * time.Millisecond, Holddown: 50 * time.Millisecond, Seed: 1}
}

// FailoverRow is one bucket of the timeline.
type FailoverRow struct {
	Start       time.Duration `json:"start_ns"`
	LookupsPerS float64       `json:"lookups_per_s"`
	Served      [2]uint64     `json:"served"`
	Retried     uint64        `json:"retried"`
	Failed      uint64        `json:"failed"`
}

// FailoverSummary counts the whole run.
type FailoverSummary struct {
	Issued    uint64 `json:"issued"`
	Answered  uint64 `json:"answered"`
	Failed    uint64 `json:"failed"`
	Retried   uint64 `json:"retried"`
	Timeouts  uint64 `json:"read_timeouts"` // reads of server 0 the engine gave up on
	Errors    uint64 `json:"read_errors"`   // reads of server 0 its requester failed (flushed)
	LostReads uint64 `json:"late_reads"`
}

// Failover runs Fig. 10 over RDMA.
func Failover(c FailoverConfig) ([]FailoverRow, FailoverSummary, error) {
	var sum FailoverSummary
	if c.Keys < 1 || c.Window < 1 || c.Bucket <= 0 || c.Duration < c.Bucket || c.Timeout <= 0 || c.Kill < 0 || c.AckTimeout < 0 {
		return nil, sum, fmt.Errorf("failover: keys %d, window %d, bucket %v, duration %v, timeout %v, kill %v, ack timeout %v: want positive values",
			c.Keys, c.Window, c.Bucket, c.Duration, c.Timeout, c.Kill, c.AckTimeout)
	}
	ack := c.AckTimeout
	if ack == 0 {
		ack = 20 * time.Millisecond
	}
	cl, err := newCluster(c.Keys, 2, 2, 64, 0, ack, 2, c.Seed)
	if err != nil {
		return nil, sum, err
	}
	defer cl.close()
	r, stop, err := newRun(cl, c.Window, c.Timeout, c.Holddown, c.Bucket, c.Duration, false)
	if err != nil {
		return nil, sum, err
	}
	rnd := rand.New(rand.NewPCG(c.Seed, 10))
	killed := false
	at := func(el time.Duration) {
		if !killed && el >= c.Kill {
			killed = true
			cl.servers[0].kill()
		}
	}
	issued, _, err := r.drive(cl, make([]byte, 64), c.Duration, 0, func() int { return rnd.IntN(cl.n) }, at)
	stop()
	if err != nil {
		return nil, sum, err
	}
	rows := make([]FailoverRow, int(c.Duration/c.Bucket))
	r.mu.Lock()
	for i := range rows {
		b := r.buckets[i]
		rows[i] = FailoverRow{Start: time.Duration(i) * c.Bucket, Served: b.served, Retried: b.retried, Failed: b.failed,
			LookupsPerS: float64(b.served[0]+b.served[1]) / c.Bucket.Seconds()}
	}
	r.mu.Unlock()
	st := r.eng.Stats()
	s0 := r.eng.ServerStats(0)
	sum = FailoverSummary{Issued: uint64(issued), Answered: r.done.Load() - r.failed.Load(), Failed: r.failed.Load(),
		Retried: r.retried.Load(), Timeouts: s0.Timeouts.Load(), Errors: s0.Errors.Load(), LostReads: st.Late.Load()}
	return rows, sum, nil
}
