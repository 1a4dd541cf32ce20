package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/internal/vethtest"
	"github.com/dta-go/dta/wire/roce"
)

// newXDPVeth is a veth pair for the AF_XDP responder's tests: Host stays in
// the test's namespace and carries the responder and its XDP program; Peer
// lives in namespace NS, where the requesters are.
func newXDPVeth(t *testing.T) *vethtest.Pair { return newXDPVethQueues(t, 1) }

// newXDPVethQueues is newXDPVeth with that many queues on each end.
func newXDPVethQueues(t *testing.T, queues int) *vethtest.Pair {
	return vethtest.New(t, vethtest.RangeRDMA, queues)
}

// xdpPort is the responder's UDP port in these tests: fixed (the XDP
// program steers one port), different for concurrent test binaries.
func xdpPort() uint16 { return uint16(20000 + os.Getpid()%20000) }

// startXDPResponder starts a responder on addr (an address of v.Host) with
// one UDP read loop and its requests taken through AF_XDP on v.Host, its
// responses on the TX ring when txFrames is not 0. It serves one MR "m",
// with access, over the 64 KiB region it returns.
func startXDPResponder(t *testing.T, v *vethtest.Pair, addr netip.Addr, txFrames int, access Access) (*Responder, MR, *region.Region) {
	t.Helper()
	cfg := testResponderConfig("127.0.0.1")
	cfg.ReadLoops = 1
	cfg.Addr = netip.AddrPortFrom(addr, xdpPort()).String()
	xc := xdp.DefaultConfig()
	xc.Interface, xc.TXFrames = v.Host, txFrames
	cfg.XDP = &xc
	reg := newRegion(t, 1<<16)
	var m MR
	resp := startResponder(t, cfg, func(r *Responder) {
		var err error
		if m, err = r.RegisterMR("m", reg, access); err != nil {
			t.Fatal(err)
		}
	})
	return resp, m, reg
}

// dialInNS dials with rc from v's namespace, as a translator on another
// host would.
func dialInNS(t *testing.T, v *vethtest.Pair, rc RequesterConfig) (q *Requester, err error) {
	t.Helper()
	v.InNS(t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		q, err = Dial(ctx, rc, testLogger(t))
	})
	return q, err
}

// forEachResponsePath runs test as a subtest for each way an AF_XDP
// responder's responses leave: through the UDP socket (XDP.TXFrames 0) and
// on the AF_XDP TX ring.
func forEachResponsePath(t *testing.T, test func(t *testing.T, txFrames int)) {
	for _, tc := range []struct {
		name     string
		txFrames int
	}{
		{"responses through the UDP socket", 0},
		{"responses on the AF_XDP TX ring", 256},
	} {
		t.Run(tc.name, func(t *testing.T) { test(t, tc.txFrames) })
	}
}

// TestAResponderOnAFXDPExecutesRequestsThatCrossAVeth runs the responder
// with its requests taken through AF_XDP on the host end of a veth pair
// and a requester in the other namespace, its responses sent through the
// UDP socket or on the AF_XDP TX ring: WRITEs land byte for byte,
// FETCH_ADDs count once each and every ATOMIC ACK reaches the requester
// with a good ICRC, every request came through the AF_XDP reader (none
// through the UDP socket) and every response the way configured, a packet
// with a bad ICRC or a truncated one changes nothing and is counted, a
// path MTU too large for a frame is refused, and closing the responder
// detaches the program.
func TestAResponderOnAFXDPExecutesRequestsThatCrossAVeth(t *testing.T) {
	forEachResponsePath(t, testResponderOnAFXDP)
}

