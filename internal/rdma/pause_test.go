package rdma

import (
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
)

func TestThePacersPauseGrowsUnderLoadShrinksWhenReadsFillAndEndsWhenRequestsStop(t *testing.T) {
	const us = time.Microsecond
	p := pacer{min: 100 * us, max: 800 * us, batch: 64}
	p.pause = p.min
	type step struct {
		read      int // datagrams read; -1: a read that found nothing
		pause     time.Duration
		streaming bool
		next      time.Duration
	}
	for i, s := range []step{
		{read: 3, pause: 100 * us, streaming: true, next: 100 * us},  // light: stays at Pause
		{read: 20, pause: 200 * us, streaming: true, next: 200 * us}, // 8 to 2 batches since the last pause: doubles
		{read: 40, pause: 400 * us, streaming: true, next: 400 * us},
		{read: 60, pause: 800 * us, streaming: true, next: 800 * us},
		{read: 60, pause: 800 * us, streaming: true, next: 800 * us}, // at PauseMax
		{read: 64, pause: 800 * us, streaming: true, next: 0},        // a full batch: read again at once
		{read: 64, pause: 800 * us, streaming: true, next: 0},
		{read: 64, pause: 800 * us, streaming: true, next: 0},
		{read: 64, pause: 800 * us, streaming: true, next: 0},
		{read: 10, pause: 400 * us, streaming: true, next: 400 * us}, // 266 since the last pause, above 4 batches: halves
		{read: 64, pause: 400 * us, streaming: true, next: 0},
		{read: 64, pause: 400 * us, streaming: true, next: 0},
		{read: 10, pause: 400 * us, streaming: true, next: 400 * us}, // 138: between 2 and 4 batches, kept
		{read: 50, pause: 800 * us, streaming: true, next: 800 * us},
		{read: -1, pause: 100 * us, streaming: true, next: 100 * us}, // nothing came: back to Pause
		{read: -1, pause: 100 * us, streaming: true, next: 100 * us},
		{read: -1, pause: 100 * us, streaming: true, next: 100 * us},
		{read: -1, pause: 100 * us, streaming: false},               // the fourth empty read: wait to be woken
		{read: 5, pause: 100 * us, streaming: true, next: 100 * us}, // woken: streaming again
	} {
		if s.read < 0 {
			p.empty()
		} else {
			p.got(s.read)
		}
		if p.pause != s.pause || p.streaming != s.streaming || (s.streaming && p.next() != s.next) {
			t.Fatalf("step %d (read %d): pause %v, streaming %v, next %v; want %v, %v, %v",
				i, s.read, p.pause, p.streaming, p.next(), s.pause, s.streaming, s.next)
		}
	}

	off := pacer{batch: 64}
	off.got(10)
	if off.streaming {
		t.Error("a pacer without a Pause streams")
	}
}

