package rdma

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/roce"
)

// patterned fills reg with a pattern that differs at every offset modulo
// 251, so that a READ from the wrong place shows.
func patterned(t testing.TB, reg *region.Region, seed byte) []byte {
	t.Helper()
	b := make([]byte, reg.Size())
	for i := range b {
		b[i] = byte(i%251) ^ seed
	}
	if err := reg.Write(0, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadReturnsTheBytesInMemory(t *testing.T) {
	reg := newRegion(t, 64<<10)
	want := patterned(t, reg, 0x3C)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, err := resp.RegisterMR("r", reg, AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.MTU = 256
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	for _, c := range []struct {
		name    string
		off, n  uint64
		packets uint64
	}{
		{"a zero-length read is one empty Response Only", 100, 0, 1},
		{"a one-byte read is one Response Only", 7, 1, 1},
		{"a read of an odd length is padded", 13, 13, 1},
		{"a read of exactly the path MTU is one Response Only", 256, 256, 1},
		{"a read one byte above the path MTU is First and Last", 3, 257, 2},
		{"a read of several MTUs is First, Middles and Last", 1000, 5*256 + 77, 6},
		{"a read of the region's last byte", 64<<10 - 1, 1, 1},
		{"a read of the whole region", 0, 64 << 10, 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := resp.Stats()
			reads, bytesRead, pkts := st.Reads.Load(), st.ReadBytes.Load(), st.ReadResponses.Load()
			dst := make([]byte, c.n)
			if err := q.Read(0, c.off, dst); err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !bytes.Equal(dst, want[c.off:c.off+c.n]) {
				t.Errorf("Read returned other bytes than memory holds")
			}
			if d := st.Reads.Load() - reads; d != 1 {
				t.Errorf("responder counted %d READs, want 1", d)
			}
			if d := st.ReadBytes.Load() - bytesRead; d != c.n {
				t.Errorf("responder counted %d READ bytes, want %d", d, c.n)
			}
			if d := st.ReadResponses.Load() - pkts; d != c.packets {
				t.Errorf("responder sent %d READ Response packets, want %d", d, c.packets)
			}
		})
	}
	// Reads interleaved with writes see the writes before them (PSN
	// order is execution order), and the writes are acknowledged by them.
	wm, _ := resp.RegisterMR("w", reg, AccessRemoteWrite|AccessRemoteRead)
	q.SetTargets([]Target{targetOf(m), targetOf(wm)})
	for i := range 20 {
		data := []byte(fmt.Sprintf("write %02d", i))
		if err := q.Post([]requester.Op{{Kind: requester.Write, Target: 1, Offset: 4096, Data: data}}); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		if err := q.Read(1, 4096, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read after write %d: %q", i, got)
		}
	}
	if n := q.Stats().InFlight.Load(); n != 0 {
		t.Errorf("%d packets unacknowledged after the reads completed", n)
	}
}

// readReq sends an RDMA READ Request of n bytes at the next PSN and
// reserves one PSN per response packet at path MTU pmtu, as a requester
// must.
func (p *rawPeer) readReq(va uint64, rkey uint32, n uint32, pmtu int) uint32 {
	pkt := roce.Packet{BTH: roce.BTH{Opcode: roce.OpReadRequest, AckReq: true, DestQP: p.rqpn, PKey: roce.DefaultPKey, PSN: p.psn},
		RETH: roce.RETH{VA: va, RKey: rkey, DMALen: n}}
	p.send(&pkt)
	psn := p.psn
	p.psn = (p.psn + readPackets(uint64(n), pmtu)) & roce.PSNMask
	return psn
}

// expectRead takes the responses of a READ of want from psn on, checking
// opcodes, PSNs, AETHs and bytes.
func (p *rawPeer) expectRead(psn uint32, want []byte, pmtu int) {
	p.t.Helper()
	n := int(readPackets(uint64(len(want)), pmtu))
	for k := range n {
		pkt := p.expect()
		op := roce.OpReadResponseMiddle
		switch {
		case n == 1:
			op = roce.OpReadResponseOnly
		case k == 0:
			op = roce.OpReadResponseFirst
		case k == n-1:
			op = roce.OpReadResponseLast
		}
		lo := k * pmtu
		chunk := want[lo:min(lo+pmtu, len(want))]
		if pkt.BTH.Opcode != op || pkt.BTH.PSN != (psn+uint32(k))&roce.PSNMask || pkt.BTH.DestQP != p.qpn {
			p.t.Fatalf("response %d: %v PSN %#x to QP %#x, want %v PSN %#x", k, pkt.BTH.Opcode, pkt.BTH.PSN, pkt.BTH.DestQP, op, psn+uint32(k))
		}
		if op != roce.OpReadResponseMiddle && pkt.AETH.Syndrome != roce.ACKUnlimited {
			p.t.Errorf("response %d: AETH %v, want an ACK", k, pkt.AETH.Syndrome)
		}
		if !bytes.Equal(pkt.Payload, chunk) {
			p.t.Fatalf("response %d carries other bytes than memory holds", k)
		}
	}
}

// The responder's side of RDMA READ, driven by a raw peer: what it answers,
// which PSNs it uses and consumes, what it refuses.
func TestReadRequestsAreAnsweredAsANICDoes(t *testing.T) {
	h := newHostile(t, nil)
	p, st := h.peer, h.resp.Stats()
	reg := h.regions[0]
	rd, err := h.resp.RegisterMR("rd", reg, AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	mem := h.before[0]
	for _, c := range []struct {
		name   string
		off, n uint32
	}{
		{"a short read is one Response Only carrying the bytes", 10, 13},
		{"an empty read is one empty Response Only", 0, 0},
		{"a read of one path MTU is one Response Only", 256, 256},
		{"a longer read is First, Middle and Last, one PSN each", 1, 600},
	} {
		t.Run(c.name, func(t *testing.T) {
			psn := p.readReq(rd.VA+uint64(c.off), rd.RKey, c.n, h.pmtu)
			p.expectRead(psn, mem[c.off:c.off+c.n], h.pmtu)
			// The expected PSN moved past the responses: a WRITE at the
			// next PSN is executed and ACKed.
			w := p.request(writeOnly(0, 0, nil, true))
			p.expectAETH(roce.OpACK, roce.ACKUnlimited, w)
		})
	}

	nak := func(name string, va uint64, rkey, n uint32, syn roce.Syndrome, counter *uint64Getter) {
		t.Run(name, func(t *testing.T) {
			before, reads := counter.get(), st.Reads.Load()
			psn := p.readReq(va, rkey, n, h.pmtu)
			p.expectAETH(roce.OpACK, syn, psn)
			if counter.get() != before+1 {
				t.Errorf("refusal counter %d -> %d, want one more", before, counter.get())
			}
			if st.Reads.Load() != reads {
				t.Errorf("a refused READ was counted as executed")
			}
			// Both sides skip the PSNs the READ reserved: the next request
			// is in sequence.
			w := p.request(writeOnly(0, 0, nil, true))
			p.expectAETH(roce.OpACK, roce.ACKUnlimited, w)
		})
	}
	rights, rkey, bounds := getter(&st.RejectRights), getter(&st.RejectRKey), getter(&st.RejectBounds)
	length := getter(&st.RejectLength)
	nak("a read of a region without the read right is NAKed remote access error", h.rw.VA, h.rw.RKey, 600, roce.NAKRemoteAccessError, rights)
	nak("a read with a wrong R_Key is NAKed remote access error", rd.VA, rd.RKey^0x5a5a, 600, roce.NAKRemoteAccessError, rkey)
	nak("a read past the region's end is NAKed remote access error", rd.VA+rd.Length-10, rd.RKey, 11, roce.NAKRemoteAccessError, bounds)
	nak("a read below the region is NAKed remote access error", rd.VA-1, rd.RKey, 4, roce.NAKRemoteAccessError, bounds)
	t.Run("a read longer than 2^31 bytes is NAKed invalid request", func(t *testing.T) {
		before := length.get()
		pkt := roce.Packet{BTH: roce.BTH{Opcode: roce.OpReadRequest, AckReq: true}, RETH: roce.RETH{VA: rd.VA, RKey: rd.RKey, DMALen: 1<<31 + 1}}
		psn := p.request(pkt) // refused for its length: one PSN
		p.expectAETH(roce.OpACK, roce.NAKInvalidRequest, psn)
		if length.get() != before+1 {
			t.Errorf("length refusals %d -> %d", before, length.get())
		}
		w := p.request(writeOnly(0, 0, nil, true))
		p.expectAETH(roce.OpACK, roce.ACKUnlimited, w)
	})
	h.unchanged(t)

	t.Run("a duplicate read is executed again with its original PSNs", func(t *testing.T) {
		psn := p.readReq(rd.VA+20, rd.RKey, 600, h.pmtu)
		p.expectRead(psn, mem[20:620], h.pmtu)
		next := p.psn
		// Memory changes behind the READ's back; its retransmission reads
		// it anew, as a NIC's would.
		fresh := bytes.Repeat([]byte{0xEE}, 600)
		reg.Write(20, fresh)
		defer reg.Write(20, mem[20:620])
		replays, reads := st.ReadReplays.Load(), st.Reads.Load()
		dup := roce.Packet{BTH: roce.BTH{Opcode: roce.OpReadRequest, AckReq: true, DestQP: p.rqpn, PKey: roce.DefaultPKey, PSN: psn},
			RETH: roce.RETH{VA: rd.VA + 20, RKey: rd.RKey, DMALen: 600}}
		for range 2 {
			p.send(&dup)
			p.expectRead(psn, fresh, h.pmtu)
		}
		if d := st.ReadReplays.Load() - replays; d != 2 {
			t.Errorf("%d READ replays counted, want 2", d)
		}
		if st.Reads.Load() != reads {
			t.Errorf("a replay was counted as a new READ")
		}
		// The expected PSN did not move.
		if p.psn != next {
			t.Fatalf("test bug: psn moved")
		}
		w := p.request(writeOnly(0, 0, nil, true))
		p.expectAETH(roce.OpACK, roce.ACKUnlimited, w)
	})
	t.Run("a duplicate of a refused read gets the same NAK", func(t *testing.T) {
		psn := p.readReq(h.rw.VA, h.rw.RKey, 8, h.pmtu)
		p.expectAETH(roce.OpACK, roce.NAKRemoteAccessError, psn)
		dup := roce.Packet{BTH: roce.BTH{Opcode: roce.OpReadRequest, AckReq: true, DestQP: p.rqpn, PKey: roce.DefaultPKey, PSN: psn},
			RETH: roce.RETH{VA: h.rw.VA, RKey: h.rw.RKey, DMALen: 8}}
		p.send(&dup)
		p.expectAETH(roce.OpACK, roce.NAKRemoteAccessError, psn)
	})
	t.Run("a read request inside a multi-packet WRITE is NAKed invalid request", func(t *testing.T) {
		p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst}, RETH: roce.RETH{VA: h.rw.VA, RKey: h.rw.RKey, DMALen: uint32(2 * h.pmtu)}, Payload: make([]byte, h.pmtu)})
		op := getter(&st.RejectOpcode)
		before := op.get()
		psn := p.readReq(rd.VA, rd.RKey, 8, h.pmtu)
		p.expectAETH(roce.OpACK, roce.NAKInvalidRequest, psn)
		if op.get() != before+1 {
			t.Errorf("opcode refusals %d -> %d", before, op.get())
		}
		reg.Write(0, mem) // the WRITE's First landed
	})
}