func testResponderOnAFXDP(t *testing.T, txFrames int) {
	v := newXDPVeth(t)
	port := xdpPort()
	cfg := testResponderConfig("127.0.0.1")
	cfg.Addr = netip.AddrPortFrom(v.HostAddr, port).String()
	xc := xdp.DefaultConfig()
	xc.Interface = v.Host
	xc.TXFrames = txFrames
	cfg.XDP = &xc
	resp, err := NewResponder(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegion(t, 1<<16)
	m, err := resp.RegisterMR("a", reg, AccessRemoteWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			resp.Close()
			if err := <-done; err != nil {
				t.Errorf("Responder.Run: %v", err)
			}
		}
	}
	defer stop()
	if !v.Attached(t) {
		t.Fatal("no XDP program on the host end while the responder runs")
	}

	// A path MTU whose packets would not fit a 2048-byte frame is refused
	// at the handshake, not lost packet by packet.
	rc := testRequesterConfig(resp.LocalAddr())
	rc.MTU = 2048
	big, err := dialInNS(t, v, rc)
	if err == nil {
		big.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Fatalf("a connection asking for a 2048-byte MTU: %v, want a rejection naming the MTU", err)
	}
	rc.MTU = 1024 // a packet fits one 2048-byte UMEM frame
	q, err := dialInNS(t, v, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.SetTargets([]Target{targetOf(m)})
	capture := v.CapturePeer(t)
	want := make([]byte, 4096)
	var ops []memop.Op
	off := uint64(0)
	for i, n := range []int{1, 8, 33, 1023, 1024, 1025, 3000} {
		data := bytes.Repeat([]byte{byte(i + 1)}, n)
		copy(want[off:], data)
		ops = append(ops, memop.Op{Kind: memop.Write, Offset: off, Data: data})
		off += uint64(n)
	}
	for i := range 200 {
		ops = append(ops, memop.Op{Kind: memop.FetchAdd, Offset: 8192 + uint64(i%4)*8, Delta: uint64(i + 1)})
	}
	if err := q.Apply(ops); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	got := make([]byte, len(want))
	reg.Read(0, got)
	if !bytes.Equal(got, want) {
		t.Fatal("the region differs from the writes")
	}
	var sums [4]uint64
	for i := range 200 {
		sums[i%4] += uint64(i + 1)
	}
	for i, w := range sums {
		if c, _ := reg.Load64(8192 + uint64(i)*8); c != w {
			t.Errorf("counter %d = %d, want %d", i, c, w)
		}
	}
	st := resp.Stats()
	if a := st.Atomics.Load(); a != 200 {
		t.Errorf("responder executed %d atomics, want 200", a)
	}
	// The UDP sockets' loops first (cfg.ReadLoops), then the one queue's.
	per := resp.ReadLoopPackets()
	if len(per) != cfg.ReadLoops+1 || per[len(per)-1] == 0 || slices.ContainsFunc(per[:cfg.ReadLoops], func(n uint64) bool { return n != 0 }) {
		t.Errorf("packets per read loop %v: want none on the %d UDP sockets, all on the AF_XDP reader", per, cfg.ReadLoops)
	}
	if x := resp.xdp.Stats().Packets.Load(); x != st.Packets.Load() {
		t.Errorf("the AF_XDP reader handed on %d packets, the responder counted %d", x, st.Packets.Load())
	}
	qs := q.Stats()
	if a, bad := qs.AtomicACKs.Load(), qs.BadICRC.Load(); a != 200 || bad != 0 {
		t.Errorf("the requester took %d ATOMIC ACKs and %d packets with a bad ICRC, want 200 and 0", a, bad)
	}
	sent, full := resp.xdp.Stats().TXFrames.Load(), resp.xdp.Stats().TXFull.Load()
	if txFrames == 0 && sent != 0 {
		t.Errorf("%d responses left on a TX ring the responder was not given", sent)
	}
	// Every ATOMIC ACK, and the ACKs of the WRITEs, on the ring; of 256
	// frames some may be in flight, never so many that one is refused.
	if txFrames > 0 && (sent < 200 || full != 0) {
		t.Errorf("%d responses on the AF_XDP TX ring (%d refused), want every ATOMIC ACK (200) and more", sent, full)
	}
	if e := st.SendErrors.Load(); e != 0 {
		t.Errorf("%d send errors", e)
	}
	// On the wire, as a NIC would check them: the ICRC of every response
	// covers the IP header the frame really carries.
	responses, badICRC := 0, 0
	for _, f := range capture.Stop() {
		if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 17 ||
			binary.BigEndian.Uint16(f[14+20:]) != port {
			continue
		}
		responses++
		if err := roce.VerifyICRC(f[14:]); err != nil {
			badICRC++
		}
	}
	if responses < 200 || badICRC != 0 {
		t.Errorf("captured %d responses on the wire, %d with a bad ICRC; want at least the 200 ATOMIC ACKs, all good", responses, badICRC)
	}

	// A forged packet to the QP (the next PSN, a valid WRITE) with its
	// ICRC broken, and one cut short, from a UDP socket in the
	// namespace: counted, nothing written.
	before := make([]byte, reg.Size())
	reg.Read(0, before)
	info := resp.QPs()
	if len(info) != 1 {
		t.Fatalf("QPs %+v, want 1", info)
	}
	var c *net.UDPConn
	v.InNS(t, func() {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: v.PeerAddr.AsSlice()})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pkt := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnly, DestQP: info[0].QPN, PSN: info[0].ExpectedPSN},
		RETH: roce.RETH{VA: m.VA, RKey: m.RKey, DMALen: 8}, Payload: []byte("XXXXXXXX")}
	b := pkt.AppendTo(nil)
	b = append(b, 0, 0, 0, 0) // an ICRC of zeros: wrong
	bad, short := st.BadICRC.Load(), st.Malformed.Load()
	to := net.UDPAddrFromAddrPort(resp.LocalAddr())
	if _, err := c.WriteToUDP(b, to); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteToUDP(b[:5], to); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.BadICRC.Load() == bad || st.Malformed.Load() == short {
		if time.Now().After(deadline) {
			t.Fatalf("bad ICRC %d → %d, malformed %d → %d: the forged packets were not counted", bad, st.BadICRC.Load(), short, st.Malformed.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	after := make([]byte, reg.Size())
	reg.Read(0, after)
	if !bytes.Equal(before, after) {
		t.Error("a rejected packet changed the region")
	}

	stop()
	if v.Attached(t) {
		t.Error("the XDP program is still attached after Close")
	}
}

// TestAResponderConfigWithXDPNeedsAFixedPort: XDP steers a port, so Addr's
// port 0 (any free port) is refused, as is an XDP config that does not
// validate.
func TestAResponderConfigWithXDPNeedsAFixedPort(t *testing.T) {
	xc := xdp.DefaultConfig()
	xc.Interface = "lo"
	cfg := DefaultResponderConfig()
	cfg.XDP = &xc
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the default address with XDP on lo: %v", err)
	}
	cfg.Addr = "127.0.0.1:0"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "not 0") {
		t.Errorf("port 0 with XDP: %v, want an error", err)
	}
	cfg.Addr = ":4791"
	xc.Interface = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ResponderConfig.XDP") {
		t.Errorf("XDP without an interface: %v, want an error naming ResponderConfig.XDP", err)
	}
}

