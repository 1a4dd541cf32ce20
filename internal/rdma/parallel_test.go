package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

// encodeRequest is request without the sending: the bytes of the next
// request, sealed.
func (p *rawPeer) encodeRequest(pkt roce.Packet) []byte {
	pkt.BTH.DestQP = p.rqpn
	pkt.BTH.PKey = roce.DefaultPKey
	pkt.BTH.PSN = p.psn
	p.psn = (p.psn + 1) & roce.PSNMask
	return p.encode(&pkt)
}

// needSocketGroups skips a test of several read loops where the responder
// falls back to one.
func needSocketGroups(t *testing.T) {
	if !reusePortSupported {
		t.Skip("several read loops need SO_REUSEPORT socket groups (Linux)")
	}
}

// TestSuiteWithParallelReadLoops runs every test of the package again in a
// child process whose responders have several read loops
// (DTA_TEST_READ_LOOPS), so that everything the responder enforces —
// ICRC, PSN rules, rkeys, bounds, replays, NAKs, CM limits, the allowlist,
// timers, GRO, captures — is proven with QPs owned by loops other than the
// first too. That run's read loops also wait in the Go runtime's network
// poller (DTA_TEST_POLLER_WAIT) rather than in the kernel, the default, so
// that both ways of waiting go through the whole suite. Run it by hand with
//
//	DTA_TEST_READ_LOOPS=4 DTA_TEST_POLLER_WAIT=1 go test ./internal/rdma
func TestSuiteWithParallelReadLoops(t *testing.T) {
	needSocketGroups(t)
	if os.Getenv(readLoopsEnv) != "" {
		t.Skip("already the child run")
	}
	if testing.Short() {
		t.Skip("runs the whole package again")
	}
	for _, loops := range []string{"4"} {
		cmd := exec.Command(os.Args[0], "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), readLoopsEnv+"="+loops, pollerWaitEnv+"=1")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the package's tests with %s=%s and %s=1 failed (%v):\n%s", readLoopsEnv, loops, pollerWaitEnv, err, out)
		}
		t.Logf("%s=%s: passed in %v", readLoopsEnv, loops, time.Since(start).Round(time.Millisecond))
	}
}

