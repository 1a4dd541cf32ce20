package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"time"

	collectorpkg "github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/roce"
)

// ResponderChildEnv is set (to "1") in the environment of the process
// RoCEProcessSink starts. A test binary that runs itself as that process
// checks it in TestMain and calls ServeResponder.
const ResponderChildEnv = "DTA_BENCH_RESPONDER"

// maxRequestLine bounds a request line to the responder process: its store
// descriptors take a few hundred bytes each.
const maxRequestLine = 1 << 20

// responderRequest is what RoCEProcessSink writes, as one JSON line, to the
// responder process's standard input.
type responderRequest struct {
	Descriptors []store.Descriptor `json:"descriptors"`
	Region      region.Config      `json:"region"`
	KernelWait  bool               `json:"kernel_wait"`         // rdma.ResponderConfig.KernelWait
	Poll        time.Duration      `json:"poll_before_wait"`    // rdma.ResponderConfig.PollBeforeWait
	Pause       time.Duration      `json:"pause,omitempty"`     // rdma.ResponderConfig.Pause
	PauseMax    time.Duration      `json:"pause_max,omitempty"` // rdma.ResponderConfig.PauseMax
	// Addr is the address to serve on ("" = 127.0.0.1, any port).
	Addr string `json:"addr,omitempty"`
	// XDP names the interface whose requests come through AF_XDP
	// (rdma.ResponderConfig.XDP), or "".
	XDP string `json:"xdp,omitempty"`
	// XDPTXFrames is the AF_XDP TX ring's frames for responses
	// (xdp.Config.TXFrames; 0: responses through the UDP socket).
	XDPTXFrames int `json:"xdp_tx_frames,omitempty"`
}

// Paths a RoCEProcessSinkOver's requests take to the responder process.
const (
	// ResponderLoopback: kernel UDP over 127.0.0.1 (RoCEProcessSink).
	ResponderLoopback = "loopback"
	// ResponderVeth: kernel UDP over a veth pair, the responder in a
	// network namespace of its own.
	ResponderVeth = "veth"
	// ResponderXDP: as ResponderVeth, with the responder taking its
	// requests off the veth through AF_XDP (rdma.ResponderConfig.XDP) and
	// sending its responses on the AF_XDP TX ring, as `dta collector`
	// does with collector.transport xdp.
	ResponderXDP = "xdp"
	// ResponderXDPRX: as ResponderXDP, with the responses sent through
	// the kernel's UDP socket (collector.xdp.tx_frames 0).
	ResponderXDPRX = "xdp-rx"
)

// benchXDPTXFrames is the TX ring of ResponderXDP: collector.xdp.tx_frames'
// default.
var benchXDPTXFrames = rdma.DefaultXDPConfig("").TXFrames

// ResponderWait is how the responder's read loops wait for requests
// (rdma.ResponderConfig.KernelWait, PollBeforeWait, Pause and PauseMax).
type ResponderWait struct {
	Kernel bool          // in a blocking system call on a thread of their own
	Poll   time.Duration // polling the socket this long first (Kernel only)
	// Pause and PauseMax: while requests keep coming, reading them after
	// pauses rather than being woken by each (Kernel only; 0: woken).
	Pause, PauseMax time.Duration
}

// responderReply is the responder process's first line: the address it
// serves RoCEv2 on, or why it cannot.
type responderReply struct {
	Addr  string `json:"addr,omitempty"`
	Error string `json:"error,omitempty"`
	// WaitCPUNanos is what one timed wait cost the process, measured
	// before it served (timedWaitCPU).
	WaitCPUNanos int64 `json:"wait_cpu_ns,omitempty"`
}

// The responder process measures what a timed wait costs it with
// waitSamples sleeps of waitSample (about 0.1 s in all) before it serves.
const (
	waitSamples = 500
	waitSample  = 100 * time.Microsecond
)