func TestTheLargestPathMTUOverAFXDPFitsAFrame(t *testing.T) {
	for _, tc := range []struct{ frame, mtu int }{{2048, 1024}, {4096, 2048}} {
		if got := xdpMTU(tc.frame); got != tc.mtu {
			t.Errorf("xdpMTU(%d) = %d, want %d", tc.frame, got, tc.mtu)
		}
	}
}

// TestAResponderOnAFXDPServesEveryQueueWithALoopOfItsOwn gives the veth 2
// queues and connects 4 requesters: the responder has one AF_XDP loop per
// queue (after its UDP loop), each requester's QP is served by the loop its
// packets arrive on, and every requester's writes land.
func TestAResponderOnAFXDPServesEveryQueueWithALoopOfItsOwn(t *testing.T) {
	v := newXDPVethQueues(t, 2)
	resp, m, reg := startXDPResponder(t, v, v.HostAddr, 0, AccessRemoteWrite)
	if n := resp.ReadLoops(); n != 3 {
		t.Fatalf("%d read loops, want the UDP socket's and one per queue (3)", n)
	}
	const requesters = 4
	for i := range requesters {
		q, err := dialInNS(t, v, testRequesterConfig(resp.LocalAddr()))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		q.SetTargets([]Target{targetOf(m)})
		var ops []memop.Op
		for k := range 64 {
			ops = append(ops, memop.Op{Kind: memop.Write, Offset: uint64(i*4096 + k*8), Data: bytes.Repeat([]byte{byte(i + 1)}, 8)})
		}
		if err := q.Apply(ops); err != nil {
			t.Fatal(err)
		}
		flush(t, q)
	}
	got := make([]byte, requesters*4096)
	reg.Read(0, got)
	for i := range requesters {
		if want := bytes.Repeat([]byte{byte(i + 1)}, 64*8); !bytes.Equal(got[i*4096:i*4096+512], want) {
			t.Errorf("requester %d's writes did not land", i)
		}
	}
	per := resp.ReadLoopPackets()
	if per[0] != 0 || per[1]+per[2] == 0 {
		t.Errorf("packets per read loop %v: want none on the UDP socket", per)
	}
	t.Logf("packets per read loop (UDP, queue 0, queue 1): %v", per)
	if x, all := resp.XDP().Stats().Packets.Load(), resp.Stats().Packets.Load(); x != all {
		t.Errorf("the AF_XDP readers handed on %d packets, the responder counted %d", x, all)
	}
}

