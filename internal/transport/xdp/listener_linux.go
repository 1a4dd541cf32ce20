package xdp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// maxRoutes bounds the ports one listener steers.
const maxRoutes = 16

// Listener reads the AF_XDP sockets of one interface, one goroutine per
// receive queue, and hands datagrams to per-reader, per-port handlers. Create
// one with [Listen], then call [Listener.Run].
type Listener struct {
	logger  *slog.Logger
	cfg     Config
	ifname  string
	objs    *objects
	link    link.Link
	socks   []*socket
	readers []*reader
	txs     []*Transmitter // by queue, with Config.TXFrames
	reply   *net.UDPConn
	mode    string
	stats   Stats

	mu        sync.Mutex
	closed    bool
	active    sync.WaitGroup // readers running
	running   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	kernel    KernelStats // last read, kept after Close
}

// Listen loads the steering program for the routes' ports, opens one AF_XDP
// socket per queue of cfg.Interface and attaches the program; reading starts
// with [Listener.Run]. The error names the step that failed and, where one
// exists, what to do about it. logger may be nil.
func Listen(cfg Config, routes []Route, logger *slog.Logger) (_ *Listener, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if err := checkRoutes(routes); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ifc, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("xdp: interface %q: %w (check the name with `ip link`)", cfg.Interface, err)
	}
	queues := cfg.Queues
	if queues == 0 {
		queues = rxQueues(cfg.Interface)
	}
	l := &Listener{logger: logger, cfg: cfg, ifname: cfg.Interface, done: make(chan struct{})}
	defer func() {
		if err != nil {
			l.teardown()
		}
	}()
	ports := make([]uint16, len(routes))
	for i, r := range routes {
		ports[i] = r.Port
	}
	if l.objs, err = loadObjects(ports, queues); err != nil {
		return nil, fmt.Errorf("xdp: %w (needs root or CAP_BPF and CAP_NET_ADMIN, and a kernel with BPF and XDP)", err)
	}
	for q := range queues {
		s, err := newSocket(ifc.Index, q, cfg)
		if err != nil {
			return nil, fmt.Errorf("xdp: %s queue %d: %w", cfg.Interface, q, err)
		}
		l.socks = append(l.socks, s)
		if err := l.objs.xsks.Put(uint32(q), uint32(s.fd)); err != nil {
			return nil, fmt.Errorf("xdp: add the socket of queue %d to the XSKMAP: %w", q, err)
		}
	}
	attach, err := l.attach(ifc.Index)
	if err != nil {
		return nil, err
	}
	l.reply, err = net.ListenUDP("udp", nil)
	if err != nil {
		return nil, fmt.Errorf("xdp: open the reply socket: %w", err)
	}
	copyMode := "copy"
	if l.socks[0].zeroCopy {
		copyMode = "zero-copy"
	}
	l.mode = attach + "/" + copyMode
	for q, s := range l.socks {
		l.readers = append(l.readers, newReader(q, s, routes, l))
		if cfg.TXFrames > 0 {
			s.setTXBudget()
			l.txs = append(l.txs, newTransmitter(s, &l.stats))
		}
	}
	logger.Info("xdp: program attached", "interface", cfg.Interface, "queues", queues, "mode", l.mode, "ports", ports)
	return l, nil
}

// attach attaches the program through a BPF link in the configured mode and
// returns the mode used.
func (l *Listener) attach(ifindex int) (string, error) {
	try := []struct {
		name  string
		flags link.XDPAttachFlags
	}{{AttachNative, link.XDPDriverMode}, {AttachGeneric, link.XDPGenericMode}}
	switch l.cfg.AttachMode {
	case AttachNative:
		try = try[:1]
	case AttachGeneric:
		try = try[1:]
	}
	var errs []error
	for _, t := range try {
		lk, err := link.AttachXDP(link.XDPOptions{Program: l.objs.prog, Interface: ifindex, Flags: t.flags})
		if err == nil {
			l.link = lk
			return t.name, nil
		}
		errs = append(errs, fmt.Errorf("%s mode: %w", t.name, err))
	}
	return "", fmt.Errorf("xdp: attach the program to %s: %w (another XDP program may be attached: see `ip link show %s`; or the kernel lacks BPF links for XDP, Linux 5.9+)",
		l.ifname, errors.Join(errs...), l.ifname)
}