func TestAResponderThatPausesServesEveryRequestAndWaitsToBeWokenWhenIdle(t *testing.T) {
	cfg := testResponderConfig("127.0.0.1")
	if !cfg.KernelWait {
		t.Skip("the responders of this run wait in the poller, where a loop cannot pause")
	}
	cfg.Pause, cfg.PauseMax = 100*time.Microsecond, time.Millisecond
	reg := newRegion(t, 1<<16)
	resp := startResponder(t, cfg)
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	q.SetTargets([]Target{targetOf(m)})

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 400 {
				ops := []memop.Op{
					{Kind: memop.FetchAdd, Offset: uint64(g) * 8, Delta: uint64(i)},
					{Kind: memop.Write, Offset: 4096 + uint64(g)*8, Data: []byte{byte(i), byte(i >> 8), byte(g), 0, 0, 0, 0, 1}},
				}
				if err := q.Apply(ops); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	flush(t, q)
	for g := range 4 {
		if v, _ := reg.Load64(uint64(g) * 8); v != 399*400/2 {
			t.Errorf("counter %d = %d, want %d", g, v, 399*400/2)
		}
		var b [8]byte
		reg.Read(4096+uint64(g)*8, b[:])
		if b != [8]byte{399 & 0xff, 399 >> 8, byte(g), 0, 0, 0, 0, 1} {
			t.Errorf("word %d = %v, want the last write's", g, b)
		}
	}
	st := resp.Stats()
	if st.Pauses.Load() == 0 {
		t.Fatal("no read after a pause: the loop was woken by every request")
	}

	// Idle: after a few empty reads the loop waits to be woken, and a
	// request then still finds it.
	time.Sleep(50 * time.Millisecond)
	before := st.Pauses.Load()
	time.Sleep(100 * time.Millisecond)
	if d := st.Pauses.Load() - before; d > pacerEmpties {
		t.Errorf("%d pauses in 100 ms with no request: an idle loop keeps pausing", d)
	}
	if err := q.Apply([]memop.Op{{Kind: memop.FetchAdd, Offset: 0, Delta: 1}}); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	if v, _ := reg.Load64(0); v != 399*400/2+1 {
		t.Errorf("after idling, counter 0 = %d, want %d", v, 399*400/2+1)
	}
}

func TestAResponderWithoutAPauseIsWokenByEveryRequest(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite)
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	q.SetTargets([]Target{targetOf(m)})
	for i := range 100 {
		if err := q.Apply([]memop.Op{{Kind: memop.Write, Offset: 8, Data: []byte{byte(i), 0, 0, 0}}}); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, q)
	if n := resp.Stats().Pauses.Load(); n != 0 {
		t.Errorf("%d pauses without ResponderConfig.Pause", n)
	}
}

func TestAPacerHoldWaitsToBeWokenAtThePause(t *testing.T) {
	p := pacer{min: 100 * time.Microsecond, max: time.Millisecond, batch: 64}
	p.pause = p.min
	p.got(20)
	p.got(20)
	if !p.streaming || p.pause != 400*time.Microsecond {
		t.Fatalf("streaming %v, pause %v: the set-up did not stream", p.streaming, p.pause)
	}
	p.hold()
	if p.streaming || p.pause != p.min || p.full || p.since != 0 {
		t.Errorf("after hold: streaming %v, pause %v, full %v, since %d; want a loop waiting to be woken, at Pause",
			p.streaming, p.pause, p.full, p.since)
	}
}

// A requester with all the atomics it may have outstanding waits for their
// ATOMIC ACKs: a pausing responder must not pause before reading its next
// ones, or each of its round trips takes a pause.
func TestAPausingResponderDoesNotPauseForARequesterWaitingOnItsAtomics(t *testing.T) {
	cfg := testResponderConfig("127.0.0.1")
	if !cfg.KernelWait {
		t.Skip("the responders of this run wait in the poller, where a loop cannot pause")
	}
	const depth = 8
	cfg.Pause, cfg.PauseMax = time.Millisecond, time.Millisecond
	cfg.AtomicDepth = depth
	cfg.ReadLoops = 1
	reg := newRegion(t, 4096)
	resp := startResponder(t, cfg)
	m, _ := resp.RegisterMR("m", reg, AccessRemoteAtomic)
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	q.SetTargets([]Target{targetOf(m)})

	ops := make([]memop.Op, 4*depth)
	for i := range ops {
		ops[i] = memop.Op{Kind: memop.FetchAdd, Offset: 8 * uint64(i%depth), Delta: 1}
	}
	st := resp.Stats()
	const rounds = 50
	for range rounds {
		if err := q.Apply(ops); err != nil {
			t.Fatal(err)
		}
		flush(t, q)
	}
	for i := range depth {
		if v, _ := reg.Load64(8 * uint64(i)); v != 4*rounds {
			t.Fatalf("counter %d = %d, want %d", i, v, 4*rounds)
		}
	}
	// At least 4 round trips of depth atomics per Apply: 200 reads that
	// each answer the requester's whole allowance. Some reads may find
	// part of one (the requester's sends and the loop's reads interleave);
	// a loop that paused after every read of the atomics would pause about
	// once per round trip.
	pauses, batches := st.Pauses.Load(), st.Batches.Load()
	if pauses*4 > batches {
		t.Errorf("%d pauses in %d reads: the loop paused for a requester that waited on its atomics", pauses, batches)
	}
}