// Several requesters, each its own socket and QP, write and FETCH_ADD
// concurrently into one responder with several read loops: every byte
// lands, every counter is the exact sum of the adds, the counters add up,
// and the loops share the QPs.
func TestConcurrentRequestersOnParallelReadLoops(t *testing.T) {
	needSocketGroups(t)
	for _, tc := range []struct {
		name          string
		loops, qps    int
		minBusyLoops  int // loops that must have received packets
		writes, adds  int // per requester
		sharedWords   int // FETCH_ADD targets all requesters hit
		perRequesterB uint64
	}{
		{name: "two loops and four requesters", loops: 2, qps: 4, minBusyLoops: 1, writes: 300, adds: 200, sharedWords: 8, perRequesterB: 4096},
		{name: "four loops and eight requesters", loops: 4, qps: 8, minBusyLoops: 2, writes: 300, adds: 200, sharedWords: 8, perRequesterB: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testResponderConfig("127.0.0.1")
			cfg.ReadLoops = tc.loops
			resp := startResponder(t, cfg)
			if resp.ReadLoops() != tc.loops {
				t.Fatalf("%d read loops, want %d", resp.ReadLoops(), tc.loops)
			}
			counters := uint64(tc.sharedWords * 8)
			reg := newRegion(t, counters+uint64(tc.qps)*tc.perRequesterB)
			m, err := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
			if err != nil {
				t.Fatal(err)
			}
			reqs := make([]*Requester, tc.qps)
			for i := range reqs {
				reqs[i] = dial(t, testRequesterConfig(resp.LocalAddr()))
				reqs[i].SetTargets([]Target{targetOf(m)})
			}
			want := make([]byte, reg.Size())
			var wantAdd = make([]uint64, tc.sharedWords)
			var wg sync.WaitGroup
			errs := make(chan error, tc.qps)
			for i, q := range reqs {
				base := counters + uint64(i)*tc.perRequesterB
				var ops []memop.Op
				for k := range tc.writes {
					off := base + uint64(k*8)%tc.perRequesterB
					data := binary.LittleEndian.AppendUint64(nil, uint64(i)<<32|uint64(k))
					copy(want[off:], data)
					ops = append(ops, memop.Op{Kind: memop.Write, Offset: off, Data: data})
				}
				for k := range tc.adds {
					w := (i + k) % tc.sharedWords
					d := uint64(i*1000 + k + 1)
					wantAdd[w] += d
					ops = append(ops, memop.Op{Kind: memop.FetchAdd, Offset: uint64(w) * 8, Delta: d})
				}
				// Interleave writes and adds as a translator does.
				rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(ops), func(a, b int) { ops[a], ops[b] = ops[b], ops[a] })
				wg.Go(func() {
					for len(ops) > 0 {
						n := min(16, len(ops))
						if err := q.Apply(ops[:n]); err != nil {
							errs <- err
							return
						}
						ops = ops[n:]
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for _, q := range reqs {
				flush(t, q)
			}
			got := snapshot(t, reg)
			for w := range tc.sharedWords {
				binary.LittleEndian.PutUint64(want[w*8:], wantAdd[w])
			}
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("region differs first at byte %d: %#x, want %#x", i, got[i], want[i])
					}
				}
			}
			st := resp.Stats()
			if n, w := st.Writes.Load(), uint64(tc.qps*tc.writes); n != w {
				t.Errorf("%d writes executed, want %d", n, w)
			}
			if n, w := st.Atomics.Load(), uint64(tc.qps*tc.adds); n != w {
				t.Errorf("%d atomics executed, want %d", n, w)
			}
			if n := st.QPs.Load(); n != int64(tc.qps) {
				t.Errorf("%d QPs, want %d", n, tc.qps)
			}
			if st.UnknownQP.Load() != 0 || st.BadICRC.Load() != 0 || st.NAKRemoteAccess.Load() != 0 {
				t.Errorf("unknown QP %d, bad ICRC %d, remote access NAKs %d: want none",
					st.UnknownQP.Load(), st.BadICRC.Load(), st.NAKRemoteAccess.Load())
			}
			per := resp.ReadLoopPackets()
			var sum uint64
			busy := 0
			for _, n := range per {
				sum += n
				if n > 0 {
					busy++
				}
			}
			if sum != st.Packets.Load() {
				t.Errorf("the loops received %v packets, %d in all, but Packets = %d", per, sum, st.Packets.Load())
			}
			if busy < tc.minBusyLoops {
				t.Errorf("packets per loop %v: want at least %d loops busy", per, tc.minBusyLoops)
			}
			owners := map[int]int{}
			resp.lockAll()
			for _, q := range resp.qps {
				owners[q.owner.id]++
			}
			resp.unlockAll()
			t.Logf("packets per loop %v, QPs per loop %v", per, owners)
		})
	}
}