func checkRoutes(routes []Route) error {
	if len(routes) < 1 || len(routes) > maxRoutes {
		return fmt.Errorf("xdp: %d routes, want 1 to %d", len(routes), maxRoutes)
	}
	seen := map[uint16]bool{}
	for i, r := range routes {
		if r.Port == 0 {
			return fmt.Errorf("xdp: route %d: port 0", i)
		}
		if seen[r.Port] {
			return fmt.Errorf("xdp: route %d: port %d given twice", i, r.Port)
		}
		seen[r.Port] = true
		if r.NewHandler == nil {
			return fmt.Errorf("xdp: route %d (port %d): NewHandler is nil", i, r.Port)
		}
	}
	return nil
}

// rxQueues counts the interface's receive queues (at least 1, at most 64).
func rxQueues(ifname string) int {
	m, _ := filepath.Glob(filepath.Join("/sys/class/net", ifname, "queues", "rx-*"))
	return min(max(len(m), 1), maxQueues)
}

// Mode returns how the program is attached and the sockets bound, e.g.
// "native/copy".
func (l *Listener) Mode() string { return l.mode }

// ReaderThreads returns the OS thread ids of the readers that have started
// (each reader is locked to its thread while it runs), in queue order; 0 for
// one that has not started yet. For per-thread CPU accounting.
func (l *Listener) ReaderThreads() []int {
	t := make([]int, len(l.readers))
	for i, r := range l.readers {
		t[i] = int(r.tid.Load())
	}
	return t
}

// ReaderPackets returns each reader's part of Stats.Packets, live, in
// queue order.
func (l *Listener) ReaderPackets() []uint64 {
	p := make([]uint64, len(l.readers))
	for i, r := range l.readers {
		p[i] = r.packets.Load()
	}
	return p
}

// Transmitter returns the Transmitter of queue's socket, or nil without
// Config.TXFrames or for a queue the listener does not read. It is for the
// goroutine that handles that queue's datagrams (the Handler the reader of
// that queue calls), or one that excludes it.
func (l *Listener) Transmitter(queue int) *Transmitter {
	if queue < 0 || queue >= len(l.txs) {
		return nil
	}
	return l.txs[queue]
}

// Stats returns the listener's counters, live.
func (l *Listener) Stats() *Stats { return &l.stats }

// KernelStats returns the kernel's counters of the listener's sockets,
// summed. It makes one system call per socket: call it at scrape rate. After
// Close it returns the last values read.
func (l *Listener) KernelStats() KernelStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.kernel
	}
	l.readKernel()
	return l.kernel
}

// readKernel refreshes l.kernel; l.mu is held and the sockets are open.
func (l *Listener) readKernel() {
	var k KernelStats
	for _, s := range l.socks {
		st, err := s.stats()
		if err != nil {
			return
		}
		k.RxDropped += st.Rx_dropped
		k.RxInvalidDescs += st.Rx_invalid_descs
		k.RxRingFull += st.Rx_ring_full
		k.RxFillRingEmpty += st.Rx_fill_ring_empty_descs
	}
	l.kernel = k
}

// Run reads every socket, each from its own goroutine locked to an OS thread,
// until ctx is done or [Listener.Close] is called, then closes the listener
// (detaching the program) and returns once every reader has stopped. If a
// reader fails, Run closes the listener and returns the error. Run may be
// called once.
func (l *Listener) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("xdp: Listener.Run called twice")
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.active.Add(len(l.readers))
	l.mu.Unlock()
	errc := make(chan error, len(l.readers))
	for _, r := range l.readers {
		go func() {
			defer l.active.Done()
			errc <- r.run()
		}()
	}
	var first error
	select {
	case <-ctx.Done():
	case <-l.done:
	case first = <-errc:
	}
	l.Close()
	return first
}

