package xdp

import (
	"fmt"
	"net"
	"sync/atomic"
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
		return nil, fmt.Errorf("xdp: %w", err)
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("xdp: sender interface %q: %w", ifname, err)
	}
	s, err := openSocket(ifc.Index, queue, cfg, true)
	if err != nil {
		return nil, fmt.Errorf("xdp: sender on %s queue %d: %w", ifname, queue, err)
	}
	s.setTXBudget()
	snd := &Sender{s: s, free: make([]uint64, 0, cfg.Frames)}
	for i := range cfg.Frames {
		snd.free = append(snd.free, s.txBase+uint64(i)*s.frameSize)
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

	tx := &s.tx
	txProd := atomic.LoadUint32(tx.producer)
	space := int(tx.size - (txProd - atomic.LoadUint32(tx.consumer)))
	k := min(n, len(snd.free), space)
	for i := range k {
		addr := snd.free[len(snd.free)-1]
		snd.free = snd.free[:len(snd.free)-1]
		f := fill(s.umem[addr : addr : addr+s.frameSize])
		d := tx.desc(txProd + uint32(i))
		d.Addr, d.Len, d.Options = addr, uint32(len(f)), 0
	}
	atomic.StoreUint32(tx.producer, txProd+uint32(k))
	if err := s.kick(); err != nil {
		return k, fmt.Errorf("xdp: sender: sendto: %w", err)
	}
	return k, nil
}

// Close closes the socket.
func (snd *Sender) Close() error {
	snd.s.close()
	return nil
}
