package xdp

import (
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Sender writes whole Ethernet frames on the TX ring of an AF_XDP socket. It
// is a load generator for benchmarks and tests, not part of the ingest: the
// [Listener] never transmits. A Sender is not safe for concurrent use.
type Sender struct {
	s    *socket
	free []uint64 // frames not in the kernel's hands
}

// NewSender opens a transmitting AF_XDP socket on queue 0 of the interface
// named ifname, in the network namespace of the calling thread. frames
// (a power of two, 64 to 65536) bounds the frames in flight; frames of
// cfg.FrameSize bytes, copy mode unless cfg.BindMode says otherwise.
func NewSender(ifname string, cfg Config) (*Sender, error) {
	return NewQueueSender(ifname, 0, cfg)
}

// NewQueueSender is [NewSender] on TX queue queue of the interface. On a
// veth the peer receives a frame on the RX queue of the same number (if it
// has that many), which is how a benchmark steers frames to the queues of a
// multi-queue listener.
func NewQueueSender(ifname string, queue int, cfg Config) (*Sender, error) {
	cfg.Interface = ifname
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("xdp: sender interface %q: %w", ifname, err)
	}
	s, err := openSocket(ifc.Index, queue, cfg, true)
	if err != nil {
		return nil, fmt.Errorf("xdp: sender on %s queue %d: %w", ifname, queue, err)
	}
	// Let one sendto(2) push more than the default 32 frames in copy mode
	// (Linux 6.16+; older kernels keep their budget).
	unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, 256)
	snd := &Sender{s: s, free: make([]uint64, 0, cfg.Frames)}
	for i := range cfg.Frames {
		snd.free = append(snd.free, uint64(i)*s.frameSize)
	}
	return snd, nil
}

// Send queues up to n frames and asks the kernel to transmit them. For each
// frame it calls fill with an empty slice of a UMEM frame's capacity; fill
// appends the frame and returns it. Send returns how many frames were queued:
// fewer than n when the TX ring or the free frames ran out (the kernel has
// not finished earlier ones). It does not allocate.
func (snd *Sender) Send(n int, fill func(frame []byte) []byte) (int, error) {
	s := snd.s
	// Take back the frames the kernel has sent.
	comp := &s.comp
	cons, prod := atomic.LoadUint32(comp.consumer), atomic.LoadUint32(comp.producer)
	for i := cons; i != prod; i++ {
		snd.free = append(snd.free, *comp.addr(i))
	}
	atomic.StoreUint32(comp.consumer, prod)

	tx := &s.rx
	txProd := atomic.LoadUint32(tx.producer)
	space := int(tx.size - (txProd - atomic.LoadUint32(tx.consumer)))
	k := min(n, len(snd.free), space)
	for i := range k {
		addr := snd.free[len(snd.free)-1]
		snd.free = snd.free[:len(snd.free)-1]
		f := fill(s.umem[addr : addr : addr+s.frameSize])
		d := tx.rxDesc(txProd + uint32(i))
		d.Addr, d.Len, d.Options = addr, uint32(len(f)), 0
	}
	atomic.StoreUint32(tx.producer, txProd+uint32(k))
	// A raw system call: sendto with MSG_DONTWAIT never blocks (it can run
	// for tens of µs, transmitting the frames and, on a veth, the peer's
	// receive softirq). Through Syscall6 the Go scheduler saw the thread in
	// a system call on every send, and sysmon, finding no idle P, took its P
	// away and handed it back tens of thousands of times a second: CPU of
	// the whole process, charged in a benchmark to the receiving side.
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS:
		return k, nil
	}
	return k, fmt.Errorf("xdp: sender: sendto: %w", e)
}

// Close closes the socket.
func (snd *Sender) Close() error {
	snd.s.close()
	return nil
}
