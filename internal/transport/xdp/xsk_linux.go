package xdp

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one of the single-producer single-consumer rings an AF_XDP socket
// shares with the kernel. The producer and consumer indices are free-running
// uint32s in shared memory, read and written with atomics (sequentially
// consistent, which covers the acquire/release order the rings need).
type ring struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	flags    *uint32
	descs    unsafe.Pointer
	mask     uint32
	size     uint32
}

func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n uint32, descSize uintptr) (ring, error) {
	length := int(off.Desc) + int(n)*int(descSize)
	mem, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, err
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	return ring{
		mem:      mem,
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		descs:    unsafe.Add(base, off.Desc),
		mask:     n - 1,
		size:     n,
	}, nil
}

func (r *ring) unmap() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// desc returns descriptor i (free-running index) of an RX or TX ring.
func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

// addr returns fill-ring slot i (free-running index).
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

// bindBusyWait bounds how long a bind retries a queue that is still busy.
const bindBusyWait = 2 * time.Second

// socket is one AF_XDP socket bound to one queue, with its own UMEM and
// rings: a receiving socket has fill and RX rings and, with
// Config.TXFrames, a TX ring; a sender's has a TX ring only. The kernel
// requires a completion ring either way.
type socket struct {
	fd        int
	queue     int
	umem      []byte
	frameSize uint64
	fill      ring
	comp      ring
	rx        ring   // unmapped on a sender's socket
	tx        ring   // unmapped on a receiving socket without TXFrames
	txBase    uint64 // UMEM offset of the first frame kept for the TX ring
	txFrames  int
	zeroCopy  bool
}

// newSocket creates, maps and binds a receiving socket to queue of ifindex
// and fills its fill ring with every receive frame; with cfg.TXFrames it
// also has a TX ring and that many more frames, kept for a Transmitter. On
// error nothing is left open; the error names the step that failed.
func newSocket(ifindex, queue int, cfg Config) (*socket, error) {
	return openSocket(ifindex, queue, cfg, false)
}

// openSocket opens a socket for receiving (sender false: fill and RX rings,
// every receive frame given to the kernel, plus a TX ring of cfg.TXFrames
// when not 0) or for transmitting only (sender true: a TX ring of
// cfg.Frames, every frame kept by the caller).
func openSocket(ifindex, queue int, cfg Config, sender bool) (_ *socket, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create an AF_XDP socket (kernel built without CONFIG_XDP_SOCKETS, or missing CAP_NET_RAW): %w", err)
	}
	s := &socket{fd: fd, queue: queue, frameSize: uint64(cfg.FrameSize)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	rxFrames, txFrames := cfg.Frames, cfg.TXFrames
	if sender {
		rxFrames, txFrames = 0, cfg.Frames
	}
	s.txBase, s.txFrames = uint64(rxFrames)*s.frameSize, txFrames
	size := (rxFrames + txFrames) * cfg.FrameSize
	s.umem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes of UMEM: %w", size, err)
	}
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(s.umem)))),
		Len:  uint64(size),
		Size: uint32(cfg.FrameSize),
	}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("register UMEM (XDP_UMEM_REG): %w", err)
	}
	type ringSpec struct {
		name     string
		opt      int
		n        int
		pgoff    int64
		descSize uintptr
		r        *ring
	}
	desc := unsafe.Sizeof(unix.XDPDesc{})
	// The kernel wants fill and completion rings whatever the socket
	// does; a ring nobody uses gets the smallest size.
	specs := []ringSpec{
		{name: "fill", opt: unix.XDP_UMEM_FILL_RING, n: max(rxFrames, 64), pgoff: unix.XDP_UMEM_PGOFF_FILL_RING, descSize: 8, r: &s.fill},
		{name: "completion", opt: unix.XDP_UMEM_COMPLETION_RING, n: max(txFrames, 64), pgoff: unix.XDP_UMEM_PGOFF_COMPLETION_RING, descSize: 8, r: &s.comp},
	}
	if !sender {
		specs = append(specs, ringSpec{name: "RX", opt: unix.XDP_RX_RING, n: cfg.RXRing, pgoff: unix.XDP_PGOFF_RX_RING, descSize: desc, r: &s.rx})
	}
	if txFrames > 0 {
		specs = append(specs, ringSpec{name: "TX", opt: unix.XDP_TX_RING, n: txFrames, pgoff: unix.XDP_PGOFF_TX_RING, descSize: desc, r: &s.tx})
	}
	for _, o := range specs {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, o.n); err != nil {
			return nil, fmt.Errorf("size the %s ring to %d: %w", o.name, o.n, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return nil, fmt.Errorf("read ring offsets (XDP_MMAP_OFFSETS): %w", err)
	}
	for _, o := range specs {
		ro := off.Fr
		switch o.opt {
		case unix.XDP_UMEM_COMPLETION_RING:
			ro = off.Cr
		case unix.XDP_RX_RING:
			ro = off.Rx
		case unix.XDP_TX_RING:
			ro = off.Tx
		}
		if *o.r, err = mapRing(fd, ro, o.pgoff, uint32(o.n), o.descSize); err != nil {
			return nil, fmt.Errorf("map the %s ring: %w", o.name, err)
		}
	}
	if !sender {
		// Give the kernel every receive frame before binding.
		for i := range uint32(rxFrames) {
			*s.fill.addr(i) = uint64(i) * s.frameSize
		}
		atomic.StoreUint32(s.fill.producer, uint32(rxFrames))
	}

	flags := uint16(unix.XDP_USE_NEED_WAKEUP)
	switch cfg.BindMode {
	case BindCopy:
		flags |= unix.XDP_COPY
	case BindZeroCopy:
		flags |= unix.XDP_ZEROCOPY
	}
	// A socket closed a moment ago (by this process, or by one that just
	// died) releases its queue from a kernel work queue: retry EBUSY for a
	// while before calling the queue taken.
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	err = unix.Bind(fd, sa)
	for deadline := time.Now().Add(bindBusyWait); err == unix.EBUSY && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		err = unix.Bind(fd, sa)
	}
	if err != nil {
		return nil, fmt.Errorf("bind to queue %d (bind mode %s; zero-copy needs driver support, try bind_mode copy): %w", queue, cfg.BindMode, err)
	}
	var opts uint32
	if getsockopt(fd, unix.XDP_OPTIONS, unsafe.Pointer(&opts), unsafe.Sizeof(opts)) == nil {
		s.zeroCopy = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	return s, nil
}

// frame returns the bytes of an RX descriptor, or nil if the kernel handed
// out a descriptor outside the UMEM.
func (s *socket) frame(d *unix.XDPDesc) []byte {
	end := d.Addr + uint64(d.Len)
	if end > uint64(len(s.umem)) || end < d.Addr {
		return nil
	}
	return s.umem[d.Addr:end:end]
}

// stats reads the kernel's counters of the socket.
func (s *socket) stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockopt(s.fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

func (s *socket) close() {
	s.tx.unmap()
	s.rx.unmap()
	s.comp.unmap()
	s.fill.unmap()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.umem != nil {
		unix.Munmap(s.umem)
		s.umem = nil
	}
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	l := uint32(n)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}
