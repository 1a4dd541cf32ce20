package bench

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// Bounds of a Config.
const (
	MaxDuration = 60 * time.Second // measured window of one run
	// MinDuration is the shortest measured window: shorter ones measure
	// the start of a run (its first wake-ups and page faults), not its rate.
	MinDuration = 100 * time.Millisecond
	MaxWarmup   = 10 * time.Second
	MaxSenders  = 16
	MaxReaders  = 16
)

// Mode is how reports travel: how many per datagram, and how they are read.
type Mode struct {
	// PerDatagram is the number of reports per datagram: 1 sends
	// single-report datagrams; 0 fills OpBatch datagrams up to the MTU
	// (MaxPerDatagram); any other number fills OpBatch datagrams with that
	// many (capped at MaxPerDatagram).
	PerDatagram int
	// Recvmmsg reads up to 64 datagrams per system call; false reads one
	// per call (udp.Config.Batched).
	Recvmmsg bool
}

// String names the mode: single or multi, then recvmmsg or read.
func (m Mode) String() string {
	s := "multi"
	switch m.PerDatagram {
	case 1:
		s = "single"
	case 0:
	default:
		s = "multi" + strconv.Itoa(m.PerDatagram)
	}
	if m.Recvmmsg {
		return s + "/recvmmsg"
	}
	return s + "/read"
}

// ParseMode parses the names String prints: single, multi or multiN, then
// /recvmmsg or /read.
func ParseMode(s string) (Mode, error) {
	var m Mode
	per, recv, ok := strings.Cut(s, "/")
	if !ok {
		return m, fmt.Errorf("mode %q: want single|multi|multiN, then /recvmmsg or /read", s)
	}
	switch recv {
	case "recvmmsg":
		m.Recvmmsg = true
	case "read":
	default:
		return m, fmt.Errorf("mode %q: want /recvmmsg or /read after the datagram kind", s)
	}
	switch {
	case per == "single":
		m.PerDatagram = 1
	case per == "multi":
	case len(per) > 5 && per[:5] == "multi":
		n, err := strconv.Atoi(per[5:])
		if err != nil || n < 2 || n > dta.MaxBatch {
			return m, fmt.Errorf("mode %q: multiN needs N in [2, %d]", s, dta.MaxBatch)
		}
		m.PerDatagram = n
	default:
		return m, fmt.Errorf("mode %q: want single, multi or multiN before the /", s)
	}
	return m, nil
}

// DefaultModes are the four combinations of single or multi-report
// datagrams and recvmmsg or one read per datagram.
func DefaultModes() []Mode {
	return []Mode{{1, true}, {0, true}, {1, false}, {0, false}}
}

// Config configures a benchmark: every primitive of Primitives in every mode
// of Modes, DTA then (if Baseline) the baseline collector, then (if Ceiling)
// the receive-only collector, each for Duration after Warmup.
type Config struct {
	Primitives []dta.Primitive
	Modes      []Mode
	Baseline   bool          // also run the baseline collector on the same datagrams
	Ceiling    bool          // also run the receive-only collector (ReceiveOnly): the run's ceiling
	Duration   time.Duration // measured window of one run, [MinDuration, MaxDuration]
	Warmup     time.Duration // sending before the window opens, [0, MaxWarmup]
	Senders    int           // sending goroutines, each on its own socket and thread
	Readers    int           // SO_REUSEPORT reading sockets of the collector
	Rate       float64       // offered reports/s over all senders; 0 = as fast as they go
	Keys       int           // distinct keys (flows) of the stream
	Pool       int           // reports in each sender pool (sent round and round)
	Memory     uint64        // bytes of the store of each primitive
	Hash       hashing.Algorithm
	Region     region.Config // page backing and pre-faulting of the stores (Size unused)
	RecvBuffer int           // SO_RCVBUF of each reading socket, bytes

	// DataDir, if set, adds a run of DTA with durable stores (DTADurable)
	// after the others: checkpoints every CheckpointInterval into a new
	// directory under DataDir, removed after the run.
	DataDir            string
	CheckpointInterval time.Duration

	// INT adds, after the others, the INT input measured against native
	// reports in the same run, in the single-report modes (INTNative,
	// INTInput).
	INT bool

	// SinkName names the sink in results. NewSink, if set, returns the sink
	// each DTA run's translator writes to instead of the run's catalogue
	// local (NewRoCESink: over RoCEv2 into a software RDMA responder serving
	// local); the run drains it before its final counts and closes it at its
	// end. The baseline has no sink.
	SinkName string
	NewSink  func(local *store.Catalog) (Sink, error)
	// SinkOwnsStores says that the sink NewSink returns writes to a copy of
	// the stores of its own (RoCEProcessSink: the responder process maps
	// them), so that the run's catalogue only names the stores to the
	// translator. Unless DataDir asks for a durable run, which writes to it,
	// the catalogue is then not pre-faulted and takes no memory, and no run
	// counts its regions as resident in this process.
	SinkOwnsStores bool

	// Progress, if set, receives a progress line every second.
	Progress io.Writer
}