// Close stops the readers, detaches the program and closes the sockets. It
// is idempotent: later calls return the first call's result. Stats and
// KernelStats stay readable.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.done)
		l.mu.Unlock()
		l.active.Wait()
		l.mu.Lock()
		l.readKernel()
		l.mu.Unlock()
		l.closeErr = l.teardown()
	})
	return l.closeErr
}

// teardown detaches the program first, so that no frame is redirected to a
// closing socket, then releases everything.
func (l *Listener) teardown() error {
	var errs []error
	if l.link != nil {
		if err := l.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("xdp: detach from %s: %w", l.ifname, err))
		}
		l.link = nil
	}
	for _, s := range l.socks {
		if l.objs != nil {
			l.objs.xsks.Delete(uint32(s.queue)) // drops the map's reference now, not when the map is freed
		}
		s.close()
	}
	l.socks = nil
	if l.objs != nil {
		l.objs.close()
		l.objs = nil
	}
	if l.reply != nil {
		l.reply.Close()
	}
	return errors.Join(errs...)
}

// reader owns one socket and one handler per route; it is the Replier
// handed to them.
type reader struct {
	id     int
	s      *socket
	l      *Listener
	stats  *Stats
	ports  []uint16
	hs     []Handler
	ah     []AddrHandler // hs[i] as an AddrHandler, or nil
	used   []bool        // hs[i] got a datagram in this batch
	idlers []Idler       // hs[i] as an Idler, or nil
	busy   []bool        // hs[i] got a datagram since its last Idle
	batch  uint32
	dgrams []Datagram
	route  []int8   // per batch slot: index into hs, or -1
	addrs  []uint64 // frame base addresses of the batch's valid descriptors
	pfd    [1]unix.PollFd
	wait   int           // poll timeout, ms
	pause  unix.Timespec // the current pause after a short batch (adapt)
	// adapt's state: the pause's bounds (ns), the frames taken since the
	// last pause and the count beyond which a wake-up is too full.
	pauseMin, pauseMax int64
	got, target        uint32
	empty              int   // empty reads in a row, each followed by a pause
	slept              int64 // ns paused since the P was last yielded (sleep)
	runnable           [1]metrics.Sample

	touched byte // sink of pass 0's loads, so that they are not optimised away

	tid     atomic.Int64  // the OS thread running the reader, once it runs
	packets atomic.Uint64 // this reader's part of Stats.Packets
}

func newReader(id int, s *socket, routes []Route, l *Listener) *reader {
	n := l.cfg.BatchSize
	r := &reader{
		id: id, s: s, l: l, stats: &l.stats,
		batch:  uint32(n),
		dgrams: make([]Datagram, n),
		route:  make([]int8, n),
		addrs:  make([]uint64, n),
		used:   make([]bool, len(routes)),
		busy:   make([]bool, len(routes)),
		wait:   int(l.cfg.PollTimeout.Milliseconds()),
		pause:  unix.NsecToTimespec(l.cfg.Coalesce.Nanoseconds()),
		// A wake-up that finds more than a quarter of the RX ring
		// shortens the pause: room for the rate to quadruple.
		target:   uint32(l.cfg.RXRing / 4),
		pauseMin: l.cfg.Coalesce.Nanoseconds(),
		pauseMax: max(l.cfg.CoalesceMax.Nanoseconds(), l.cfg.Coalesce.Nanoseconds()),
	}
	r.runnable[0].Name = "/sched/goroutines/runnable:goroutines"
	if r.pauseMin == 0 {
		r.pauseMax = 0 // Coalesce 0: never pause
	}
	for _, rt := range routes {
		r.ports = append(r.ports, rt.Port)
		h := rt.NewHandler(id)
		ah, _ := h.(AddrHandler)
		idler, _ := h.(Idler)
		r.hs, r.ah, r.idlers = append(r.hs, h), append(r.ah, ah), append(r.idlers, idler)
	}
	r.pfd[0] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	return r
}

// Reply sends b to the given address from the listener's reply socket.
func (r *reader) Reply(b []byte, to netip.AddrPort) error {
	_, err := r.l.reply.WriteToUDPAddrPort(b, to)
	if err != nil {
		r.stats.ReplyErrors.Add(1)
	}
	return err
}