// The requester's side of refusals: a NAKed READ completes with ErrRefused
// and the connection goes on; a READ outside its target never leaves.
func TestRefusedReadsCompleteWithAnErrorAndChangeNothing(t *testing.T) {
	reg := newRegion(t, 4096)
	mem := patterned(t, reg, 1)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	ro, _ := resp.RegisterMR("ro", reg, AccessRemoteRead)
	wo, _ := resp.RegisterMR("wo", reg, AccessRemoteWrite)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.MTU = 256
	cfg.Window = 8 // a 4096-byte READ needs 16 PSNs
	q := dial(t, cfg)
	badKey := targetOf(ro)
	badKey.RKey ^= 0xFFFF
	long := targetOf(ro)
	long.Length = 8192 // the requester believes the region is larger than it is
	q.SetTargets([]Target{targetOf(ro), targetOf(wo), badKey, long})
	st := resp.Stats()
	for _, c := range []struct {
		name    string
		target  uint16
		off, n  uint64
		want    error
		counter *uint64Getter
	}{
		{"a read of a region without the read right is refused by the responder", 1, 0, 600, requester.ErrRefused, getter(&st.RejectRights)},
		{"a read with a wrong R_Key is refused by the responder", 2, 0, 600, requester.ErrRefused, getter(&st.RejectRKey)},
		{"a read past the region's end is refused by the responder", 3, 4000, 600, requester.ErrRefused, getter(&st.RejectBounds)},
		{"a read past the target's end is refused before it is sent", 0, 4000, 600, requester.ErrOutOfRange, nil},
		{"a read needing more PSNs than the window holds is refused before it is sent", 0, 0, 4096, requester.ErrBadOp, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before uint64
			if c.counter != nil {
				before = c.counter.get()
			}
			err := q.Read(c.target, c.off, make([]byte, c.n))
			if !errors.Is(err, c.want) {
				t.Fatalf("Read: %v, want %v", err, c.want)
			}
			if c.counter != nil && c.counter.get() != before+1 {
				t.Errorf("responder refusal counter %d -> %d", before, c.counter.get())
			}
			// The connection goes on: a good read right after works.
			got := make([]byte, 300)
			if err := q.Read(0, 5, got); err != nil || !bytes.Equal(got, mem[5:305]) {
				t.Fatalf("read after the refusal: %v", err)
			}
		})
	}
	if !bytes.Equal(snapshot(t, reg), mem) {
		t.Errorf("memory changed")
	}
	if q.Stats().Reconnect.Load() != 0 {
		t.Errorf("the refusals cost the connection")
	}
}

