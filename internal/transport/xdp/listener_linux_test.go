package xdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/vethtest"
)

// recorder keeps a copy of every datagram, for tests.
type recorder struct {
	mu    sync.Mutex
	got   [][]byte
	from  []netip.AddrPort
	batch int
	ch    chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 1)} }

func (r *recorder) HandlePacket(b []byte, from netip.AddrPort, _ Replier) {
	r.mu.Lock()
	r.got = append(r.got, bytes.Clone(b))
	r.from = append(r.from, from)
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

func (r *recorder) EndBatch() {
	r.mu.Lock()
	r.batch++
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// waitFor waits until the recorder holds n datagrams.
func (r *recorder) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for r.count() < n {
		select {
		case <-r.ch:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("got %d datagrams, want %d", r.count(), n)
		}
	}
}

func testConfig(ifname string) Config {
	c := DefaultConfig()
	c.Interface = ifname
	c.Frames, c.RXRing = 256, 256
	c.PollTimeout = 20 * time.Millisecond
	return c
}

// startListener listens on v.Host for port, recording into rec, and runs it
// until the test ends.
func startListener(t *testing.T, cfg Config, routes []Route) *Listener {
	t.Helper()
	l, err := Listen(cfg, routes, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return l
}

func TestReportsArriveByteExact(t *testing.T) {
	v := newVeth(t)
	rec, intRec := newRecorder(), newRecorder()
	l := startListener(t, testConfig(v.Host), []Route{
		{Port: 40040, NewHandler: func(int) Handler { return rec }},
		{Port: 40041, NewHandler: func(int) Handler { return intRec }},
	})
	t.Logf("mode %s", l.Mode())
	c := v.udpSender(t)
	const n = 200
	var want [][]byte
	for i := range n {
		p := make([]byte, 1+i*7%1400)
		for j := range p {
			p[j] = byte(i + j)
		}
		want = append(want, p)
		if _, err := c.WriteToUDPAddrPort(p, netip.AddrPortFrom(v.HostAddr, 40040)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			rec.waitFor(t, i+1) // the RX ring holds 256 frames
		}
	}
	if _, err := c.WriteToUDPAddrPort([]byte("int"), netip.AddrPortFrom(v.HostAddr, 40041)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, n)
	intRec.waitFor(t, 1)
	src := netip.AddrPortFrom(v.PeerAddr, uint16(c.LocalAddr().(*net.UDPAddr).Port))
	for i := range want {
		if !bytes.Equal(rec.got[i], want[i]) {
			t.Fatalf("datagram %d: got %d bytes %x..., want %d bytes", i, len(rec.got[i]), rec.got[i][:min(8, len(rec.got[i]))], len(want[i]))
		}
		if rec.from[i] != src {
			t.Fatalf("datagram %d from %v, want %v", i, rec.from[i], src)
		}
	}
	if string(intRec.got[0]) != "int" {
		t.Errorf("INT port got %q", intRec.got[0])
	}
	if got := l.Stats().Packets.Load(); got != n+1 {
		t.Errorf("Stats.Packets = %d, want %d", got, n+1)
	}
}

func TestOtherTrafficStillReachesTheKernel(t *testing.T) {
	v := newVeth(t)
	rec := newRecorder()
	l := startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return rec }}})
	// Ping from the peer.
	if err := v.ping(t); err != nil {
		t.Fatalf("ping while attached: %v", err)
	}
	// UDP to another port reaches an ordinary socket.
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: v.HostAddr.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	c := v.udpSender(t)
	if _, err := c.WriteToUDPAddrPort([]byte("kernel"), u.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	u.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 64)
	if n, _, err := u.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != "kernel" {
		t.Fatalf("UDP to another port: %q, %v", buf[:n], err)
	}
	// TCP connects.
	tl, err := net.Listen("tcp4", net.JoinHostPort(v.HostAddr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	go func() {
		if c, err := tl.Accept(); err == nil {
			c.Write([]byte("tcp"))
			c.Close()
		}
	}()
	var tc net.Conn
	v.InNS(t, func() { tc, err = net.DialTimeout("tcp4", tl.Addr().String(), 3*time.Second) })
	if err != nil {
		t.Fatalf("TCP connect while attached: %v", err)
	}
	tc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, _ := tc.Read(buf); string(buf[:n]) != "tcp" {
		t.Errorf("TCP read %q", buf[:n])
	}
	tc.Close()
	if rec.count() != 0 || l.Stats().Packets.Load() != 0 {
		t.Errorf("the handler got %d datagrams of other traffic", rec.count())
	}
}

func TestMalformedFramesAreCountedNotHandedOn(t *testing.T) {
	v := newVeth(t)
	rec := newRecorder()
	l := startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return rec }}})
	send := v.rawSender(t)
	var peerMAC [6]byte
	src, dst := netip.AddrPortFrom(v.PeerAddr, 5555), netip.AddrPortFrom(v.HostAddr, 40040)
	good := func() []byte { return AppendFrame(nil, peerMAC, v.HostMAC, src, dst, []byte("payload!")) }
	const ip = ethHeaderLen
	fixSum := func(f []byte) {
		binary.BigEndian.PutUint16(f[ip+10:], 0)
		binary.BigEndian.PutUint16(f[ip+10:], ^ipv4Checksum(f[ip:ip+20]))
	}
	for _, tc := range []struct {
		name   string
		frame  func() []byte
		reason Reason // ReasonNone: the kernel gets it (the program cannot find a port)
	}{
		{"a frame cut inside the IP header goes to the kernel", func() []byte { return good()[:ip+12] }, ReasonNone},
		{"an IPv4 header length under 20 bytes is a bad IP header", func() []byte { f := good(); f[ip] = 0x43; fixSum(f); return f }, ReasonBadIPHeader},
		{"a wrong IPv4 checksum is a bad IP header", func() []byte { f := good(); f[ip+10] ^= 0xff; return f }, ReasonBadIPHeader},
		{"an IP length beyond the frame is counted", func() []byte { f := good(); binary.BigEndian.PutUint16(f[ip+2:], 1000); fixSum(f); return f }, ReasonIPLength},
		{"a UDP length beyond the IP payload is counted", func() []byte { f := good(); binary.BigEndian.PutUint16(f[ip+24:], 200); return f }, ReasonUDPLength},
		{"a UDP length under 8 is counted", func() []byte { f := good(); binary.BigEndian.PutUint16(f[ip+24:], 4); return f }, ReasonUDPLength},
		{"a first fragment is counted", func() []byte { f := good(); f[ip+6] = 0x20; fixSum(f); return f }, ReasonFragment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := l.Stats().Malformed[tc.reason].Load()
			send(tc.frame())
			// A good frame after it: once it arrives, the bad one has
			// been seen (one queue, in order).
			n := rec.count()
			send(good())
			rec.waitFor(t, n+1)
			if got := rec.count(); got != n+1 {
				t.Fatalf("handler got %d datagrams, want %d", got-n, 1)
			}
			if tc.reason != ReasonNone {
				if got := l.Stats().Malformed[tc.reason].Load() - before; got != 1 {
					t.Errorf("Malformed[%v] went up by %d, want 1", tc.reason, got)
				}
			}
		})
	}
	for i, g := range rec.got {
		if string(g) != "payload!" {
			t.Errorf("datagram %d handed on: %q", i, g)
		}
	}
}

