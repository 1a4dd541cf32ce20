package udp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// Replier sends a datagram from the socket that received the packet being
// handled. It stays valid, and safe for concurrent use, until the listener is
// closed.
type Replier interface {
	// Reply sends b to the given address. b may be reused once Reply returns.
	Reply(b []byte, to netip.AddrPort) error
}

// Handler processes datagrams for one reader. It is called from that
// reader's goroutine only, so it needs no locking of its own state.
type Handler interface {
	// HandlePacket processes one datagram. b and its backing array are
	// reused after the call returns. from is the sender, IPv4 senders of a
	// dual-stack socket included as plain IPv4 addresses.
	HandlePacket(b []byte, from netip.AddrPort, r Replier)
	// EndBatch is called after each batch of datagrams (after every datagram
	// when not batched), so a handler can flush per-batch work. Batches in
	// which no datagram reached HandlePacket (all truncated) are skipped.
	EndBatch()
}

// Stats counts a listener's traffic over all its readers. Counters are
// updated once per batch, before the batch is handed to the handler.
type Stats struct {
	// Datagrams counts datagrams handed to handlers.
	Datagrams atomic.Uint64
	// Bytes counts the payload bytes of those datagrams.
	Bytes atomic.Uint64
	// Batches counts receive calls that returned at least one datagram:
	// recvmmsg calls when batched, single reads otherwise. Datagrams divided
	// by Batches is the mean batch size.
	Batches atomic.Uint64
	// Truncated counts datagrams longer than Config.MaxDatagram, dropped
	// without reaching a handler.
	Truncated atomic.Uint64
	// ReadErrors counts failed receive calls, closing excepted.
	ReadErrors atomic.Uint64
	// ReplyErrors counts failed Replier.Reply calls.
	ReplyErrors atomic.Uint64
}

// Listener reads datagrams from a set of sockets, one goroutine per socket,
// and hands them to per-reader handlers. Create one with [Listen] or [Serve],
// then call [Listener.Run].
type Listener struct {
	logger  *slog.Logger
	readers []*reader
	local   netip.AddrPort
	stats   Stats
	drops   dropCounter

	running   atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

// Listen binds cfg.Readers sockets to cfg.Addr with SO_REUSEPORT and returns
// a listener over them; reading starts with [Listener.Run]. newHandler is
// called once per reader, with the reader's index. logger may be nil.
//
// Listen fails with an error wrapping [syscall.EADDRINUSE] if any socket
// already holds cfg.Addr: another process's listener, another listener of
// this process, or a socket bound to an overlapping address (the
// unspecified address and a specific one on the same port). SO_REUSEPORT
// alone would let such a second listener of the same user join the first's
// group, and the kernel would split the datagrams between them.
func Listen(cfg Config, newHandler func(reader int) Handler, logger *slog.Logger) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Readers > 1 && !reusePort {
		return nil, fmt.Errorf("udp: Config.Readers = %d: more than one reader needs SO_REUSEPORT load balancing, which needs Linux", cfg.Readers)
	}
	logger = orDiscard(logger)
	conns, granted, err := listenAll(cfg)
	if err != nil {
		return nil, err
	}
	if granted < cfg.RecvBuffer {
		logger.Warn("udp: kernel granted a smaller receive buffer than configured; raise net.core.rmem_max or run with CAP_NET_ADMIN",
			"requested_bytes", cfg.RecvBuffer, "granted_bytes", granted)
	}
	l, err := newListener(conns, cfg, newHandler, logger)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	return l, nil
}

// listenAll binds the sockets. The first one is bound without SO_REUSEPORT,
// so that the bind fails if any socket already holds cfg.Addr, another
// process's SO_REUSEPORT group included, and picks a port no other socket
// holds when cfg.Addr asks for port 0; then it opens an SO_REUSEPORT group
// (openGroup) that the others join on the same port. It returns the
// smallest receive buffer the kernel granted (math.MaxInt if unknown).
func listenAll(cfg Config) ([]net.PacketConn, int, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, 0, fmt.Errorf("udp: Config.Addr %q: %w", cfg.Addr, err)
	}
	granted := math.MaxInt
	first := net.ListenConfig{Control: listenControl(cfg.RecvBuffer, false, &granted)}
	join := net.ListenConfig{Control: listenControl(cfg.RecvBuffer, true, &granted)}
	addr := cfg.Addr
	conns := make([]net.PacketConn, 0, cfg.Readers)
	fail := func(err error) ([]net.PacketConn, int, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, 0, err
	}
	for i := range cfg.Readers {
		lc := &join
		if i == 0 {
			lc = &first
		}
		c, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			if i == 0 && errors.Is(err, syscall.EADDRINUSE) {
				return fail(fmt.Errorf("udp: %s: %w (another process, or another listener of this one, holds it)", addr, syscall.EADDRINUSE))
			}
			return fail(fmt.Errorf("udp: listen on %s (reader %d): %w", addr, i, err))
		}
		conns = append(conns, c)
		if setRecvBufferAfterBind && cfg.RecvBuffer > 0 {
			if err := c.(*net.UDPConn).SetReadBuffer(cfg.RecvBuffer); err != nil {
				return fail(fmt.Errorf("udp: set receive buffer of %s: %w", addr, err))
			}
		}
		if i == 0 && cfg.Readers > 1 {
			addr = net.JoinHostPort(host, strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port))
			if err := openGroup(c); err != nil {
				return fail(fmt.Errorf("udp: listen on %s: %w", addr, err))
			}
		}
	}
	return conns, granted, nil
}

