//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/wire/dta"
)

// Transports compared by RunXDP.
const (
	TransportXDP = "xdp"
	TransportUDP = "udp"
)

// XDPResult is one transport's run in RunXDP: single-report Key-Write
// datagrams sent from the peer end of a veth pair, received on the host end
// by the real translator writing into local stores. Rates and CPU are over the
// measured window; Stored and Dropped over the whole run.
type XDPResult struct {
	Transport string  `json:"transport"` // xdp or udp
	Mode      string  `json:"mode"`      // xdp: attach/bind mode; udp: recvmmsg
	Seconds   float64 `json:"seconds"`

	Offered  float64 `json:"offered_per_s"`  // packets sent per second (one report each)
	Accepted float64 `json:"accepted_per_s"` // reports the translator took per second

	Sent    uint64 `json:"sent_packets"`
	Stored  uint64 `json:"accepted_reports"`
	Dropped uint64 `json:"kernel_drop_packets"` // xdp: RX ring full + rx_dropped (which counts the fill ring empty drops); udp: socket drops

	// ReaderCPUSeconds is the process's CPU minus the sender thread's: the
	// reader thread (AF_XDP ring or recvmmsg, translator, stores), the
	// ticker and the Go runtime.
	ReaderCPUSeconds float64 `json:"reader_cpu_seconds"`
	// SoftirqCPUSeconds is the machine's softirq time (/proc/stat, all
	// CPUs): the veth's receive path (NAPI, the XDP program and the copy
	// into the UMEM; or the kernel's IP and UDP receive and the socket
	// queue), which runs in softirq on the sender's CPU.
	SoftirqCPUSeconds float64 `json:"softirq_cpu_seconds"`
	SenderCPUSeconds  float64 `json:"sender_cpu_seconds"` // the sender thread, minus the softirq time it hosted (see docs/BENCHMARKS.md)

	// PerCPUSecond is Accepted over the receiving side's CPU: reader plus
	// softirq.
	PerCPUSecond float64 `json:"reports_per_cpu_second"`
	// PerReaderCPUSecond is Accepted over the reader's CPU alone.
	PerReaderCPUSecond float64 `json:"reports_per_reader_cpu_second"`

	// Queues is the number of receive queues used: AF_XDP sockets and
	// readers (xdp), SO_REUSEPORT sockets (udp), sender TX sockets.
	Queues int `json:"queues"`
	// ReaderThreadCPUSeconds (xdp) is the CPU of the readers' own OS
	// threads alone (schedstat), without the Go runtime's other threads;
	// ReaderCPUSeconds minus it is what the rest of the process took.
	ReaderThreadCPUSeconds float64 `json:"reader_thread_cpu_seconds,omitempty"`
	// PerReaderThreadCPUSecond (xdp) is Accepted over ReaderThreadCPUSeconds.
	PerReaderThreadCPUSecond float64 `json:"reports_per_reader_thread_cpu_second,omitempty"`
	// PerQueue (xdp) splits the window by queue: each reader's packets
	// and its thread's CPU.
	PerQueue []XDPQueueResult `json:"per_queue,omitempty"`

	// PacketsPerRead is the mean number of packets per RX ring read
	// (xdp) or recvmmsg call (udp), whole run.
	PacketsPerRead float64 `json:"packets_per_read"`
	// Waits counts the reader's waits for packets (xdp: poll(2) after an
	// empty ring), whole run.
	Waits uint64 `json:"waits,omitempty"`
}

// XDPQueueResult is one queue's part of an xdp run's window.
type XDPQueueResult struct {
	Queue   int     `json:"queue"`
	Packets uint64  `json:"packets"` // handed to the translator by this queue's reader
	PerS    float64 `json:"packets_per_s"`
	// ThreadCPUSeconds is the reader thread's CPU (schedstat).
	ThreadCPUSeconds float64 `json:"thread_cpu_seconds"`
	// PerThreadCPUSecond is Packets over ThreadCPUSeconds.
	PerThreadCPUSecond float64 `json:"packets_per_thread_cpu_second"`
}

// XDPReport is a whole `dta bench --transport xdp`.
type XDPReport struct {
	Machine Machine     `json:"machine"`
	Config  Summary     `json:"config"`
	Results []XDPResult `json:"results"`
	// Ratios of XDP's figures to UDP's, in the same run.
	Accepted           float64 `json:"xdp_over_udp_accepted"`
	PerCPUSecond       float64 `json:"xdp_over_udp_per_cpu_second"`
	PerReaderCPUSecond float64 `json:"xdp_over_udp_per_reader_cpu_second"`
}