// responderCounters is the responder process's answer to a "stats" line.
type responderCounters struct {
	Writes, WriteBytes, Atomics uint64
	Packets, Batches            uint64
	CPUNanos                    int64  // getrusage(RUSAGE_SELF): every thread of the process
	Waits                       uint64 // the process's voluntary context switches (processWaits)
	RSS                         uint64 // the process's resident set (VmRSS), bytes: the stores and the responder
	XDPPackets                  uint64 // requests taken through AF_XDP (rdma.Responder.XDP)
	XDPTXFrames                 uint64 // responses sent on its TX rings
	XDPTXKickNanos              uint64 // CPU time of its threads in the kicks of those rings (xdp.Stats.TXKickNanos)
}

// ServeResponder is the responder process of RoCEProcessSink (`dta bench
// responder`): it reads one request line from in (the stores and their region
// configuration), maps the stores, serves them with the software RDMA
// responder `dta collector` runs (collector.NewResponder) on 127.0.0.1, and
// writes the address to out. Then, for each "stats" line it reads, it writes
// its counters and the CPU time of the whole process, until in ends; then it
// stops the responder and unmaps the stores.
func ServeResponder(in io.Reader, out io.Writer) error {
	// A line longer than the buffer (maxRequestLine) is refused, not read
	// without end (ReadSlice: bufio.ErrBufferFull).
	r := bufio.NewReaderSize(in, maxRequestLine)
	enc := json.NewEncoder(out)
	line, err := r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("bench responder: reading the request (one JSON line of at most %d bytes): %w", maxRequestLine, err)
	}
	var req responderRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("bench responder: request: %w", err)
	}
	fail := func(err error) error {
		_ = enc.Encode(responderReply{Error: err.Error()})
		return err
	}
	for i := range req.Descriptors {
		if err := req.Descriptors[i].Validate(); err != nil {
			return fail(fmt.Errorf("bench responder: store %d: %w", i, err))
		}
	}
	cat, err := store.Open(req.Descriptors, req.Region, nil)
	if err != nil {
		return fail(fmt.Errorf("bench responder: %w", err))
	}
	defer cat.Close()
	rc := rdma.DefaultResponderConfig()
	rc.Addr = "127.0.0.1:0"
	if req.Addr != "" {
		rc.Addr = req.Addr
	}
	if req.XDP != "" {
		xc := rdma.DefaultXDPConfig(req.XDP) // as dta collector's
		xc.TXFrames = req.XDPTXFrames
		rc.XDP = &xc
	}
	rc.KernelWait, rc.PollBeforeWait = req.KernelWait, req.Poll
	rc.Pause, rc.PauseMax = req.Pause, req.PauseMax
	rc.KeepProcessor = req.KernelWait // as dta collector runs it
	if err := rc.Validate(); err != nil {
		return fail(fmt.Errorf("bench responder: %w", err))
	}
	resp, err := collectorpkg.NewResponder(cat, rc, nil)
	if err != nil {
		return fail(fmt.Errorf("bench responder: %w", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- resp.Run(ctx) }()
	stop := func() error {
		cancel()
		resp.Close()
		return <-done
	}
	// What a wake-up costs here, measured before the first request: the
	// responder's CPU includes one per pause (waitSamples of waitSample).
	wait := timedWaitCPU(waitSamples, waitSample)
	if err := enc.Encode(responderReply{Addr: resp.LocalAddr().String(), WaitCPUNanos: int64(wait)}); err != nil {
		stop()
		return err
	}
	st := resp.Stats()
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			break // the parent closed its end (or sent a line longer than any request): the run is over
		}
		if string(bytes.TrimSpace(line)) != "stats" {
			stop()
			return fmt.Errorf("bench responder: unknown request %q", line)
		}
		c := responderCounters{
			Writes: st.Writes.Load(), WriteBytes: st.WriteBytes.Load(), Atomics: st.Atomics.Load(),
			Packets: st.Packets.Load(), Batches: st.Batches.Load(), CPUNanos: int64(processCPU()), Waits: processWaits(), RSS: rss(),
		}
		if ln := resp.XDP(); ln != nil {
			xs := ln.Stats()
			c.XDPPackets, c.XDPTXFrames, c.XDPTXKickNanos = xs.Packets.Load(), xs.TXFrames.Load(), xs.TXKickNanos.Load()
		}
		if err := enc.Encode(c); err != nil {
			stop()
			return err
		}
	}
	return stop()
}