func TestCloseDetachesTheProgram(t *testing.T) {
	v := newVeth(t)
	l, err := Listen(testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return newRecorder() }}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Attached(t) {
		t.Fatalf("no XDP program on %s after Listen:\n%s", v.Host, vethtest.Run(t, "ip", "link", "show", "dev", v.Host))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if v.Attached(t) {
		t.Fatalf("XDP program still on %s after Close:\n%s", v.Host, vethtest.Run(t, "ip", "link", "show", "dev", v.Host))
	}
	// A second listener attaches again.
	l2, err := Listen(testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return newRecorder() }}}, nil)
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	l2.Close()
}

func TestListenNamesTheFailedStep(t *testing.T) {
	vethtest.Need(t)
	for _, tc := range []struct {
		name, ifname, want string
	}{
		{"a missing interface is named", "nosuchdta0", `interface "nosuchdta0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Listen(testConfig(tc.ifname), []Route{{Port: 1, NewHandler: func(int) Handler { return newRecorder() }}}, nil)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSenderFramesReachTheListener(t *testing.T) {
	v := newVeth(t)
	rec := newRecorder()
	startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return rec }}})
	var snd *Sender
	var err error
	v.InNS(t, func() {
		c := DefaultConfig()
		c.Frames, c.BindMode = 64, BindCopy
		snd, err = NewSender(v.Peer, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	src, dst := netip.AddrPortFrom(v.PeerAddr, 7000), netip.AddrPortFrom(v.HostAddr, 40040)
	const n = 200 // more than the sender's 64 frames: they are reused
	i := 0
	for i < n {
		k, err := snd.Send(n-i, func(b []byte) []byte {
			p := fmt.Appendf(nil, "frame %d", i)
			i++
			return AppendFrame(b, [6]byte{}, v.HostMAC, src, dst, p)
		})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
		if i%50 == 0 {
			rec.waitFor(t, i) // the listener's RX ring is small
		}
	}
	rec.waitFor(t, n)
	for j, g := range rec.got {
		if want := fmt.Sprintf("frame %d", j); string(g) != want || rec.from[j] != src {
			t.Fatalf("datagram %d = %q from %v, want %q from %v", j, g, rec.from[j], want, src)
		}
	}
}

func TestIPv6AndVLANTaggedReportsArrive(t *testing.T) {
	v := newVeth(t)
	host6, peer6 := netip.MustParseAddr("fd00:d7a::1"), netip.MustParseAddr("fd00:d7a::2")
	vethtest.Run(t, "ip", "-6", "addr", "add", host6.String()+"/64", "dev", v.Host, "nodad")
	vethtest.Run(t, "ip", "-n", v.NS, "-6", "addr", "add", peer6.String()+"/64", "dev", v.Peer, "nodad")
	rec := newRecorder()
	startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return rec }}})

	t.Run("an IPv6 report from a UDP socket arrives", func(t *testing.T) {
		var c *net.UDPConn
		var err error
		v.InNS(t, func() { c, err = net.ListenUDP("udp6", &net.UDPAddr{IP: peer6.AsSlice()}) })
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		n := rec.count()
		// The neighbour entry may take a moment: resend until it arrives.
		deadline := time.Now().Add(5 * time.Second)
		for rec.count() == n {
			if time.Now().After(deadline) {
				t.Fatal("no IPv6 report arrived")
			}
			c.WriteToUDPAddrPort([]byte("six"), netip.AddrPortFrom(host6, 40040))
			time.Sleep(50 * time.Millisecond)
		}
		rec.mu.Lock()
		got, from := rec.got[n], rec.from[n]
		rec.mu.Unlock()
		if string(got) != "six" || from.Addr() != peer6 {
			t.Errorf("got %q from %v", got, from)
		}
	})
	t.Run("a VLAN-tagged report arrives", func(t *testing.T) {
		send := v.rawSender(t)
		f := AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 9}, v.HostMAC, netip.AddrPortFrom(v.PeerAddr, 9), netip.AddrPortFrom(v.HostAddr, 40040), []byte("tagged"))
		tagged := append(append(append([]byte{}, f[:12]...), 0x81, 0x00, 0x00, 0x07), f[12:]...)
		n := rec.count()
		send(tagged)
		rec.waitFor(t, n+1)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if string(rec.got[n]) != "tagged" {
			t.Errorf("got %q", rec.got[n])
		}
	})
}

func TestEveryQueueGetsASocketAndAReader(t *testing.T) {
	v := newVethQueues(t, 2)
	var recs [2]*recorder
	cfg := testConfig(v.Host)
	cfg.Queues = 0 // all of them
	l := startListener(t, cfg, []Route{{Port: 40040, NewHandler: func(reader int) Handler {
		recs[reader] = newRecorder()
		return recs[reader]
	}}})
	if recs[0] == nil || recs[1] == nil {
		t.Fatalf("handlers %v: want one per queue of a 2-queue veth", recs)
	}
	// Many flows: the peer spreads them over its transmit queues, each of
	// which lands on the receive queue of the same number.
	const flows, per = 32, 4
	for range flows {
		c := v.udpSender(t)
		for range per {
			if _, err := c.WriteToUDPAddrPort([]byte("q"), netip.AddrPortFrom(v.HostAddr, 40040)); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for recs[0].count()+recs[1].count() < flows*per {
		if time.Now().After(deadline) {
			t.Fatalf("got %d + %d datagrams, want %d", recs[0].count(), recs[1].count(), flows*per)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("queue 0: %d, queue 1: %d, mode %s", recs[0].count(), recs[1].count(), l.Mode())
}

// echo replies to every datagram with its payload.
type echo struct{}

func (echo) HandlePacket(b []byte, from netip.AddrPort, r Replier) { r.Reply(b, from) }
func (echo) EndBatch()                                             {}

func TestRepliesComeFromTheAddressReportsWentTo(t *testing.T) {
	v := newVeth(t)
	l := startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return echo{} }}})
	c := v.udpSender(t)
	if _, err := c.WriteToUDPAddrPort([]byte("ack me"), netip.AddrPortFrom(v.HostAddr, 40040)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("no reply: %v (reply errors %d)", err, l.Stats().ReplyErrors.Load())
	}
	// A reporter matches replies by the translator's address (the port is
	// the reply socket's own).
	if string(buf[:n]) != "ack me" || from.Addr() != v.HostAddr {
		t.Errorf("reply %q from %v, want from %v", buf[:n], from, v.HostAddr)
	}
}

// txEcho sends every datagram back to its sender on the reader's TX ring,
// over the link it came in on; what does not fit the ring waits for the
// end of the batch.
type txEcho struct {
	l       **Listener
	queue   int
	refused atomic.Uint64
}

func (e *txEcho) HandlePacket(b []byte, from netip.AddrPort, _ Replier) {
	panic("a Transmitter's handler is an AddrHandler")
}

func (e *txEcho) HandleDatagram(d *Datagram, _ Replier) {
	tx := (*e.l).Transmitter(e.queue)
	link := d.Link.Reverse()
	src := netip.AddrPortFrom(d.Dst, d.DstPort)
	if !tx.Add(&link, src, d.From, d.Payload) {
		tx.Flush()
		if !tx.Add(&link, src, d.From, d.Payload) {
			e.refused.Add(1)
		}
	}
}

func (e *txEcho) EndBatch() { (*e.l).Transmitter(e.queue).Flush() }

// TestATransmitterSendsRepliesOverTheLinkTheRequestCameIn: with TXFrames a
// listener's handler sends replies on its socket's TX ring. The peer's
// kernel takes every reply as a good UDP datagram from the address the
// request went to (it checks the IPv4 header), far more replies than the
// ring has frames (they come back through the completion ring), and the
// replies are counted.
func TestATransmitterSendsRepliesOverTheLinkTheRequestCameIn(t *testing.T) {
	v := newVeth(t)
	cfg := testConfig(v.Host)
	cfg.TXFrames = 64
	var l *Listener
	echo := &txEcho{l: &l}
	var err error
	l, err = Listen(cfg, []Route{{Port: 40040, NewHandler: func(q int) Handler { echo.queue = q; return echo }}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Transmitter(0) == nil || l.Transmitter(1) != nil {
		t.Fatal("want a Transmitter for queue 0 and none for a queue not read")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	c := v.udpSender(t)
	to := netip.AddrPortFrom(v.HostAddr, 40040)
	const n = 1000 // 15 times the ring's frames
	buf := make([]byte, 64)
	for i := range n {
		msg := fmt.Appendf(nil, "request %d", i)
		if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("reply %d: %v (sent on the ring %d, refused %d, kick errors %d)", i, err,
				l.Stats().TXFrames.Load(), echo.refused.Load(), l.Stats().TXErrors.Load())
		}
		if string(buf[:k]) != string(msg) || from != to {
			t.Fatalf("reply %q from %v, want %q from %v", buf[:k], from, msg, to)
		}
	}
	if s := l.Stats().TXFrames.Load(); s != n {
		t.Errorf("%d frames counted on the TX ring, want %d", s, n)
	}
	// Each reply was kicked on its own (one request at a time), and each
	// kick ran the veth's transmit and the peer's receive: time counted.
	if ns := l.Stats().TXKickNanos.Load(); ns < n*100 {
		t.Errorf("%d ns counted in %d kicks, want at least 100 ns each", ns, n)
	}
	// A frame larger than a UMEM frame, and addresses of two IP
	// versions, are refused without queueing anything.
	tx := l.Transmitter(0)
	link := Link{}
	if tx.Add(&link, to, to, make([]byte, cfg.FrameSize)) {
		t.Error("a payload larger than a frame was queued")
	}
	if tx.Add(&link, to, netip.MustParseAddrPort("[2001:db8::1]:1"), []byte("x")) {
		t.Error("an IPv4 source and an IPv6 destination were queued")
	}
}