func (r *reader) closing() bool {
	select {
	case <-r.l.done:
		return true
	default:
		return false
	}
}

// run drains the RX ring in batches until the listener closes.
func (r *reader) run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r.tid.Store(int64(unix.Gettid()))
	for !r.closing() {
		if n := r.receive(); n > 0 {
			r.empty = 0
			r.got += n
			if n < r.batch {
				r.adapt()
			}
			if n < r.batch && r.pause.Nsec > 0 {
				// Let frames gather, in a raw system call (see
				// sleep), as the refill's wake-up.
				r.sleep()
			}
			continue
		}
		r.got = 0
		r.pause = unix.NsecToTimespec(r.pauseMin)
		if r.pause.Nsec > 0 && r.empty < emptyPauses {
			// A gap in the traffic, most likely: pause and look
			// again before blocking in poll(2). Through the
			// scheduler's system call, each poll lets sysmon take
			// the P and keeps it waking every 20µs; on a loaded
			// machine, where the sender is often off its CPU, the
			// reader found its ring empty thousands of times a
			// second.
			r.empty++
			r.sleep()
			continue
		}
		r.empty = 0
		r.stats.EmptyPolls.Add(1)
		r.idle()
		if _, err := unix.Poll(r.pfd[:], r.wait); err != nil && err != unix.EINTR {
			if r.closing() {
				return nil
			}
			return fmt.Errorf("xdp: reader %d: poll: %w", r.id, err)
		}
	}
	return nil
}

// emptyPauses is how many times in a row a reader finding its RX ring empty
// pauses (Config.Coalesce) and looks again before it blocks in poll(2).
const emptyPauses = 4

// adapt sets the pause that follows a short batch from the frames taken
// since the last one (Config.CoalesceMax): doubled while each wake-up finds
// at least lightLoad frames but at most half the target, halved above the
// target, back to Config.Coalesce under light load.
func (r *reader) adapt() {
	got := r.got
	r.got = 0
	if r.pauseMax == r.pauseMin {
		return
	}
	p := r.pause.Nano()
	switch {
	case got < lightLoad:
		p = r.pauseMin
	case got > r.target:
		p = max(p/2, r.pauseMin)
	case got <= r.target/2:
		p = min(max(2*p, 1000), r.pauseMax)
	}
	r.pause = unix.NsecToTimespec(p)
}

// lightLoad is the fewest frames since the last pause that let the pause
// grow. Fewer mean under 53 k frames per second at a responder's 150µs
// pause (160 k at the default 50µs), whose wake-ups then cost little CPU in
// all and for which a short wait matters more. With more, each wake-up's
// cost (about 20µs of CPU on the VM of docs/BENCHMARKS.md) outweighs the
// frames' own work, and a sender at a steady rate brings more frames to a
// longer pause. (It was BatchSize, 64: a responder taking Append's batched
// writes at 50 to 59 k packets a second woke for 13 to 16 each.)
const lightLoad = 8