// Primitives are the primitives the benchmark drives: the four the
// prototype's compat reports and the baseline collector know (Sketch-Merge
// has no compat format and no baseline; its cost is BenchmarkSketch in
// internal/translator).
var Primitives = [...]dta.Primitive{dta.KeyWrite, dta.Append, dta.KeyIncrement, dta.Postcard}

// DefaultConfig returns the defaults: every compat primitive, every mode, the
// baseline too, 3 s windows after 0.5 s of warm-up, one sender and one
// reader, 2^20 keys, 1 GiB stores on pre-faulted transparent huge pages,
// hashed with the prototype's CRC-32 as compat stores are.
func DefaultConfig() Config {
	return Config{
		Primitives: Primitives[:],
		Modes:      DefaultModes(),
		Baseline:   true,
		Ceiling:    true,
		Duration:   3 * time.Second,
		Warmup:     500 * time.Millisecond,
		Senders:    1,
		Readers:    1,
		Keys:       1 << 20,
		Pool:       1 << 20,
		Memory:     1 << 30,
		Hash:       hashing.CRC32,
		Region:     region.DefaultConfig(),
		RecvBuffer: 64 << 20,
		SinkName:   "local",
	}
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if len(c.Primitives) == 0 {
		errs = append(errs, errors.New("bench: no primitive"))
	}
	for _, p := range c.Primitives {
		if p < dta.KeyWrite || p > dta.Postcard {
			errs = append(errs, fmt.Errorf("bench: unknown primitive %v", p))
		}
	}
	if len(c.Modes) == 0 {
		errs = append(errs, errors.New("bench: no mode"))
	}
	for _, m := range c.Modes {
		if m.PerDatagram < 0 || m.PerDatagram > dta.MaxBatch {
			errs = append(errs, fmt.Errorf("bench: mode %v: %d reports per datagram", m, m.PerDatagram))
		}
	}
	if c.Duration < MinDuration || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("bench: duration %v out of range [%v, %v]", c.Duration, MinDuration, MaxDuration))
	}
	if c.Warmup < 0 || c.Warmup > MaxWarmup {
		errs = append(errs, fmt.Errorf("bench: warm-up %v out of range [0, %v]", c.Warmup, MaxWarmup))
	}
	if c.Senders < 1 || c.Senders > MaxSenders {
		errs = append(errs, fmt.Errorf("bench: senders %d out of range [1, %d]", c.Senders, MaxSenders))
	}
	if c.Readers < 1 || c.Readers > MaxReaders {
		errs = append(errs, fmt.Errorf("bench: readers %d out of range [1, %d]", c.Readers, MaxReaders))
	}
	if c.Rate != 0 && !(c.Rate >= 1 && c.Rate <= 1e10) { // NaN fails both
		errs = append(errs, fmt.Errorf("bench: rate %v: want 0 (unlimited) or 1 to 1e10 reports/s", c.Rate))
	}
	if c.Keys < 1 || c.Keys > 1<<28 {
		errs = append(errs, fmt.Errorf("bench: keys %d out of range [1, 2^28]", c.Keys))
	}
	if c.Pool < 1 || c.Pool > 1<<26 {
		errs = append(errs, fmt.Errorf("bench: pool %d out of range [1, 2^26] reports", c.Pool))
	}
	if c.Memory < 1<<20 || c.Memory > region.MaxSize {
		errs = append(errs, fmt.Errorf("bench: memory %d out of range [1 MiB, %d]", c.Memory, uint64(region.MaxSize)))
	}
	if !c.Hash.Valid() {
		errs = append(errs, fmt.Errorf("bench: hash %v", c.Hash))
	}
	if c.RecvBuffer < 0 || c.RecvBuffer > 1<<30 {
		errs = append(errs, fmt.Errorf("bench: receive buffer %d out of range [0, 1 GiB]", c.RecvBuffer))
	}
	return errors.Join(errs...)
}