// Many READs in flight, interleaved with writes and fetch-adds, through a proxy that
// drops, duplicates and reorders 10 % of the packets each way: every READ
// completes exactly once with the bytes memory holds.
func TestReadsUnderLossCompleteExactlyOnceWithTheRightBytes(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			reads := 1500
			if testing.Short() || host == "::1" {
				reads = 600
			}
			testLossyReads(t, host, reads)
		})
	}
}

func testLossyReads(t *testing.T, host string, nreads int) {
	reg := newRegion(t, 64<<10)
	mem := patterned(t, reg, 0x77)
	resp := startResponder(t, testResponderConfig(host))
	m, err := resp.RegisterMR("r", reg, AccessRemoteWrite|AccessRemoteAtomic|AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newLossyProxy(t, resp.LocalAddr(), 7, 0.10, 0.10, 0.10)
	cfg := testRequesterConfig(proxy.addr())
	cfg.MTU = 256
	cfg.Window = 64
	cfg.AckEvery = 8
	cfg.MaxAtomic = 8
	cfg.Timeout = 10 * time.Millisecond
	cfg.Retries = 50
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	type got struct {
		n    int
		err  error
		same bool
	}
	var mu sync.Mutex
	done := make(map[uint64]*got, nreads)
	want := make([][]byte, nreads)
	dsts := make([][]byte, nreads)
	q.OnRead(func(c requester.ReadCompletion) {
		mu.Lock()
		g := done[c.ID]
		if g == nil {
			g = &got{}
			done[c.ID] = g
		}
		g.n++
		g.err = c.Err
		g.same = bytes.Equal(c.Data, want[c.ID])
		mu.Unlock()
	})
	const readArea = 32 << 10 // writes go below, reads above: their bytes never change
	const counter = readArea - 8
	reg.Store64(counter, 0)
	for i := range nreads {
		n := 1 + i*37%700 // one to three responses at MTU 256
		off := readArea + uint64(i*131)%(readArea-700)
		want[i] = mem[off : off+uint64(n)]
		dsts[i] = make([]byte, n)
		ops := []requester.Op{
			{Kind: requester.Write, Offset: uint64(i*8) % (readArea - 8), Data: []byte("8 bytes!")},
			{Kind: requester.Read, Offset: off, Dst: dsts[i], ID: uint64(i)},
		}
		if i%4 == 0 {
			ops = append(ops, requester.Op{Kind: requester.FetchAdd, Offset: counter, Add: 1})
		}
		if err := q.Post(ops); err != nil {
			t.Fatalf("Post %d: %v", i, err)
		}
	}
	flush(t, q)
	if v, _ := reg.Load64(counter); v != uint64((nreads+3)/4) {
		t.Errorf("counter %d, want %d: a fetch-add among the reads was lost or doubled", v, (nreads+3)/4)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range nreads {
		g := done[uint64(i)]
		switch {
		case g == nil:
			t.Errorf("read %d never completed", i)
		case g.n != 1:
			t.Errorf("read %d completed %d times", i, g.n)
		case g.err != nil:
			t.Errorf("read %d: %v", i, g.err)
		case !g.same:
			t.Errorf("read %d returned other bytes than memory holds", i)
		}
	}
	rs, qs := resp.Stats(), q.Stats()
	proxy.mu.Lock()
	summary := fmt.Sprintf("proxy dropped %v duplicated %v reordered %v; requester retransmits %d timeouts %d NAK-seq %d reads lost %d duplicate responses %d; responder reads %d replays %d out-of-sequence %d",
		proxy.dropped, proxy.duplicated, proxy.reordered, qs.Retransmits.Load(), qs.Timeouts.Load(), qs.NAKSequence.Load(),
		qs.ReadsLost.Load(), qs.ReadDuplicates.Load(), rs.Reads.Load(), rs.ReadReplays.Load(), rs.OutOfSequence.Load())
	proxy.mu.Unlock()
	t.Log(summary)
	if qs.Reconnect.Load() != 0 {
		t.Errorf("connection lost during the run: %s", summary)
	}
	if rs.ReadReplays.Load() == 0 || qs.ReadsLost.Load() == 0 {
		t.Errorf("the faults did not exercise the READ recovery paths: %s", summary)
	}
}

func TestReadsInFlightCompleteWithATimeoutErrorWhenTheCollectorDies(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteRead)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Retries = 2
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	resp.crash() // no DREQ: the READs stay unanswered
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- q.Read(0, 0, make([]byte, 100)) }()
	}
	timedOut := 0
	for range 8 {
		select {
		case err := <-errs:
			// Posted before the loss: ErrNotConnected and ErrTimeout;
			// after it: ErrNotConnected.
			if !errors.Is(err, requester.ErrNotConnected) {
				t.Errorf("Read: %v, want ErrNotConnected", err)
			}
			if errors.Is(err, requester.ErrTimeout) {
				timedOut++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Read never returned after the collector died")
		}
	}
	if timedOut == 0 {
		t.Errorf("no Read reported the ACK timeout")
	}
}