// A packet for a QP another loop owns (the socket group's spreading
// changed) is executed after the batch under every loop's lock, with the
// PSN rules of the QP; the same QP number from another address (a forged
// source port) is an unknown QP, as with one loop.
func TestPacketsForAnotherLoopsQP(t *testing.T) {
	needSocketGroups(t)
	type step struct {
		pkt      func(p *rawPeer, va uint64, rkey uint32) []byte
		spoof    bool // sent from another port than the QP's peer
		deferred bool // run after the batch, not in it
	}
	var lastFetchAdd []byte
	for _, tc := range []struct {
		name    string
		steps   []step
		word    uint64 // word 0 afterwards
		unknown uint64
		qps     int64
		reply   func(t *testing.T, p *rawPeer)
	}{
		{
			name: "a write reaching another loop lands and is acknowledged",
			steps: []step{{pkt: func(p *rawPeer, va uint64, rkey uint32) []byte {
				return p.encodeRequest(writeOnly(va, rkey, binary.LittleEndian.AppendUint64(nil, 0xBEEF), true))
			}, deferred: true}},
			word: 0xBEEF, qps: 1,
			reply: func(t *testing.T, p *rawPeer) { p.expectAETH(roce.OpACK, roce.ACKUnlimited, p.psn-1) },
		},
		{
			name: "a repeated FETCH_ADD reaching another loop is replayed, never executed twice",
			steps: []step{
				{pkt: func(p *rawPeer, va uint64, rkey uint32) []byte {
					lastFetchAdd = p.encodeRequest(fetchAdd(va, rkey, 5))
					return lastFetchAdd
				}, deferred: true},
				{pkt: func(*rawPeer, uint64, uint32) []byte { return lastFetchAdd }, deferred: true},
			},
			word: 5, qps: 1,
			reply: func(t *testing.T, p *rawPeer) {
				a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, p.psn-1)
				b := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, p.psn-1)
				if a.AtomicAckETH.OrigData != 0 || b.AtomicAckETH.OrigData != 0 {
					t.Errorf("original values %d and %d, want 0 twice", a.AtomicAckETH.OrigData, b.AtomicAckETH.OrigData)
				}
			},
		},
		{
			name: "the QP's number from another port is an unknown QP",
			steps: []step{{pkt: func(p *rawPeer, va uint64, rkey uint32) []byte {
				return p.encodeRequest(writeOnly(va, rkey, binary.LittleEndian.AppendUint64(nil, 0xBAD), true))
			}, spoof: true}},
			word: 0, unknown: 1, qps: 1,
			reply: func(t *testing.T, p *rawPeer) { p.expectNothing(50 * time.Millisecond) },
		},
		{
			name: "a DREQ reaching another loop tears the QP down and is answered",
			steps: []step{{pkt: func(p *rawPeer, _ uint64, _ uint32) []byte {
				d := &roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 77)}
				d.DREQ.LocalCommID, d.DREQ.RemoteCommID, d.DREQ.RemoteQPN = p.commID, 0x5150, p.rqpn
				pkt := roce.CMPacket(7, d.AppendTo(nil))
				return p.encode(&pkt)
			}, deferred: true}},
			qps: 0,
			reply: func(t *testing.T, p *rawPeer) {
				if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrDREP || m.Header.TID != 77 {
					t.Fatalf("DREQ answered with %v", m.Header.AttrID)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not running: the test is loop 0, receiving what loop 1 owns.
			cfg := testResponderConfig("127.0.0.1")
			cfg.ReadLoops = 2
			resp, err := NewResponder(cfg, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Close() })
			reg := newRegion(t, 4096)
			m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
			local := resp.LocalAddr()
			p := newRawPeer(t, local)
			p.rqpn, p.psn = 0x42, 100
			peer := p.s.LocalAddr()
			q := &qp{qpn: p.rqpn, remoteQPN: p.qpn, peer: peer, state: qpEstablished, pmtu: 1024, ePSN: p.psn,
				localCommID: 0x5150, out: p.in, atomics: make([]atomicResult, 16)}
			resp.insertQP(q)
			q.owner = resp.loops[1] // as if loop 1 had received its REQ
			delete(resp.loops[0].qps, q.qpn)
			resp.loops[1].qps[q.qpn] = q
			resp.stats.QPs.Add(1)
			l := resp.loops[0]
			for i, s := range tc.steps {
				from := peer
				if s.spoof {
					from = netip.AddrPortFrom(peer.Addr(), peer.Port()+1)
					p.out.SrcPort++
				}
				b := s.pkt(p, m.VA, m.RKey)
				if s.spoof {
					p.out.SrcPort--
				}
				l.mu.Lock()
				l.handle(b, from, local.Addr())
				l.flushACKs()
				l.flush()
				l.mu.Unlock()
				if got := len(l.slow) == 1; got != s.deferred {
					t.Fatalf("step %d: deferred %v, want %v", i, got, s.deferred)
				}
				if s.deferred {
					if v, _ := reg.Load64(0); v != 0 && i == 0 {
						t.Fatalf("step %d: executed in the batch, before its owner's lock was taken", i)
					}
				}
				l.runSlow()
			}
			tc.reply(t, p)
			st := resp.Stats()
			if v, _ := reg.Load64(0); v != tc.word {
				t.Errorf("word %#x, want %#x", v, tc.word)
			}
			if st.UnknownQP.Load() != tc.unknown || st.QPs.Load() != tc.qps {
				t.Errorf("unknown QP %d, QPs %d: want %d, %d", st.UnknownQP.Load(), st.QPs.Load(), tc.unknown, tc.qps)
			}
			if n := len(resp.loops[1].qps); int64(n) != tc.qps {
				t.Errorf("loop 1 owns %d QPs, want %d", n, tc.qps)
			}
		})
	}
}