// TestTheAFXDPPathDoesNotAllocate is TestApplyDoesNotAllocate with the
// requests crossing a veth into the responder's AF_XDP reader, and the
// responses leaving through the UDP socket or on the AF_XDP TX ring: in
// steady state neither the requester nor the AF_XDP read loop allocates.
func TestTheAFXDPPathDoesNotAllocate(t *testing.T) {
	skipAllocsUnderRace(t)
	forEachResponsePath(t, testAFXDPAllocs)
}

func testAFXDPAllocs(t *testing.T, txFrames int) {
	v := newXDPVeth(t)
	resp, m, _ := startXDPResponder(t, v, v.HostAddr, txFrames, AccessRemoteWrite|AccessRemoteAtomic)
	rc := testRequesterConfig(resp.LocalAddr())
	rc.Window = 64
	q, err := dialInNS(t, v, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.SetTargets([]Target{targetOf(m)})
	for _, c := range []struct {
		name string
		op   memop.Op
	}{
		{"8-byte write", memop.Op{Kind: memop.Write, Offset: 64, Data: []byte("12345678")}},
		{"fetch-add", memop.Op{Kind: memop.FetchAdd, Offset: 128, Delta: 1}},
	} {
		ops := []memop.Op{c.op}
		for range 500 { // warm: the window wraps several times
			if err := q.Apply(ops); err != nil {
				t.Fatal(err)
			}
		}
		if n := testing.AllocsPerRun(2000, func() {
			if err := q.Apply(ops); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Apply(%s) over AF_XDP allocates %v times per call", c.name, n)
		}
	}
	flush(t, q)
	if x := resp.XDP().Stats().Packets.Load(); x < 2*2500 {
		t.Errorf("only %d requests came through AF_XDP", x)
	}
	if tx := resp.XDP().Stats().TXFrames.Load(); (tx >= 2500) != (txFrames > 0) {
		t.Errorf("%d responses on the AF_XDP TX ring (TXFrames %d)", tx, txFrames)
	}
}

// TestAnIPv6RequesterGetsItsResponsesOnTheAFXDPTXRing runs the responder
// on AF_XDP both ways over IPv6: the ATOMIC ACKs leave on the TX ring as
// IPv6 frames, whose UDP checksum the requester's kernel checks (IPv6 has no
// checksum-less UDP) and whose ICRC the requester verifies. Every FETCH_ADD
// counts once and every ATOMIC ACK comes back.
func TestAnIPv6RequesterGetsItsResponsesOnTheAFXDPTXRing(t *testing.T) {
	v := newXDPVeth(t)
	// A prefix of this package's own: the xdp package's tests put theirs
	// on veths in the same namespace at the same time.
	host6, peer6 := netip.MustParseAddr("fd00:d7a:250::1"), netip.MustParseAddr("fd00:d7a:250::2")
	vethtest.Run(t, "ip", "-6", "addr", "add", host6.String()+"/64", "dev", v.Host, "nodad")
	vethtest.Run(t, "ip", "-n", v.NS, "-6", "addr", "add", peer6.String()+"/64", "dev", v.Peer, "nodad")
	vethtest.Run(t, "ip", "-6", "neigh", "replace", peer6.String(), "lladdr", net.HardwareAddr(v.PeerMAC[:]).String(), "dev", v.Host, "nud", "permanent")
	vethtest.Run(t, "ip", "-n", v.NS, "-6", "neigh", "replace", host6.String(), "lladdr", net.HardwareAddr(v.HostMAC[:]).String(), "dev", v.Peer, "nud", "permanent")
	resp, m, reg := startXDPResponder(t, v, host6, 256, AccessRemoteWrite|AccessRemoteAtomic)
	q, err := dialInNS(t, v, testRequesterConfig(resp.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.SetTargets([]Target{targetOf(m)})
	const n = 200
	var ops []memop.Op
	for i := range n {
		ops = append(ops, memop.Op{Kind: memop.FetchAdd, Offset: uint64(i%4) * 8, Delta: 1})
	}
	if err := q.Apply(ops); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	for i := range 4 {
		if c, _ := reg.Load64(uint64(i) * 8); c != n/4 {
			t.Errorf("counter %d = %d, want %d", i, c, n/4)
		}
	}
	qs, xs := q.Stats(), resp.XDP().Stats()
	if a, bad := qs.AtomicACKs.Load(), qs.BadICRC.Load(); a != n || bad != 0 {
		t.Errorf("the requester took %d ATOMIC ACKs and %d packets with a bad ICRC, want %d and 0", a, bad, n)
	}
	if sent, full := xs.TXFrames.Load(), xs.TXFull.Load(); sent < n || full != 0 {
		t.Errorf("%d responses on the TX ring (%d refused), want at least the %d ATOMIC ACKs", sent, full, n)
	}
	if x, all := xs.Packets.Load(), resp.Stats().Packets.Load(); x != all {
		t.Errorf("the AF_XDP reader handed on %d packets, the responder counted %d", x, all)
	}
}

// Over AF_XDP the IPv4 ID and DF bit the ICRC covers come from each
// frame's own header, so the check is exact: a requester that numbers its
// packets (an RDMA NIC, rxe; here through a raw socket in the peer's
// namespace) is served and counted as ForeignIPID, while a packet whose ICRC
// was computed for another ID than its header carries, which a responder fed
// by a socket must accept (the trailer implies an ID), is dropped for its
// ICRC and writes nothing.
func TestAnAFXDPResponderChecksTheICRCWithTheFramesOwnIPv4ID(t *testing.T) {
	v := newXDPVeth(t)
	resp, m, reg := startXDPResponder(t, v, v.HostAddr, 0, AccessRemoteWrite|AccessRemoteAtomic)
	var p *rawPeer
	var fd int
	v.InNS(t, func() {
		p = newRawPeerAt(t, v.PeerAddr.String(), resp.LocalAddr())
		fd = rawIPSocket(t)
	})
	p.connect(roce.MTU256)
	st := resp.Stats()
	data := []byte{0xB1, 0xB2, 0xB3, 0xB4}
	psn := p.sendNumbered(fd, 0x718c, false, writeOnly(m.VA+16, m.RKey, data, true), nil)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	psn = p.sendNumbered(fd, 0x1234, true, writeOnly(m.VA+20, m.RKey, data, true), nil)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	if got := snapshot(t, reg)[16:24]; !bytes.Equal(got, append(data, data...)) {
		t.Errorf("memory % x, want the two writes", got)
	}
	if n := st.ForeignIPID.Load(); n != 2 {
		t.Errorf("ForeignIPID %d, want 2", n)
	}
	// The ICRC of ID 0x1111, the header's ID 0x2222 (the kernel mends the
	// header checksum).
	bad := st.BadICRC.Load()
	p.sendNumbered(fd, 0x1111, false, writeOnly(m.VA+32, m.RKey, data, true), func(b []byte) {
		binary.BigEndian.PutUint16(b[4:], 0x2222)
	})
	p.expectNothing(100 * time.Millisecond)
	if st.BadICRC.Load() != bad+1 {
		t.Errorf("a packet whose ICRC covers another IPv4 ID than its header's: BadICRC %d, want %d", st.BadICRC.Load(), bad+1)
	}
	if got := snapshot(t, reg)[32:36]; bytes.Equal(got, data) {
		t.Error("the packet with the mismatched ID wrote memory")
	}
	if x := resp.XDP().Stats().Packets.Load(); x < 3 {
		t.Errorf("only %d requests came through AF_XDP", x)
	}
}