// TestReadsDoNotAllocate measures a READ's whole round trip in this
// process — Post (or the blocking Read), the responder's READ Responses and
// the requester's completion — once warm.
func TestReadsDoNotAllocate(t *testing.T) {
	skipAllocsUnderRace(t)
	reg := newRegion(t, 1<<16)
	patterned(t, reg, 9)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteRead)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Window = 64
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	for _, n := range []int{8, 3000} { // Response Only; First, Middles, Last
		t.Run(fmt.Sprintf("a blocking read of %d bytes", n), func(t *testing.T) {
			dst := make([]byte, n)
			for range 200 {
				if err := q.Read(0, 64, dst); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(1000, func() {
				if err := q.Read(0, 64, dst); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("Read allocates %v times per call", a)
			}
		})
	}
	t.Run("posted reads completing through OnRead", func(t *testing.T) {
		dst := make([]byte, 100)
		ops := []requester.Op{{Kind: requester.Read, Offset: 8, Dst: dst}}
		var done sync.WaitGroup
		q.OnRead(func(requester.ReadCompletion) { done.Done() })
		defer q.OnRead(nil)
		post := func() {
			done.Add(1)
			if err := q.Post(ops); err != nil {
				t.Fatal(err)
			}
			done.Wait()
		}
		for range 200 {
			post()
		}
		if a := testing.AllocsPerRun(1000, post); a != 0 {
			t.Errorf("Post of a Read allocates %v times per call", a)
		}
	})
}