// benchPort is the DTA port the runs use.
const benchPort = 40040

// RunXDP compares the AF_XDP ingest with the UDP one on this machine. It
// creates a network namespace and a veth pair (root needed), then for each
// transport sends single-report Key-Write datagrams as fast as one AF_XDP
// TX sender thread in the namespace goes, and receives them on the host end:
// first through AF_XDP (the XDP program attached, one queue, one reader),
// then through one UDP socket read with recvmmsg, each feeding a fresh
// translator over the same local Key-Write store. Of cfg it uses Duration,
// Warmup, Rate (packets per second; 0 = as fast as the sender goes), Keys,
// Pool, Memory, Hash, Region, RecvBuffer and Progress.
func RunXDP(ctx context.Context, cfg Config) (*XDPReport, error) {
	return RunXDPQueues(ctx, cfg, 1)
}

// MaxXDPQueues bounds RunXDPQueues's queues.
const MaxXDPQueues = 16

// RunXDPQueues is RunXDP over queues receive queues: the veth pair gets
// that many queues each way, the sender one AF_XDP TX socket per queue of
// the peer (a veth delivers a frame on the RX queue numbered as the TX queue
// it was sent on), steering each flow to one queue by a hash of its key as
// RSS would; the AF_XDP ingest reads every queue with its own socket and
// reader, the UDP ingest with as many SO_REUSEPORT sockets.
func RunXDPQueues(ctx context.Context, cfg Config, queues int) (*XDPReport, error) {
	if queues < 1 || queues > MaxXDPQueues {
		return nil, fmt.Errorf("bench: %d queues, want 1 to %d", queues, MaxXDPQueues)
	}
	cfg.Primitives, cfg.Modes = []dta.Primitive{dta.KeyWrite}, []Mode{{PerDatagram: 1, Recvmmsg: true}}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := vethPrerequisites("--transport xdp"); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	v, err := newBenchVeth(queues)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer v.remove()
	d, err := Descriptor(dta.KeyWrite, cfg.Memory, cfg.Hash)
	if err != nil {
		return nil, err
	}
	cat, err := store.Open([]store.Descriptor{d}, cfg.Region, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer cat.Close()
	w, err := NewWorkload(dta.KeyWrite, 1, cfg.Keys, cfg.Pool)
	if err != nil {
		return nil, err
	}
	steer, err := steerByKey(w, queues)
	if err != nil {
		return nil, err
	}
	rep := &XDPReport{Machine: ThisMachine(), Config: Summary{
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), Senders: 1, Readers: queues,
		Keys: cfg.Keys, Memory: cfg.Memory, Hash: cfg.Hash.String(),
		HugePages: cfg.Region.HugePages.String(), Prefault: cfg.Region.Prefault, RecvBuffer: cfg.RecvBuffer,
	}}
	for i, tr := range []string{TransportXDP, TransportUDP} {
		r, err := v.run(ctx, cfg, tr, w, steer, cat, i+1)
		if r != nil {
			rep.Results = append(rep.Results, *r)
		}
		if err != nil {
			return rep, err
		}
	}
	if len(rep.Results) == 2 {
		x, u := rep.Results[0], rep.Results[1]
		rep.Accepted = ratio(x.Accepted, u.Accepted)
		rep.PerCPUSecond = ratio(x.PerCPUSecond, u.PerCPUSecond)
		rep.PerReaderCPUSecond = ratio(x.PerReaderCPUSecond, u.PerReaderCPUSecond)
	}
	return rep, nil
}

// steerByKey splits the workload's datagrams over queues by a hash of
// their report's key, as a NIC's RSS keeps a flow on one queue: the
// datagram indices of each queue, in pool order.
func steerByKey(w *Workload, queues int) ([][]uint32, error) {
	steer := make([][]uint32, queues)
	if queues == 1 {
		steer[0] = make([]uint32, w.Datagrams())
		for i := range steer[0] {
			steer[0][i] = uint32(i)
		}
		return steer, nil
	}
	var dg dta.Datagram
	var r dta.Report
	for i := range w.Datagrams() {
		if err := (dta.Decoder{}).Decode(w.Datagram(i), &dg); err != nil {
			return nil, fmt.Errorf("bench: workload datagram %d: %w", i, err)
		}
		if err := dg.Next(&r); err != nil {
			return nil, fmt.Errorf("bench: workload datagram %d: %w", i, err)
		}
		q := int(uint64(r.Key32()*0x9E3779B1) * uint64(queues) >> 32)
		steer[q] = append(steer[q], uint32(i))
	}
	for q, s := range steer {
		if len(s) == 0 {
			return nil, fmt.Errorf("bench: no flow hashed to queue %d of %d (too few keys)", q, queues)
		}
	}
	return steer, nil
}