// QPs owned by loops other than the first expire (half-open, the RTU never
// sent) and disconnect (DREQ) as the first loop's do.
func TestQPsOfEveryLoopExpireAndDisconnect(t *testing.T) {
	needSocketGroups(t)
	const peers = 12
	cfg := testResponderConfig("127.0.0.1")
	cfg.ReadLoops = 4
	cfg.Timeout = 10 * time.Millisecond
	cfg.HandshakeTimeout = 200 * time.Millisecond
	resp := startResponder(t, cfg)
	st := resp.Stats()
	owners := func() map[int]int {
		out := map[int]int{}
		resp.lockAll()
		defer resp.unlockAll()
		for _, q := range resp.qps {
			out[q.owner.id]++
		}
		return out
	}
	otherLoop := func(o map[int]int) bool {
		for id := range o {
			if id != 0 {
				return true
			}
		}
		return false
	}

	// Half-open QPs: REQ, REP, no RTU. Their owners are noted as each REP
	// comes: the first ones may expire before the last REQ.
	o := map[int]int{}
	for i := range peers {
		p := newRawPeer(t, resp.LocalAddr())
		p.tid += uint64(i)
		p.req(DefaultServiceID, roce.MTU1024)
		if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrREP {
			t.Fatalf("peer %d: %v", i, m.Header.AttrID)
		}
		resp.lockAll()
		if q := resp.byPeer[p.s.LocalAddr()]; q != nil {
			o[q.owner.id]++
		}
		resp.unlockAll()
	}
	if !otherLoop(o) {
		t.Fatalf("QPs per loop %v: want some on a loop other than the first", o)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.QPs.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st.QPs.Load() != 0 || st.QPsTimedOut.Load() != peers {
		t.Fatalf("QPs %d, timed out %d after the handshake timeout: want 0 and %d (owners were %v)", st.QPs.Load(), st.QPsTimedOut.Load(), peers, o)
	}
	for i, l := range resp.loops {
		l.mu.Lock()
		n := len(l.qps)
		l.mu.Unlock()
		if n != 0 {
			t.Errorf("loop %d still owns %d QPs", i, n)
		}
	}

	// Established QPs, each torn down by its peer's DREQ.
	cfg2 := testResponderConfig("127.0.0.1")
	cfg2.ReadLoops = 4
	resp2 := startResponder(t, cfg2)
	var ps []*rawPeer
	for i := range peers {
		p := newRawPeer(t, resp2.LocalAddr())
		p.tid += uint64(i)
		p.connect(roce.MTU1024)
		ps = append(ps, p)
	}
	resp = resp2
	if o := owners(); !otherLoop(o) {
		t.Fatalf("QPs per loop %v: want some on a loop other than the first", o)
	}
	for i, p := range ps {
		d := &roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 500+uint64(i))}
		d.DREQ.LocalCommID, d.DREQ.RemoteCommID, d.DREQ.RemoteQPN = p.commID, p.peerComm, p.rqpn
		p.cm(d)
		if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrDREP || m.Header.TID != 500+uint64(i) {
			t.Fatalf("peer %d: DREQ answered with %v", i, m.Header.AttrID)
		}
	}
	if n := resp2.Stats().QPs.Load(); n != 0 {
		t.Errorf("%d QPs after every peer's DREQ", n)
	}
}

// Closing a responder whose loops are receiving stops every loop and the
// timer: Run returns nil and no goroutine is left behind.
func TestCloseStopsEveryReadLoop(t *testing.T) {
	for _, loops := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d loops", loops), func(t *testing.T) {
			before := runtime.NumGoroutine()
			cfg := testResponderConfig("127.0.0.1")
			cfg.ReadLoops = loops
			resp, err := NewResponder(cfg, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			reg := newRegion(t, 4096)
			m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite)
			done := make(chan error, 1)
			go func() { done <- resp.Run(context.Background()) }()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var reqs []*Requester
			for range 4 {
				q := dial(t, testRequesterConfig(resp.LocalAddr()))
				q.SetTargets([]Target{targetOf(m)})
				reqs = append(reqs, q)
				wg.Go(func() {
					for ctx.Err() == nil {
						if q.Apply([]memop.Op{{Kind: memop.Write, Offset: 8, Data: []byte("12345678")}}) != nil {
							return
						}
					}
				})
			}
			time.Sleep(50 * time.Millisecond) // writes under way on every loop
			if err := resp.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after Close")
			}
			cancel()
			for _, q := range reqs {
				q.Close()
			}
			wg.Wait()
			for _, l := range resp.loops {
				if l.mu.TryLock() {
					l.mu.Unlock()
				} else {
					t.Errorf("loop %d's lock still held after Run returned", l.id)
				}
			}
			// The loops, the timer and the requesters are gone.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<16)
				t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

func TestReadLoopsOutOfRangeDoNotValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loops int
		ok    bool
	}{
		{"zero loops", 0, false},
		{"one loop", 1, true},
		{"sixty-four loops", 64, true},
		{"sixty-five loops", 65, false},
		{"a negative count", -2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultResponderConfig()
			c.ReadLoops = tc.loops
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "ResponderConfig.ReadLoops") {
				t.Errorf("Validate does not name ReadLoops: %v", err)
			}
		})
	}
}