// receive handles up to one batch of RX descriptors and returns the frames
// to the fill ring. It returns how many descriptors it took.
func (r *reader) receive() uint32 {
	s := r.s
	cons := atomic.LoadUint32(s.rx.consumer)
	n := min(atomic.LoadUint32(s.rx.producer)-cons, r.batch)
	if n == 0 {
		return 0
	}
	// Pass 0: touch the first cache line of every frame. The kernel has
	// just written them, mostly from another CPU; independent loads let
	// the core wait for all those transfers at once instead of one per
	// frame in pass 1.
	var touch byte
	for i := range n {
		d := s.rx.desc(cons + i)
		if d.Addr < uint64(len(s.umem)) {
			touch += s.umem[d.Addr]
		}
	}
	r.touched += touch
	// Pass 1: check every frame and count, so that Stats include a
	// datagram by the time its handler runs.
	var packets, bytes, invalid uint64
	var bad [numReasons]uint64
	var frames uint32 // frames to refill: every valid descriptor's
	for i := range n {
		d := s.rx.desc(cons + i)
		r.route[i] = -1
		f := s.frame(d)
		if f == nil {
			// Not a frame of ours: nothing to give back either.
			invalid++
			continue
		}
		r.addrs[frames] = d.Addr &^ (s.frameSize - 1)
		frames++
		dg := &r.dgrams[i]
		reason := ParseFrame(f, dg)
		if reason == ReasonNone {
			reason = ReasonPort
			for j, p := range r.ports {
				if p == dg.DstPort {
					r.route[i], reason = int8(j), ReasonNone
					break
				}
			}
		}
		if reason != ReasonNone {
			bad[reason]++
			continue
		}
		packets++
		bytes += uint64(len(dg.Payload))
	}
	atomic.StoreUint32(s.rx.consumer, cons+n)
	r.stats.Batches.Add(1)
	if packets > 0 {
		r.packets.Add(packets)
		r.stats.Packets.Add(packets)
		r.stats.Bytes.Add(bytes)
	}
	if invalid > 0 {
		r.stats.InvalidDescs.Add(invalid)
	}
	for reason, c := range bad {
		if c > 0 {
			r.stats.Malformed[reason].Add(c)
		}
	}
	// Pass 2: hand on.
	for i := range n {
		if j := r.route[i]; j >= 0 {
			dg := &r.dgrams[i]
			if ah := r.ah[j]; ah != nil {
				ah.HandleDatagram(dg, r)
			} else {
				r.hs[j].HandlePacket(dg.Payload, dg.From, r)
			}
			r.used[j] = true
		}
	}
	for j, u := range r.used {
		if u {
			r.hs[j].EndBatch()
			r.used[j] = false
			r.busy[j] = true
		}
	}
	r.refill(frames)
	return n
}

// refill returns the batch's n frames (r.addrs[:n]) to the fill ring. Every
// frame the socket owns fits in the fill ring, so there is always room.
func (r *reader) refill(n uint32) {
	fill := &r.s.fill
	prod := atomic.LoadUint32(fill.producer)
	if prod == atomic.LoadUint32(fill.consumer) {
		r.stats.FillStarved.Add(1)
	}
	for i := range n {
		*fill.addr(prod + i) = r.addrs[i]
	}
	atomic.StoreUint32(fill.producer, prod+n)
	if atomic.LoadUint32(fill.flags)&unix.XDP_RING_NEED_WAKEUP != 0 {
		unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(r.s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// idle tells the handlers that got datagrams since they were last told
// (Idler) that the reader is about to wait.
func (r *reader) idle() {
	for j, b := range r.busy {
		if b {
			r.busy[j] = false
			if id := r.idlers[j]; id != nil {
				id.Idle()
			}
		}
	}
}

// yieldEvery bounds how long a reader keeps its P through raw pauses
// before it lets the Go scheduler run other goroutines on it.
const yieldEvery = time.Millisecond

// sleep pauses the reader for r.pause (at most Config.CoalesceMax) in a raw
// system call. Through the scheduler's Syscall, each pause made the P look
// blocked in a system call; sysmon, finding no idle P on a busy machine,
// retook it, and kept itself waking every 20µs: a sixth to a third of the
// reader side's CPU in `dta bench --transport xdp`. A raw call keeps the P
// while the thread sleeps, so after yieldEvery of pauses the reader yields
// it (runtime.Gosched): other goroutines (other readers, the ingest's
// ticker, replies) wait for a P at most about that long, as they would for
// a busy reader, not the 10ms after which sysmon preempts a goroutine.
func (r *reader) sleep() {
	r.idle()
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&r.pause)), 0, 0)
	if r.slept += r.pause.Nano(); r.slept >= int64(yieldEvery) {
		r.slept = 0
		// Yielding a P from a goroutine locked to its thread costs two
		// thread hand-offs: only when a goroutine is waiting for one.
		metrics.Read(r.runnable[:])
		if s := r.runnable[0].Value; s.Kind() == metrics.KindUint64 && s.Uint64() > 0 {
			runtime.Gosched()
		}
	}
}