// roceProcSink is roceSink with the responder in a process of its own.
type roceProcSink struct {
	uplinkHalf
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	log  *stderrBuffer // the process's standard error
	veth *benchVeth    // the namespace and veth pair the requests cross, or nil

	waitCost time.Duration // CPU of one timed wait in the process (responderReply.WaitCPUNanos)

	mu   sync.Mutex
	last responderCounters
	err  error // the first failed stats exchange
}

// RoCEProcessSink returns a Config.NewSink that writes over RoCEv2, as
// NewRoCESink does, to a software RDMA responder running in a process of its
// own: command (the dta binary with the arguments "bench", "responder", or a
// test binary that calls ServeResponder when ResponderChildEnv is set) is
// started with ResponderChildEnv set and given the run's store descriptors,
// rc and w, maps its own copy of the stores, and serves them. The responder's
// CPU time is then the whole process's, its Go runtime's threads included,
// as `dta collector`'s would be, rather than one thread's; the translator's
// is the bench process's. The run's own catalogue is never written: set
// Config.SinkOwnsStores with this sink, so that the run does not pre-fault it
// either and the stores are resident once, in the responder process.
func RoCEProcessSink(command []string, rc region.Config, w ResponderWait) func(*store.Catalog) (Sink, error) {
	return RoCEProcessSinkOver(command, rc, w, ResponderLoopback)
}

// RoCEProcessSinkOver is RoCEProcessSink with the requests taking path to
// the responder process: ResponderLoopback, or over a veth pair
// (ResponderVeth, ResponderXDP) to a responder started in a network
// namespace of its own (`ip netns exec`), which the sink creates and
// removes on Close; those need root and iproute2. The veth's receive path
// (its NAPI poll, the XDP program, the copy into the AF_XDP socket's
// memory, or IP and UDP) runs in the kernel's softirq context, mostly on
// the sending CPU, and is charged to the process that sends: the
// translator for requests, the responder for responses (as over
// loopback). RemoteResult.SoftirqCPUPerMillion gives the machine's total.
func RoCEProcessSinkOver(command []string, rc region.Config, w ResponderWait, path string) func(*store.Catalog) (Sink, error) {
	return func(local *store.Catalog) (Sink, error) {
		if len(command) == 0 {
			return nil, errors.New("no responder command")
		}
		s := &roceProcSink{log: new(stderrBuffer)}
		req := responderRequest{Descriptors: local.Descriptors(), Region: rc, KernelWait: w.Kernel, Poll: w.Poll,
			Pause: w.Pause, PauseMax: w.PauseMax}
		switch path {
		case ResponderLoopback:
		case ResponderVeth, ResponderXDP, ResponderXDPRX:
			if err := vethPrerequisites("--responder-path " + path); err != nil {
				return nil, err
			}
			v, err := newBenchVeth(1)
			if err != nil {
				return nil, err
			}
			s.veth = v
			command = append([]string{"ip", "netns", "exec", v.ns}, command...)
			req.Addr = netip.AddrPortFrom(v.peerAddr, roce.Port).String()
			if path != ResponderVeth {
				req.XDP = v.peer
			}
			if path == ResponderXDP {
				req.XDPTXFrames = benchXDPTXFrames
			}
		default:
			return nil, fmt.Errorf("responder path %q: want %s, %s, %s or %s", path, ResponderLoopback, ResponderVeth, ResponderXDP, ResponderXDPRX)
		}
		s.cmd = exec.Command(command[0], command[1:]...)
		s.cmd.Env = append(os.Environ(), ResponderChildEnv+"=1")
		s.cmd.Stderr = s.log
		var err error
		if s.in, err = s.cmd.StdinPipe(); err != nil {
			s.removeVeth()
			return nil, err
		}
		stdout, err := s.cmd.StdoutPipe()
		if err != nil {
			s.removeVeth()
			return nil, err
		}
		s.out = bufio.NewReader(stdout)
		if err := s.cmd.Start(); err != nil {
			s.removeVeth()
			return nil, fmt.Errorf("responder process: %w", err)
		}
		addr, err := s.start(req)
		if err != nil {
			s.stopProcess()
			return nil, err
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			s.stopProcess()
			return nil, fmt.Errorf("responder process: address %q: %w", addr, err)
		}
		if err := s.dial(ap, local); err != nil {
			s.stopProcess()
			return nil, fmt.Errorf("responder process: %w", err)
		}
		if _, err := s.exchange(); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
}

// start sends the request and reads the address the responder serves on
// (and what a timed wait costs it: waitCost).
func (s *roceProcSink) start(req responderRequest) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return "", fmt.Errorf("responder process: %w", s.withLog(err))
	}
	var rep responderReply
	if err := s.readLine(&rep); err != nil {
		return "", err
	}
	if rep.Error != "" {
		return "", fmt.Errorf("responder process: %s", rep.Error)
	}
	s.waitCost = time.Duration(max(rep.WaitCPUNanos, 0))
	return rep.Addr, nil
}