// xdpSender sends the workload's datagrams as Ethernet frames on the peer
// end's AF_XDP TX ring, from its own OS thread in the namespace.
type xdpSender struct {
	stop atomic.Bool
	sent atomic.Uint64 // packets queued and kicked
	tid  atomic.Int64
	err  error
	done chan struct{}
}

// startSender starts the sender and returns once its sockets are open, one
// per queue, queue q sending the datagrams steer[q] round and round; rate,
// if not 0, paces it to that many packets per second.
func (v *benchVeth) startSender(w *Workload, steer [][]uint32, rate float64) (*xdpSender, error) {
	s := &xdpSender{done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(s.done)
		runtime.LockOSThread() // never unlocked: the thread is in the namespace and leaves with the goroutine
		s.tid.Store(int64(unix.Gettid()))
		nsf, err := os.Open("/run/netns/" + v.ns)
		if err != nil {
			ready <- fmt.Errorf("bench: open namespace %s: %w", v.ns, err)
			return
		}
		err = unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET)
		nsf.Close()
		if err != nil {
			ready <- fmt.Errorf("bench: enter namespace %s: %w", v.ns, err)
			return
		}
		xc := xdp.DefaultConfig()
		xc.BindMode = xdp.BindCopy
		snds := make([]*xdp.Sender, len(steer))
		for q := range snds {
			snd, err := xdp.NewQueueSender(v.peer, q, xc)
			if err != nil {
				ready <- err
				return
			}
			defer snd.Close()
			snds[q] = snd
		}
		if p, err := net.InterfaceByName(v.peer); err == nil {
			copy(v.peerMAC[:], p.HardwareAddr)
		}
		ready <- nil
		dst := netip.AddrPortFrom(v.hostAddr, benchPort)
		// One fill function per queue, each with its own cursor into
		// its datagrams and its own source port (as flows hashed to
		// different queues have different 5-tuples; the UDP ingest's
		// SO_REUSEPORT sockets hash on them).
		fills := make([]func([]byte) []byte, len(steer))
		for q, idx := range steer {
			src := netip.AddrPortFrom(v.peerAddr, uint16(40000+q))
			next := 0
			fills[q] = func(b []byte) []byte {
				d := w.Datagram(int(idx[next]))
				if next++; next == len(idx) {
					next = 0
				}
				return xdp.AppendFrame(b, v.peerMAC, v.hostMAC, src, dst, d)
			}
		}
		var sent uint64
		start := time.Now()
		for q := 0; !s.stop.Load(); q = (q + 1) % len(snds) {
			n := 64
			if rate > 0 {
				due := uint64(time.Since(start).Seconds()*rate) + 1
				if due <= sent {
					// A raw nanosleep, not time.Sleep: parking a
					// goroutine locked to its thread and waking it
					// hands a P between threads twice, CPU the
					// process would charge to the receiving side.
					ts := unix.NsecToTimespec(max(int64(float64(sent+1-due)/rate*1e9), 50_000))
					unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
					continue
				}
				n = int(min(due-sent, 64))
			}
			k, err := snds[q].Send(n, fills[q])
			if err != nil {
				s.err = err
				return
			}
			sent += uint64(k)
			s.sent.Store(sent)
			if k == 0 && q == len(snds)-1 {
				// No frame free: the kernel has not completed the
				// last ones (their skbs are freed in the receive
				// softirq, which a loaded machine defers to
				// ksoftirqd). Yield the CPU to it, in a raw system
				// call: runtime.Gosched on a locked thread hands
				// its P to another thread and back, and the Go
				// scheduler's churn is charged to the receiving
				// side's CPU.
				unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}()
	if err := <-ready; err != nil {
		<-s.done
		return nil, err
	}
	return s, nil
}

func (s *xdpSender) halt() error {
	s.stop.Store(true)
	<-s.done
	return s.err
}

// xdpSnap is the counters at one instant.
type xdpSnap struct {
	at                    time.Time
	sent, stored          uint64
	proc, sender, softirq time.Duration
	readers               []time.Duration // xdp: each reader thread's CPU
	packets               []uint64        // xdp: each reader's packets
}

// run measures one transport.
func (v *benchVeth) run(ctx context.Context, cfg Config, transport string, w *Workload, steer [][]uint32, cat *store.Catalog, n int) (*XDPResult, error) {
	runtime.GC()
	debug.FreeOSMemory()
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		return nil, err
	}
	ic := ingest.DefaultConfig()
	ic.UDP.Addr = netip.AddrPortFrom(v.hostAddr, benchPort).String()
	ic.UDP.Readers, ic.UDP.RecvBuffer, ic.AckPort = v.queues, cfg.RecvBuffer, 0
	if transport == TransportXDP {
		xc := xdp.DefaultConfig()
		xc.Interface, xc.Queues = v.host, v.queues
		ic.XDP = &xc
	}
	in, err := ingest.New(ic, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: %s ingest: %w", transport, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- in.Run(runCtx) }()
	res := &XDPResult{Transport: transport, Mode: "recvmmsg", Queues: v.queues}
	x := in.XDPListener()
	if x != nil {
		res.Mode = x.Mode()
	}
	stored := func() uint64 {
		var s uint64
		for _, r := range tr.Stats().Reports {
			s += r
		}
		return s
	}
	s, err := v.startSender(w, steer, cfg.Rate)
	if err != nil {
		in.Close()
		<-runErr
		return nil, err
	}
	snap := func() xdpSnap {
		sn := xdpSnap{at: time.Now(), sent: s.sent.Load(), stored: stored(), proc: processCPU(),
			sender: threadCPU(int(s.tid.Load())), softirq: softirqTime()}
		if x != nil {
			for _, tid := range x.ReaderThreads() {
				sn.readers = append(sn.readers, threadCPU(tid))
			}
			sn.packets = x.ReaderPackets()
		}
		return sn
	}
	label := fmt.Sprintf("[%d/2] keywrite single %-4s", n, transport)
	interrupted := sleep(ctx, cfg.Warmup)
	s0 := snap()
	last := s0
	for !interrupted && time.Since(s0.at) < cfg.Duration {
		interrupted = sleep(ctx, min(time.Second, cfg.Duration-time.Since(s0.at)))
		now := snap()
		if cfg.Progress != nil {
			if dt := now.at.Sub(last.at).Seconds(); dt > 0 {
				fmt.Fprintf(cfg.Progress, "\r%s %4.1fs  offered %7.3f M/s  accepted %7.3f M/s  ",
					label, now.at.Sub(s0.at).Seconds(), float64(now.sent-last.sent)/dt/1e6, float64(now.stored-last.stored)/dt/1e6)
			}
		}
		last = now
	}
	s1 := last
	if s1.at == s0.at {
		s1 = snap()
	}
	sendErr := s.halt()
	// Let the reader take what is in its ring or socket buffer.
	for prev, still := stored(), time.Now(); time.Since(still) < 200*time.Millisecond; {
		time.Sleep(20 * time.Millisecond)
		if c := stored(); c != prev {
			prev, still = c, time.Now()
		}
	}
	if x != nil {
		k := x.KernelStats()
		// A frame dropped for want of a fill-ring entry is counted
		// twice by the kernel, in rx_dropped and in
		// rx_fill_ring_empty_descs (__xsk_rcv, xp_alloc): count
		// rx_dropped (which also has the other drops) and rx_ring_full.
		res.Dropped = k.RxRingFull + k.RxDropped
		st := x.Stats()
		res.PacketsPerRead = float64(st.Packets.Load()) / float64(max(st.Batches.Load(), 1))
		res.Waits = st.EmptyPolls.Load()
	} else {
		l := in.Listener()
		res.Dropped = l.KernelDrops()
		res.PacketsPerRead = float64(l.Stats().Datagrams.Load()) / float64(max(l.Stats().Batches.Load(), 1))
	}
	in.Close()
	err = <-runErr
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}
	res.Seconds = s1.at.Sub(s0.at).Seconds()
	res.Sent, res.Stored = s.sent.Load(), stored()
	win := s1.stored - s0.stored
	if res.Seconds > 0 {
		res.Offered = float64(s1.sent-s0.sent) / res.Seconds
		res.Accepted = float64(win) / res.Seconds
	}
	sender := s1.sender - s0.sender
	softirq := s1.softirq - s0.softirq
	reader := s1.proc - s0.proc - sender
	res.ReaderCPUSeconds, res.SoftirqCPUSeconds = reader.Seconds(), softirq.Seconds()
	// Without IRQ time accounting the softirq work run on the sender's
	// thread is in its runtime too: take it out of the sender's figure (an
	// estimate: softirq also runs elsewhere).
	res.SenderCPUSeconds = max(sender-softirq, 0).Seconds()
	if cpu := reader + softirq; cpu > 0 {
		res.PerCPUSecond = float64(win) / cpu.Seconds()
	}
	if reader > 0 {
		res.PerReaderCPUSecond = float64(win) / reader.Seconds()
	}
	if x != nil && len(s0.readers) == len(s1.readers) && len(s0.packets) == len(s1.packets) && len(s1.packets) == len(s1.readers) {
		var threads time.Duration
		for q := range s1.readers {
			cpu := s1.readers[q] - s0.readers[q]
			threads += cpu
			qr := XDPQueueResult{Queue: q, Packets: s1.packets[q] - s0.packets[q], ThreadCPUSeconds: cpu.Seconds()}
			if res.Seconds > 0 {
				qr.PerS = float64(qr.Packets) / res.Seconds
			}
			if cpu > 0 {
				qr.PerThreadCPUSecond = float64(qr.Packets) / cpu.Seconds()
			}
			res.PerQueue = append(res.PerQueue, qr)
		}
		res.ReaderThreadCPUSeconds = threads.Seconds()
		if threads > 0 {
			res.PerReaderThreadCPUSecond = float64(win) / threads.Seconds()
		}
	}
	if interrupted {
		return res, ctx.Err()
	}
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return res, fmt.Errorf("bench: %s run: %w", transport, err)
	}
	return res, nil
}

