package xdp

import (
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Transmitter sends UDP datagrams as Ethernet frames on the TX ring of one
// listener socket (Config.TXFrames; [Listener.Transmitter]): a reply skips
// the kernel's UDP, routing and neighbour code, and the caller names the
// link it takes (the one its request came in on, reversed). Add queues a
// frame, Flush hands the queued ones to the kernel in one system call.
// Frames come back through the completion ring and are reused; nothing is
// allocated per datagram.
//
// A Transmitter is not safe for concurrent use: its owner serialises Add
// and Flush (the responder calls them under its read loop's lock). It must
// not be used after the listener's Close.
type Transmitter struct {
	s      *socket
	stats  *Stats
	free   []uint64      // UMEM offsets of frames not in the kernel's hands
	prod   uint32        // the TX ring's producer index, queued frames included
	pub    uint32        // the producer index the kernel has seen
	queued uint32        // frames queued since the last Flush, for Stats
	cpu    unix.Timespec // threadCPU's result
}

// threadCPU returns the CPU time of the calling thread, in ns: a raw
// clock_gettime(2), which never blocks (CLOCK_THREAD_CPUTIME_ID has no
// vDSO path). Wall-clock time would also count the time another thread
// ran on this CPU meanwhile, such as the peer's receive thread a veth
// kick woke up (on a 2-vCPU VM over 100 % of a Key-Increment responder's
// CPU by that count).
func (t *Transmitter) threadCPU() int64 {
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&t.cpu)), 0)
	return t.cpu.Nano()
}

func newTransmitter(s *socket, st *Stats) *Transmitter {
	t := &Transmitter{s: s, stats: st, free: make([]uint64, 0, s.txFrames)}
	for i := range s.txFrames {
		t.free = append(t.free, s.txBase+uint64(i)*s.frameSize)
	}
	t.prod = atomic.LoadUint32(s.tx.producer)
	t.pub = t.prod
	return t
}

// reclaim takes back the frames the kernel has sent.
func (t *Transmitter) reclaim() {
	comp := &t.s.comp
	cons, prod := atomic.LoadUint32(comp.consumer), atomic.LoadUint32(comp.producer)
	for i := cons; i != prod; i++ {
		a := *comp.addr(i)
		// Only frames of the TX area, and never more than there are: a
		// corrupt completion ring must not hand a receive frame out.
		if a >= t.s.txBase && a < uint64(len(t.s.umem)) && len(t.free) < cap(t.free) {
			t.free = append(t.free, a&^(t.s.frameSize-1))
		}
	}
	atomic.StoreUint32(comp.consumer, prod)
}

// Add queues one datagram of payload from src to dst as a frame over link,
// built by [AppendLinkFrame]. It returns false, queueing nothing, when the
// frame would not fit a UMEM frame, the addresses are not of one IP version,
// or no frame or TX ring slot is free even after taking back the sent ones
// (Flush, then Add again, or send another way); Stats.TXFull counts the
// last case.
func (t *Transmitter) Add(link *Link, src, dst netip.AddrPort, payload []byte) bool {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	if src.Addr().Is4() != dst.Addr().Is4() || !src.Addr().IsValid() {
		return false
	}
	if FrameLen(link, src.Addr(), len(payload)) > int(t.s.frameSize) {
		return false
	}
	tx := &t.s.tx
	if len(t.free) == 0 || t.prod-atomic.LoadUint32(tx.consumer) >= tx.size {
		t.reclaim()
		if len(t.free) == 0 || t.prod-atomic.LoadUint32(tx.consumer) >= tx.size {
			t.stats.TXFull.Add(1)
			return false
		}
	}
	addr := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	f := AppendLinkFrame(t.s.umem[addr:addr:addr+t.s.frameSize], link, src, dst, payload)
	d := tx.desc(t.prod)
	d.Addr, d.Len, d.Options = addr, uint32(len(f)), 0
	t.prod++
	t.queued++
	return true
}

// Flush publishes the queued frames to the kernel and asks it to send them.
// Frames a failing kernel leaves in the ring go with the next Flush; an
// error other than "try again" is counted in Stats.TXErrors and returned.
func (t *Transmitter) Flush() error {
	if t.queued > 0 {
		t.stats.TXFrames.Add(uint64(t.queued))
		t.queued = 0
	}
	if t.prod != t.pub {
		atomic.StoreUint32(t.s.tx.producer, t.prod)
		t.pub = t.prod
	}
	if !t.s.kickNeeded() {
		return nil // nothing to time
	}
	start := t.threadCPU()
	err := t.s.kick()
	t.stats.TXKickNanos.Add(uint64(t.threadCPU() - start))
	if err != nil {
		t.stats.TXErrors.Add(1)
		return err
	}
	return nil
}

// kickNeeded says whether the TX ring holds frames the kernel has not
// taken and waits to be asked for them (a driver without need_wakeup
// sends without being asked).
func (s *socket) kickNeeded() bool {
	tx := &s.tx
	return atomic.LoadUint32(tx.consumer) != atomic.LoadUint32(tx.producer) &&
		atomic.LoadUint32(tx.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// kickTries bounds the sendto calls of one kick: in copy mode each call
// sends at most the socket's budget of frames (setTXBudget) and returns
// EAGAIN while more wait.
const kickTries = 8

// kick asks the kernel to send what the TX ring holds, until the ring is
// empty, the kernel has no room (the frames go with a later kick), or
// kickTries calls. It returns errors other than "try again" and "no
// buffer space".
func (s *socket) kick() error {
	for range kickTries {
		if !s.kickNeeded() {
			return nil
		}
		// A raw system call: sendto with MSG_DONTWAIT never blocks (it
		// can run for tens of µs, transmitting the frames and, on a
		// veth, the peer's receive softirq). Through Syscall6 the Go
		// scheduler saw the thread in a system call on every send, and
		// sysmon, finding no idle P, took its P away and handed it back
		// tens of thousands of times a second: CPU of the whole
		// process, charged in a benchmark to the receiving side.
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EBUSY:
			// Sent, or sent a budget's worth: go on while frames wait.
		case unix.ENOBUFS:
			return nil // out of socket buffer: a later kick sends the rest
		default:
			return e
		}
	}
	return nil
}

// setTXBudget lets one sendto(2) push up to 256 frames in copy mode instead
// of the default 32 (Linux 6.16+; older kernels keep theirs). The kernel
// takes no more than the TX ring's size.
func (s *socket) setTXBudget() {
	unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, int(min(256, s.tx.size)))
}
