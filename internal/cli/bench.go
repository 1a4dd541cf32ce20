package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/bench"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

type benchOptions struct {
	flags      *pflag.FlagSet // to tell a flag given from its default
	primitives []string
	modes      []string
	baseline   bool
	ceiling    bool
	repeat     int
	memory     string
	hash       string
	hugePages  string
	prefault   bool
	recvBuffer string
	sink       string
	responder  string
	// responderWait is where the responder's read loop waits: kernel or poller.
	responderWait  string
	responderPoll  time.Duration
	responderPause string
	// responderPath is how requests reach the responder process:
	// loopback, veth, xdp or xdp-rx.
	responderPath string
	output        string
	quiet         bool
	cpuProfile    string
	jsonFile      string
	transport     string
	queues        int
	cfg           bench.Config
}

func newBenchCmd() *cobra.Command {
	return benchCmd(&benchOptions{cfg: bench.DefaultConfig()})
}

// benchCmd is the bench command filling o from its flags.
func benchCmd(o *benchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure DTA end to end on loopback, against a baseline CPU collector",
		Long: `bench measures the whole pipeline on this machine: sender threads send
DTA reports over loopback UDP (sendmmsg), the collector reads them (recvmmsg
or one read per datagram), translates them and writes them into its stores
(through the local sink, or over RoCEv2 with --sink roce). Then, over the
same datagrams, it measures a baseline collector written without DTA: it
parses every report and inserts it into a sharded Go hash table keyed by
flow, or appends it to an in-memory log. Last, the run's ceiling: a
receive-only collector reads the same datagrams with the same sockets and
does nothing else.

For every primitive and mode it reports the offered and accepted rates, the
drops (kernel: receive buffer overflow; app: refused reports), the
collector's CPU seconds per million reports (process CPU minus the sender
threads'), reports per CPU second, memory ops per report counted from the op
stream (the paper's Fig. 8), allocations per report, and resident memory
beyond the store regions; and, measured in the same run, the DTA/baseline
ratios of the accepted rate and of reports per CPU second, and the fraction
of the receive-only ceiling that DTA and the baseline reach.

Reports are the paper's microbenchmark reports (compat formats: 4-byte keys
and values; Key-Write and Key-Increment N = 2, 5-hop postcard paths, Append
batches of 16) over --keys flows. Modes: single or multi (as many reports
as fit 1472 bytes, or multiN), then /recvmmsg or /read.

--data-dir DIR adds, after the others, a run of DTA with durable stores
(dta+durable): the same translator and stores, with checkpoints written to a
new directory under DIR every --checkpoint-interval while it runs; the
DTA+durable/DTA line gives the cost of durability in the same run.

--int adds, in the single-report modes, the INT input: DTA fed P4.org INT-MD
telemetry reports (dta-int: each maps to a path and hop counters) against DTA
fed the native path reports they carry (dta-native: 20-byte Key-Write), same
flows, same stores; the INT/native line compares reports per CPU second.

--sink roce puts RoCEv2 between the translator and the stores, as dta
translator and dta collector do across machines: each DTA run starts a
software RDMA responder on 127.0.0.1 serving the stores (memory regions and
store advertisement, as dta collector), and the translator dials it and sends
its ops as RDMA WRITE, WRITE with immediate and FETCH_ADD packets over
loopback. The responder stands in for the collector's RDMA NIC, the
translator for the switch. By default (--responder process) the responder is
a process of its own, started from this program with its own copy of the
stores (the only one resident), and its CPU is that whole process's, Go
runtime included, as dta collector's would be (its read loop keeps its Go
processor while it waits, as dta collector's does); --responder thread runs
it in this process and counts its receive thread alone (what the runtime
does to wake it then counts as the translator's; like dta up's, that loop
does not keep a processor). --responder-wait poller makes its read loop wait in the
Go runtime's network poller instead of in a blocking system call.
--responder-pause D[,MAX] makes it read after pauses while requests keep
coming, as collector.pause and pause_max do (fewer wake-ups, up to a pause
more latency, which lowers the rate of a translator waiting on its window).
--responder-path veth (Linux, root) starts the responder process in a network
namespace of its own and sends the requests over a veth pair, through the
kernel's UDP path as over loopback; --responder-path xdp does the same with the
responder taking its requests off the veth through AF_XDP (an XDP program and
an AF_XDP socket, as dta collector --xdp does), skipping the kernel's UDP
receive path, and sending its responses on the socket's TX ring
(collector.xdp.tx_frames), skipping the kernel's UDP send path;
--responder-path xdp-rx sends them through the UDP socket instead
(tx_frames 0). The veth's own receive work runs in softirq on the sending CPU
and counts as the sender's CPU, as over loopback. A report
counts as accepted once the responder has executed its ops (every op is
drained before the final counts). CPU s/M rep is DTA's whole CPU (the
process minus the senders, plus a responder process); extra columns split
it into the responder and the rest (the translator), and give the ops
the responder executed per second and the RDMA ops sent per report. The
baseline is unchanged. After the table, one line per primitive and mode
gives the responder's CPU per report against the baseline collector's (the
collector's CPU a real RDMA NIC would take to zero; goal at most 1/3) and
the request packets the responder takes in per CPU second (goal at least
1 M), all from the same run, and the machine's softirq time per report (the
kernel's receive path, charged to whichever process sends). With a responder
process the line also gives the request packets per wake-up (the process's
voluntary context switches: its read loops' pauses and polls) and what the
wake-ups cost: what one timed wait costs the process, measured as it starts,
times their number (an estimate; on the VM of docs/BENCHMARKS.md a timed
wait costs about 20 µs of CPU). With its responses on AF_XDP TX rings
(--responder-path xdp) it also gives the CPU time the responder spent
sending them (the sendto kicks of its rings): over the veth a kick also runs the
translator's receive of those responses, in softirq on the responder's CPU,
work that across a wire the translator's host would do. Nothing limits the
rate: the translator sends as fast as the responder's ACKs let it.

--transport xdp measures the AF_XDP ingest instead (Linux, root): it creates a
network namespace and a veth pair, sends single-report Key-Write datagrams
from the namespace as fast as one AF_XDP TX sender thread goes, and receives
them on the host end, first through AF_XDP (the XDP program attached, one
queue, one reader), then, in the same run, through a UDP socket read with
recvmmsg; both feed the real translator writing into a local Key-Write store.
It prints, per transport, the accepted rate and the reports per CPU second of
the receiving side: the process's CPU minus the sender thread's, plus the
machine's softirq time (the veth receive path: NAPI and the XDP program, or
the kernel's IP/UDP receive), and per reader CPU second alone; then the
XDP/UDP ratios, and the AF_XDP reader threads' own CPU, per queue.
--queues N gives the veth pair N queues: the sender hashes flows over N TX
sockets (a veth delivers on the RX queue of the TX queue's number), AF_XDP
reads them with N sockets and readers, UDP with N SO_REUSEPORT sockets.
--rate paces the sender (packets per second), so that both
paths can be compared below the rate at which either drops. --primitive,
--mode, --baseline, --ceiling, --sink, --senders, --readers and --int do not
apply.

A progress line goes to stderr every second (-q silences it).`,
		Example: `  dta bench
  dta bench --primitive keywrite --mode multi/recvmmsg --duration 5s
  dta bench --repeat 3 -o json > bench.json
  dta bench --primitive append --mode multi16/recvmmsg --rate 2e6
  dta bench --sink roce --primitive keywrite,append --mode multi/recvmmsg
  sudo dta bench --sink roce --responder-path xdp --mode single/recvmmsg,multi/recvmmsg
  sudo dta bench --transport xdp --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.flags = cmd.Flags()
			if err := o.complete(); err != nil {
				return err
			}
			if !o.quiet {
				o.cfg.Progress = cmd.ErrOrStderr()
			}
			return runBench(cmd, o)
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:    "responder",
		Short:  "The responder process of dta bench --sink roce (started by dta bench, not by hand)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv(bench.ResponderChildEnv) == "" {
				return usageError("bench responder: started by dta bench --sink roce with %s set, not by hand", bench.ResponderChildEnv)
			}
			return bench.ServeResponder(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	})
	fl := cmd.Flags()
	d := &o.cfg
	fl.StringSliceVar(&o.primitives, "primitive", []string{"keywrite", "keyincrement", "postcard", "append"}, "primitives to measure")
	fl.StringSliceVar(&o.modes, "mode", []string{"single/recvmmsg", "multi/recvmmsg", "single/read", "multi/read"}, "modes: single|multi|multiN, then /recvmmsg or /read")
	fl.BoolVar(&o.baseline, "baseline", true, "also measure the baseline CPU collector")
	fl.BoolVar(&o.ceiling, "ceiling", true, "also measure a receive-only collector (the same sockets and reads, nothing else): the run's ceiling")
	fl.StringVar(&d.DataDir, "data-dir", "", "also measure DTA with durable stores (dta+durable): checkpoints into a new directory under `DIR` while it runs, removed after each run")
	fl.DurationVar(&d.CheckpointInterval, "checkpoint-interval", 10*time.Second, "with --data-dir: the checkpoint interval of the dta+durable runs")
	fl.BoolVar(&d.INT, "int", false, "also measure the INT input (P4.org INT-MD reports) against the native path reports they carry, in the single-report modes")
	fl.IntVar(&o.repeat, "repeat", 1, "run everything `R` times (1-9) and print medians and ranges")
	fl.DurationVar(&d.Duration, "duration", d.Duration, "measured window of each run (100ms to 60s)")
	fl.DurationVar(&d.Warmup, "warmup", d.Warmup, "sending before each window opens (at most 10s)")
	fl.IntVar(&d.Senders, "senders", d.Senders, "sender threads")
	fl.IntVar(&d.Readers, "readers", d.Readers, "collector reader sockets (SO_REUSEPORT)")
	fl.Float64Var(&d.Rate, "rate", 0, "offered reports/s over all senders, 1 to 1e10 (0 = as fast as they go)")
	fl.IntVar(&d.Keys, "keys", d.Keys, "distinct keys (flows) in the stream")
	fl.IntVar(&d.Pool, "pool", 0, "reports in each sender's pool, sent round and round (0 = the larger of 2^20 and --keys)")
	fl.StringVar(&o.memory, "memory", "1GiB", "store size per primitive (Append: at most 256MiB)")
	fl.StringVar(&o.hash, "hash", d.Hash.String(), "store hash: crc32 (the prototype's, as compat stores keep) or crc32c")
	fl.StringVar(&o.hugePages, "hugepages", d.Region.HugePages.String(), "store pages: off, madvise or hugetlb")
	fl.BoolVar(&o.prefault, "prefault", d.Region.Prefault, "touch every store page before measuring")
	fl.StringVar(&o.recvBuffer, "recv-buffer", "64MiB", "SO_RCVBUF of each collector socket")
	fl.StringVar(&o.sink, "sink", "local", "where the translator writes: local (into the stores, in-process) or roce (RoCEv2 over loopback to a software RDMA responder serving the stores)")
	fl.StringVar(&o.responder, "responder", "process", "with --sink roce: where the software RDMA responder runs: process (a process of its own, started from this program, whose whole CPU time is the responder's) or thread (a goroutine of this process locked to its OS thread, whose thread's CPU time is)")
	fl.StringVar(&o.responderWait, "responder-wait", "kernel", "with --sink roce: where the responder's read loop waits for requests: kernel (a blocking system call on a thread of its own, as dta collector does) or poller (the Go runtime's network poller)")
	fl.StringVar(&o.responderPath, "responder-path", "loopback", "with --sink roce and --responder process: how requests reach the responder: loopback (kernel UDP over 127.0.0.1), veth (kernel UDP over a veth pair into a network namespace; Linux, root), xdp (over the veth, taken off it through AF_XDP, responses on the AF_XDP TX ring) or xdp-rx (the same, responses through the UDP socket)")
	fl.DurationVar(&o.responderPoll, "responder-poll", 0, "with --sink roce and --responder-wait kernel: poll the responder's socket this long before each wait (at most 1ms; 0 waits at once)")
	fl.StringVar(&o.responderPause, "responder-pause", "0", "with --sink roce, --responder-wait kernel and a kernel UDP path (loopback, veth): `D[,MAX]`: while requests keep coming, the responder's read loops read them after a pause of D (growing up to MAX under load) rather than being woken by each, as collector.pause and pause_max set it (10us to 1ms, MAX up to 10ms; 0 = woken by each)")
	fl.StringVarP(&o.output, "output", "o", "table", "output: table or json")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	fl.StringVar(&o.jsonFile, "json", "", "also write the JSON output to `file`")
	fl.StringVar(&o.transport, "transport", "udp", "udp (loopback) or xdp (AF_XDP ingest against UDP over a veth pair in a network namespace; root)")
	fl.IntVar(&o.queues, "queues", 1, "with --transport xdp: receive queues on the veth pair: one AF_XDP socket and reader per queue (one UDP SO_REUSEPORT socket per queue on the UDP path), flows hashed over them by the sender")
	fl.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark (senders included) to `file`")
	return cmd
}

// changed reports whether flag name was given (false before flags are parsed
// by the command).
func (o *benchOptions) changed(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// complete turns the string flags into the bench Config.
func (o *benchOptions) complete() error {
	c := &o.cfg
	c.Primitives = nil
	for _, s := range o.primitives {
		p, err := dta.ParsePrimitive(strings.TrimSpace(s))
		if err == nil && p == dta.TeaTable {
			err = errTeaNotPrimitive
		}
		if err != nil {
			return usageError("--primitive: %v", err)
		}
		c.Primitives = append(c.Primitives, p)
	}
	c.Modes = nil
	for _, s := range o.modes {
		m, err := bench.ParseMode(strings.TrimSpace(s))
		if err != nil {
			return usageError("--mode: %v", err)
		}
		c.Modes = append(c.Modes, m)
	}
	c.Baseline = o.baseline
	c.Ceiling = o.ceiling
	if c.Pool == 0 {
		// Keys are drawn at random into the pool: a smaller pool would send
		// fewer distinct flows than --keys says.
		c.Pool = max(1<<20, c.Keys)
	}
	if o.repeat < 1 || o.repeat > 9 {
		return usageError("--repeat: %d out of range [1, 9]", o.repeat)
	}
	mem, err := store.ParseByteSize(o.memory)
	if err != nil {
		return usageError("--memory: %v", err)
	}
	c.Memory = uint64(mem)
	rb, err := store.ParseByteSize(o.recvBuffer)
	if err != nil {
		return usageError("--recv-buffer: %v", err)
	}
	if rb > 1<<30 {
		return usageError("--recv-buffer: %q: want a size up to 1GiB", o.recvBuffer)
	}
	c.RecvBuffer = int(rb)
	if c.Hash, err = hashing.ParseAlgorithm(o.hash); err != nil {
		return usageError("--hash: %v", err)
	}
	if c.Region.HugePages, err = region.ParseHugePages(o.hugePages); err != nil {
		return usageError("--hugepages: %v", err)
	}
	c.Region.Prefault = o.prefault
	switch o.sink {
	case "local":
		c.SinkName = "local"
		if o.responderPath != bench.ResponderLoopback {
			return usageError("--responder-path applies to --sink roce")
		}
		if p, m, err := parsePause(o.responderPause); err != nil || p != 0 || m != 0 {
			return usageError("--responder-pause applies to --sink roce")
		}
	case "roce":
		w := bench.ResponderWait{Poll: o.responderPoll}
		switch o.responderWait {
		case "kernel":
			w.Kernel = true
		case "poller":
			if w.Poll != 0 {
				return usageError("--responder-poll applies to --responder-wait kernel only")
			}
		default:
			return usageError("--responder-wait: %q is not kernel or poller", o.responderWait)
		}
		if w.Poll < 0 || w.Poll > time.Millisecond {
			return usageError("--responder-poll: %v out of range [0, 1ms]", w.Poll)
		}
		if w.Pause, w.PauseMax, err = parsePause(o.responderPause); err != nil {
			return usageError("--responder-pause: %v", err)
		}
		if w.Pause != 0 || w.PauseMax != 0 {
			if !w.Kernel {
				return usageError("--responder-pause applies to --responder-wait kernel only")
			}
			rc := rdma.DefaultResponderConfig()
			rc.Pause, rc.PauseMax = w.Pause, w.PauseMax
			if err := rc.Validate(); err != nil {
				return usageError("--responder-pause %s: want D from 10us to 1ms and MAX from D to 10ms", o.responderPause)
			}
		}
		switch o.responder {
		case "process":
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("--responder process: finding this program to start it as the responder: %w", err)
			}
			switch o.responderPath {
			case bench.ResponderLoopback, bench.ResponderVeth, bench.ResponderXDP, bench.ResponderXDPRX:
			default:
				return usageError("--responder-path: %q is not loopback, veth, xdp or xdp-rx", o.responderPath)
			}
			c.SinkName, c.NewSink = "roce", bench.RoCEProcessSinkOver([]string{exe, "bench", "responder"}, c.Region, w, o.responderPath)
			if o.responderPath != bench.ResponderLoopback {
				c.SinkName += "/" + o.responderPath
			}
			c.SinkOwnsStores = true
		case "thread":
			if o.responderPath != bench.ResponderLoopback {
				return usageError("--responder-path %s needs --responder process", o.responderPath)
			}
			c.SinkName, c.NewSink = "roce/thread", bench.RoCEThreadSink(w)
		default:
			return usageError("--responder: %q is not process or thread", o.responder)
		}
	default:
		return usageError("--sink: %q is not local or roce", o.sink)
	}
	if o.output != "table" && o.output != "json" {
		return usageError("-o: %q is not table or json", o.output)
	}
	if o.transport != "udp" && o.transport != "xdp" {
		return usageError("--transport: %q is not udp or xdp", o.transport)
	}
	if o.queues < 1 || o.queues > bench.MaxXDPQueues {
		return usageError("--queues: %d out of range [1, %d]", o.queues, bench.MaxXDPQueues)
	}
	if o.queues > 1 && o.transport != "xdp" {
		return usageError("--queues applies to --transport xdp only (use --readers for the UDP bench)")
	}
	if o.sink != "roce" {
		for _, f := range []string{"responder", "responder-wait", "responder-poll"} {
			if o.changed(f) {
				return usageError("--%s applies to --sink roce", f)
			}
		}
	}
	if d := c.DataDir; d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return usageError("--data-dir: %s is not a directory", d)
		}
	}
	if c.CheckpointInterval < 0 || (o.changed("checkpoint-interval") && c.CheckpointInterval == 0) {
		return usageError("--checkpoint-interval: %v, want a positive interval", c.CheckpointInterval)
	}
	if o.changed("checkpoint-interval") && c.DataDir == "" {
		return usageError("--checkpoint-interval goes with --data-dir")
	}
	if err := checkOutputFile("json", o.jsonFile); err != nil {
		return err
	}
	if err := checkOutputFile("cpuprofile", o.cpuProfile); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return usageError("%v", err)
	}
	return nil
}

func runBench(cmd *cobra.Command, o *benchOptions) error {
	if o.cfg.Progress != nil && !isTerminal(os.Stderr) {
		// Not a terminal: one line per second instead of one rewritten line.
		o.cfg.Progress = lineWriter{cmd.ErrOrStderr()}
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.transport == "xdp" {
		return runXDPBench(cmd, o)
	}
	var reps []*bench.Report
	var runErr error
	for range o.repeat {
		rep, err := bench.Run(cmd.Context(), o.cfg)
		if rep != nil && len(rep.Results) > 0 {
			reps = append(reps, rep)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	if len(reps) == 0 {
		if runErr == nil {
			runErr = errors.New("bench: no results")
		}
		return runErr
	}
	var err error
	if o.output == "json" {
		err = writeBenchJSON(cmd.OutOrStdout(), reps)
	} else if len(reps) == 1 {
		err = reps[0].WriteTable(cmd.OutOrStdout())
	} else {
		err = bench.Combine(reps).WriteTable(cmd.OutOrStdout())
	}
	if err == nil && o.jsonFile != "" {
		err = writeBenchJSONFile(o.jsonFile, reps)
	}
	if err == nil {
		err = runErr
	}
	return err
}

// runXDPBench runs bench.RunXDP --repeat times and prints every run.
func runXDPBench(cmd *cobra.Command, o *benchOptions) error {
	var reps []*bench.XDPReport
	var runErr error
	for range o.repeat {
		rep, err := bench.RunXDPQueues(cmd.Context(), o.cfg, o.queues)
		if rep != nil {
			reps = append(reps, rep)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	out := cmd.OutOrStdout()
	if o.output == "json" || o.jsonFile != "" {
		b, err := json.MarshalIndent(struct {
			Runs []*bench.XDPReport `json:"runs"`
		}{reps}, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if o.output == "json" {
			out.Write(b)
		}
		if o.jsonFile != "" {
			if err := os.WriteFile(o.jsonFile, b, 0o644); err != nil {
				return fmt.Errorf("--json: %w", err)
			}
		}
	}
	if o.output == "table" {
		for i, r := range reps {
			if len(reps) > 1 {
				fmt.Fprintf(out, "# run %d of %d\n", i+1, len(reps))
			}
			if err := r.WriteTable(out); err != nil {
				return err
			}
		}
	}
	return runErr
}

// writeBenchJSON writes one report, or the runs and their combination.
func writeBenchJSON(w io.Writer, reps []*bench.Report) error {
	if len(reps) == 1 {
		return reps[0].WriteJSON(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Runs     []*bench.Report `json:"runs"`
		Combined *bench.Combined `json:"combined"`
	}{reps, bench.Combine(reps)})
}

func writeBenchJSONFile(path string, reps []*bench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := writeBenchJSON(f, reps); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lineWriter turns the progress line's carriage returns into newlines.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(b []byte) (int, error) {
	s := strings.TrimPrefix(string(b), "\r")
	if s == "\n" {
		return len(b), nil
	}
	if !strings.HasSuffix(s, "\n") {
		s = strings.TrimRight(s, " ") + "\n"
	}
	_, err := fmt.Fprint(l.w, s)
	return len(b), err
}

// isTerminal reports whether f is a character device (a terminal, as far as
// a progress line is concerned).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parsePause parses --responder-pause: "D" or "D,MAX" ("0": no pause).
func parsePause(s string) (pause, pauseMax time.Duration, err error) {
	a, b, two := strings.Cut(strings.TrimSpace(s), ",")
	if pause, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, err
	}
	if two {
		if pauseMax, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, err
		}
	}
	return pause, pauseMax, nil
}