// readLine decodes the process's next line into v, waiting at most
// dialTimeout (a store of gigabytes is pre-faulted before the first).
func (s *roceProcSink) readLine(v any) error {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := s.out.ReadBytes('\n')
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("responder process: %w", s.withLog(r.err))
		}
		if err := json.Unmarshal(r.b, v); err != nil {
			return fmt.Errorf("responder process: %q: %w", r.b, err)
		}
		return nil
	case <-time.After(dialTimeout):
		s.cmd.Process.Kill()
		return fmt.Errorf("responder process: no answer in %v", dialTimeout)
	}
}

// withLog adds what the process wrote to its standard error to err.
func (s *roceProcSink) withLog(err error) error {
	if l := s.log.String(); l != "" {
		return fmt.Errorf("%w (its stderr: %s)", err, l)
	}
	return err
}

// stderrBuffer keeps the first 4 KiB written to it; the process's stderr is
// copied into it on a goroutine of os/exec while withLog may read it.
type stderrBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *stderrBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p[:min(len(p), 4096-len(t.b))]...)
	return len(p), nil
}

func (t *stderrBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// exchange asks the process for its counters.
func (s *roceProcSink) exchange() (responderCounters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.last, s.err
	}
	var c responderCounters
	_, err := io.WriteString(s.in, "stats\n")
	if err == nil {
		err = s.readLine(&c)
	}
	if err != nil {
		s.err = err
		return s.last, err
	}
	s.last = c
	return c, nil
}

// Stats reads the requester's counters, then the responder process's (its
// last answer if it no longer answers: Close reports that).
func (s *roceProcSink) Stats() SinkStats {
	st := s.stats()
	c, _ := s.exchange()
	st.Applied = c.Writes + c.Atomics
	st.AppliedBytes = c.WriteBytes + 8*c.Atomics
	st.RemoteCPU = time.Duration(c.CPUNanos)
	st.RemotePackets, st.RemoteReads = c.Packets, c.Batches
	st.RemoteWaits, st.RemoteWaitCost = c.Waits, s.waitCost
	st.RemoteProcess, st.RemoteRSS, st.RemoteXDPPackets, st.RemoteXDPTXFrames = true, c.RSS, c.XDPPackets, c.XDPTXFrames
	st.RemoteSendTime = time.Duration(c.XDPTXKickNanos)
	return st
}

// Close disconnects the requester, then ends the responder process and
// waits for it.
func (s *roceProcSink) Close() error {
	err := s.up.Close()
	if perr := s.stopProcess(); perr != nil && err == nil {
		err = perr
	}
	s.mu.Lock()
	if s.err != nil && err == nil {
		err = s.err
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// stopProcess closes the process's standard input, which ends it, and
// waits for it (killing it after dialTimeout).
func (s *roceProcSink) stopProcess() error {
	defer s.removeVeth()
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("responder process: %w", s.withLog(err))
		}
		return nil
	case <-time.After(dialTimeout):
		s.cmd.Process.Kill()
		<-done
		return errors.New("responder process: did not stop; killed")
	}
}

// removeVeth removes the namespace and veth pair of a sink over a veth.
func (s *roceProcSink) removeVeth() {
	if s.veth != nil {
		s.veth.remove()
		s.veth = nil
	}
}