// Serve returns a listener over connections made by the caller, one reader
// per connection; reading starts with [Listener.Run]. Reads are batched when
// cfg.Batched is set and the connection is a *net.UDPConn. Only
// cfg.BatchSize, cfg.Batched and cfg.MaxDatagram are used. On success the
// listener owns conns and closes them; on error the caller still does.
// newHandler is called once per reader; logger may be nil.
func Serve(conns []net.PacketConn, cfg Config, newHandler func(reader int) Handler, logger *slog.Logger) (*Listener, error) {
	if len(conns) < 1 || len(conns) > MaxReaders {
		return nil, fmt.Errorf("udp: Serve: %d connections, want 1 to %d", len(conns), MaxReaders)
	}
	if err := cfg.validateIO(); err != nil {
		return nil, err
	}
	for i, c := range conns {
		if c == nil {
			return nil, fmt.Errorf("udp: Serve: connection %d is nil", i)
		}
	}
	return newListener(conns, cfg, newHandler, orDiscard(logger))
}

func newListener(conns []net.PacketConn, cfg Config, newHandler func(reader int) Handler, logger *slog.Logger) (*Listener, error) {
	if newHandler == nil {
		return nil, errors.New("udp: newHandler is nil")
	}
	l := &Listener{
		logger:  logger,
		readers: make([]*reader, len(conns)),
		local:   addrPort(conns[0].LocalAddr()),
		done:    make(chan struct{}),
	}
	for i, c := range conns {
		h := newHandler(i)
		if h == nil {
			return nil, fmt.Errorf("udp: newHandler(%d) returned nil", i)
		}
		l.readers[i] = newReader(i, c, h, cfg, l)
	}
	l.drops.init(conns)
	return l, nil
}

func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// LocalAddr returns the address the listener's sockets are bound to, with the
// port chosen by the kernel when the configured port was 0.
func (l *Listener) LocalAddr() netip.AddrPort { return l.local }

// Stats returns the listener's counters, live.
func (l *Listener) Stats() *Stats { return &l.stats }

// Run reads all sockets, each from its own goroutine, until ctx is done or
// [Listener.Close] is called, then closes the listener and returns nil once
// every reader has stopped: handlers are not called after Run returns. If a
// reader fails (a socket closed behind the listener's back, a non-transient
// read error), Run closes the listener and returns the first such error. Run
// may be called once.
func (l *Listener) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("udp: Listener.Run called twice")
	}
	select {
	case <-l.done:
		return nil
	default:
	}
	errc := make(chan error, len(l.readers))
	for _, r := range l.readers {
		go func() { errc <- r.run() }()
	}
	pending := len(l.readers)
	var first error
	select {
	case <-ctx.Done():
	case <-l.done:
	case first = <-errc:
		pending--
	}
	l.Close()
	for ; pending > 0; pending-- {
		if err := <-errc; first == nil {
			first = err
		}
	}
	return first
}

// Close closes the listener's sockets, which unblocks [Listener.Run]. It is
// idempotent: later calls return the first call's result. Stats and
// KernelDrops stay readable.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.drops.read() // last chance: closed sockets leave /proc/net/udp
		var errs []error
		for _, r := range l.readers {
			if err := r.conn.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// KernelDrops returns how many datagrams the kernel dropped on the listener's
// sockets since Listen or Serve, mostly because a receive buffer was full.
// These never reach the listener, so no other counter sees them. On Linux it
// reads the sockets' "drops" column of /proc/net/udp and /proc/net/udp6,
// which costs a scan of those files: call it at scrape rate, not per packet.
// It returns 0 where the kernel cannot report drops.
func (l *Listener) KernelDrops() uint64 { return l.drops.read() }

// Pending reports whether a datagram waits in one of the listener's socket
// buffers, not read yet (Linux; elsewhere false). A caller stopping the
// listener after its reports are all handled (a benchmark's drain) waits
// while it is true.
func (l *Listener) Pending() bool {
	for _, r := range l.readers {
		if queued(r.conn) {
			return true
		}
	}
	return false
}

// dropCounter follows the kernel's cumulative drop counter of each socket.
type dropCounter struct {
	mu     sync.Mutex
	socks  []sockDrops
	values map[uint64]uint64 // inode -> drops, reused by read
	ok     bool              // the platform reported drops at init
}

type sockDrops struct {
	inode uint64
	base  uint64 // kernel counter at init
	last  uint64 // drops since init, last seen
}

func (d *dropCounter) init(conns []net.PacketConn) {
	d.values = make(map[uint64]uint64, len(conns))
	for _, c := range conns {
		sc, ok := c.(syscall.Conn)
		if !ok {
			continue
		}
		if inode, ok := socketInode(sc); ok {
			d.socks = append(d.socks, sockDrops{inode: inode})
			d.values[inode] = 0
		}
	}
	if len(d.socks) == 0 || !readKernelDrops(d.values) {
		return
	}
	d.ok = true
	for i := range d.socks {
		d.socks[i].base = d.values[d.socks[i].inode]
	}
}

// read refreshes the counters and returns their sum. A socket missing from
// the kernel's table (closed) keeps its last count.
func (d *dropCounter) read() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ok {
		return 0
	}
	const missing = math.MaxUint64
	for inode := range d.values {
		d.values[inode] = missing
	}
	readKernelDrops(d.values)
	var sum uint64
	for i := range d.socks {
		s := &d.socks[i]
		if v := d.values[s.inode]; v != missing && v >= s.base && v-s.base > s.last {
			s.last = v - s.base
		}
		sum += s.last
	}
	return sum
}

// supported reports whether KernelDrops reflects the kernel's counter.
func (d *dropCounter) supported() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ok
}
