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

// rxDesc returns RX descriptor i (free-running index).
func (r *ring) rxDesc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

// addr returns fill-ring slot i (free-running index).
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

// bindBusyWait bounds how long a bind retries a queue that is still busy.
const bindBusyWait = 2 * time.Second

// socket is one AF_XDP socket bound to one queue, with its own UMEM, fill and
// completion rings (completion is required by the kernel but unused: the
// socket never transmits) and RX ring.
type socket struct {
	fd        int
	queue     int
	umem      []byte
	frameSize uint64
	fill      ring
	comp      ring
	rx        ring // the TX ring of a transmitting socket
	zeroCopy  bool
}

// newSocket creates, maps and binds a socket to queue of ifindex and fills
// its fill ring with every frame. On error nothing is left open; the error
// names the step that failed.
func newSocket(ifindex, queue int, cfg Config) (*socket, error) {
	return openSocket(ifindex, queue, cfg, false)
}

// openSocket opens a socket for receiving (tx false: fill and RX rings, every
// frame given to the kernel) or for transmitting (tx true: TX and
// completion rings, every frame kept by the caller).
func openSocket(ifindex, queue int, cfg Config, tx bool) (_ *socket, err error) {
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
	size := cfg.Frames * cfg.FrameSize
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
	fillN, compN, dataN, dataName, dataOpt := cfg.Frames, 64, cfg.RXRing, "RX", unix.XDP_RX_RING
	if tx {
		fillN, compN, dataName, dataOpt = 64, cfg.Frames, "TX", unix.XDP_TX_RING
	}
	for _, o := range []struct {
		name string
		opt  int
		n    int
	}{
		{"fill", unix.XDP_UMEM_FILL_RING, fillN},
		{"completion", unix.XDP_UMEM_COMPLETION_RING, compN},
		{dataName, dataOpt, dataN},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, o.n); err != nil {
			return nil, fmt.Errorf("size the %s ring to %d: %w", o.name, o.n, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return nil, fmt.Errorf("read ring offsets (XDP_MMAP_OFFSETS): %w", err)
	}
	if s.fill, err = mapRing(fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, uint32(fillN), 8); err != nil {
		return nil, fmt.Errorf("map the fill ring: %w", err)
	}
	if s.comp, err = mapRing(fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, uint32(compN), 8); err != nil {
		return nil, fmt.Errorf("map the completion ring: %w", err)
	}
	if tx {
		if s.rx, err = mapRing(fd, off.Tx, unix.XDP_PGOFF_TX_RING, uint32(dataN), unsafe.Sizeof(unix.XDPDesc{})); err != nil {
			return nil, fmt.Errorf("map the TX ring: %w", err)
		}
	} else {
		if s.rx, err = mapRing(fd, off.Rx, unix.XDP_PGOFF_RX_RING, uint32(dataN), unsafe.Sizeof(unix.XDPDesc{})); err != nil {
			return nil, fmt.Errorf("map the RX ring: %w", err)
		}
		// Give the kernel every frame before binding.
		for i := range uint32(cfg.Frames) {
			*s.fill.addr(i) = uint64(i) * s.frameSize
		}
		atomic.StoreUint32(s.fill.producer, uint32(cfg.Frames))
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