// WriteTable writes one line per transport and the XDP/UDP ratios.
func (r *XDPReport) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "# %d CPUs (%s), GOMAXPROCS %d, Linux %s, %s; veth pair, %d queue(s), 1 AF_XDP TX sender thread, %d reader(s), %g s windows, %d keys, %s Key-Write store (%s, hash %s)\n",
		m.CPUs, m.CPUModel, m.GOMAXPROCS, m.Kernel, m.GoVersion, r.Config.Readers, r.Config.Readers, r.Config.DurationS, r.Config.Keys, mib(r.Config.Memory), r.Config.HugePages, r.Config.Hash)
	fmt.Fprintln(w, "# receiving CPU = process CPU minus the sender thread (reader, translator, runtime) + softirq time of all CPUs (the veth receive path)")
	fmt.Fprintln(w, "# reader CPU = process CPU minus the sender thread; xdp reader threads = the AF_XDP readers' own threads only (schedstat)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tmode\toffered M/s\taccepted M/s\tkernel drops\tpkts/read\treader CPU s\tsoftirq CPU s\tsender CPU s\tM rep/CPU s\tM rep/reader CPU s\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t\n", x.Transport, x.Mode, x.Offered/1e6, x.Accepted/1e6,
			x.Dropped, x.PacketsPerRead, x.ReaderCPUSeconds, x.SoftirqCPUSeconds, x.SenderCPUSeconds, x.PerCPUSecond/1e6, x.PerReaderCPUSecond/1e6)
	}
	if len(r.Results) == 2 {
		fmt.Fprintf(tw, "xdp/udp\t\t\t%.2fx\t\t\t\t\t\t%.2fx\t%.2fx\t\n", r.Accepted, r.PerCPUSecond, r.PerReaderCPUSecond)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range r.Results {
		if len(x.PerQueue) == 0 {
			continue
		}
		fmt.Fprintf(w, "# %s reader threads: %.2f CPU s, %.3f M rep / reader thread CPU s; the rest of the process (Go runtime, ticker, bench): %.2f CPU s\n",
			x.Transport, x.ReaderThreadCPUSeconds, x.PerReaderThreadCPUSecond/1e6, x.ReaderCPUSeconds-x.ReaderThreadCPUSeconds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "queue\tpackets\tM pkts/s\tthread CPU s\tM pkts/thread CPU s\t")
		for _, q := range x.PerQueue {
			fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.2f\t%.3f\t\n", q.Queue, q.Packets, q.PerS/1e6, q.ThreadCPUSeconds, q.PerThreadCPUSecond/1e6)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
