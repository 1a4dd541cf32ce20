package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

func TestAdvertisementSizes(t *testing.T) {
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	for _, n := range []int{0, 1, 255, 256, 257, 3*256 + 128, 70 << 10} {
		adv := make([]byte, n)
		for i := range adv {
			adv[i] = byte(i*13 + n)
		}
		resp.SetAdvertisement(adv)
		cfg := testRequesterConfig(resp.LocalAddr())
		cfg.MTU = 256
		q := dial(t, cfg)
		if !bytes.Equal(q.Advertisement(), adv) {
			t.Errorf("%d-byte advertisement arrived as %d bytes", n, len(q.Advertisement()))
		}
		q.Close()
	}
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.MaxAdvertisement = 1000
	_, err := Dial(context.Background(), cfg, nil)
	if !errors.Is(err, ErrAdvertisementTooLarge) {
		t.Errorf("a 70 KiB advertisement with a 1000-byte limit: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.ServiceID++
	_, err := Dial(context.Background(), cfg, nil)
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != roce.RejectInvalidServiceID {
		t.Errorf("wrong service ID: %v", err)
	}
	cfg = testRequesterConfig(resp.LocalAddr())
	cfg.MTU = 4096
	resp2 := startResponder(t, func() ResponderConfig { c := testResponderConfig("127.0.0.1"); c.MTU = 1024; return c }())
	cfg.Collector = resp2.LocalAddr()
	if _, err := Dial(context.Background(), cfg, nil); !errors.As(err, &rej) || rej.Reason != roce.RejectInvalidMTU {
		t.Errorf("MTU above the responder's: %v", err)
	}
	// Nobody there.
	cfg = testRequesterConfig(netip.MustParseAddrPort("127.0.0.1:9"))
	cfg.CMRetries = 2
	cfg.CMTimeout = 10 * time.Millisecond
	start := time.Now()
	if _, err := Dial(context.Background(), cfg, nil); !errors.Is(err, ErrTimeout) {
		t.Errorf("no responder: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Dial to nobody took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, cfg, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Dial: %v", err)
	}
}

func TestApplyRefusesBadOpsAndSurvivesNAKs(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	good := targetOf(m)
	stale := good
	stale.RKey ^= 0xFFFF // as after a collector restart
	q.SetTargets([]Target{good, stale})
	for _, c := range []struct {
		op   memop.Op
		want error
	}{
		{memop.Op{Kind: memop.Write, Store: 2, Data: []byte{1}}, ErrUnknownTarget},
		{memop.Op{Kind: memop.Write, Offset: 4095, Data: []byte{1, 2}}, ErrOutOfRange},
		{memop.Op{Kind: memop.Write, Offset: 1 << 63, Data: []byte{1}}, ErrOutOfRange},
		{memop.Op{Kind: memop.FetchAdd, Offset: 4}, ErrMisaligned},
		{memop.Op{Kind: memop.FetchAdd, Offset: 4096}, ErrOutOfRange},
		{memop.Op{Kind: 0}, ErrBadOp},
	} {
		if err := q.Apply([]memop.Op{c.op}); err != c.want {
			t.Errorf("Apply(%+v) = %v, want %v", c.op, err, c.want)
		}
	}
	if q.Stats().Refused.Load() != 6 {
		t.Errorf("refused %d", q.Stats().Refused.Load())
	}
	// Ops the responder refuses are dropped; the connection carries on.
	err := q.Apply([]memop.Op{
		{Kind: memop.Write, Store: 1, Offset: 0, Data: []byte("lost")},
		{Kind: memop.FetchAdd, Store: 1, Offset: 8, Delta: 1},
		{Kind: memop.Write, Store: 1, Offset: 100, Data: make([]byte, 3000)},
		{Kind: memop.Write, Store: 0, Offset: 16, Data: []byte("kept")},
		{Kind: memop.FetchAdd, Store: 0, Offset: 24, Delta: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	var b [4]byte
	reg.Read(16, b[:])
	v, _ := reg.Load64(24)
	if string(b[:]) != "kept" || v != 9 {
		t.Errorf("ops after refused ones: %q %d", b, v)
	}
	reg.Read(0, b[:])
	if b != [4]byte{} {
		t.Errorf("refused write landed")
	}
	st := q.Stats()
	if st.NAKRemoteAccess.Load() != 3 || st.OpsFailed.Load() != 3 || !q.Connected() {
		t.Errorf("NAK remote access %d, failed %d, connected %v", st.NAKRemoteAccess.Load(), st.OpsFailed.Load(), q.Connected())
	}
}

func TestConcurrentApply(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Window = 16
	cfg.MaxAtomic = 4
	cfg.RateLimit = 50000
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				if err := q.Apply([]memop.Op{{Kind: memop.FetchAdd, Offset: uint64(g) * 8, Delta: uint64(i)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	start := time.Now()
	wg.Wait()
	flush(t, q)
	for g := range 4 {
		if v, _ := reg.Load64(uint64(g) * 8); v != 499*500/2 {
			t.Errorf("counter %d = %d", g, v)
		}
	}
	// 2000 packets at 50000/s with a burst of 64: at least ~38 ms.
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("rate limit not applied: 2000 packets in %v", d)
	}
}

// encodeTarget is a test advertisement: one target.
func encodeTarget(m MR) []byte {
	b := binary.BigEndian.AppendUint64(nil, m.VA)
	b = binary.BigEndian.AppendUint32(b, m.RKey)
	return binary.BigEndian.AppendUint64(b, m.Length)
}

func decodeTarget(b []byte) Target {
	return Target{VA: binary.BigEndian.Uint64(b), RKey: binary.BigEndian.Uint32(b[8:]), Length: binary.BigEndian.Uint64(b[12:])}
}

func TestReconnectAfterResponderRestart(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		name := "crash"
		if graceful {
			name = "graceful"
		}
		t.Run(name, func(t *testing.T) { testRestart(t, graceful) })
	}
}

func testRestart(t *testing.T, graceful bool) {
	reg1, reg2 := newRegion(t, 4096), newRegion(t, 4096)
	cfg := testResponderConfig("127.0.0.1")
	resp1, err := NewResponder(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	done1 := make(chan error, 1)
	go func() { done1 <- resp1.Run(context.Background()) }()
	m1, _ := resp1.RegisterMR("m", reg1, AccessRemoteWrite|AccessRemoteAtomic)
	resp1.SetAdvertisement(encodeTarget(m1))

	qcfg := testRequesterConfig(resp1.LocalAddr())
	qcfg.Retries = 3
	q := dial(t, qcfg)
	q.SetTargets([]Target{decodeTarget(q.Advertisement())})
	reconnected := make(chan []byte, 1)
	q.OnReconnect(func(adv []byte) {
		q.SetTargets([]Target{decodeTarget(adv)})
		reconnected <- adv
	})
	write := func(v string) error { return q.Apply([]memop.Op{{Kind: memop.Write, Offset: 0, Data: []byte(v)}}) }
	if err := write("one!"); err != nil {
		t.Fatal(err)
	}
	flush(t, q)

	if graceful {
		resp1.Close()
	} else {
		resp1.crash()
	}
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	rcfg := cfg
	rcfg.Addr = resp1.LocalAddr().String()
	// The requester reconnects as soon as the address answers: the new
	// responder serves its MR and advertisement from its first packet.
	var m2 MR
	startResponder(t, rcfg, func(r *Responder) {
		m2, _ = r.RegisterMR("m", reg2, AccessRemoteWrite|AccessRemoteAtomic)
		r.SetAdvertisement(encodeTarget(m2))
	})

	// Keep writing: after a crash, only outstanding packets reveal it.
	deadline := time.After(10 * time.Second)
	var adv []byte
wait:
	for {
		select {
		case adv = <-reconnected:
			break wait
		case <-deadline:
			t.Fatalf("no reconnect (%v)", statsString(q))
		case <-time.After(5 * time.Millisecond):
			err := write("lost")
			if err != nil && !errors.Is(err, ErrNotConnected) {
				t.Fatal(err)
			}
		}
	}
	if decodeTarget(adv) != targetOf(m2) {
		t.Errorf("OnReconnect got %x, want the new responder's advertisement", adv)
	}
	// A loaded machine may cost another reconnect; Flush says so.
	for try := 0; ; try++ {
		err := write("two!")
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = q.Flush(ctx)
			cancel()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotConnected) || try > 100 {
			t.Fatalf("write after reconnect: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var b [4]byte
	reg2.Read(0, b[:])
	if string(b[:]) != "two!" {
		t.Errorf("write after reconnect landed as %q", b)
	}
	if q.Stats().Reconnect.Load() < 1 || q.Stats().Connects.Load() != q.Stats().Reconnect.Load()+1 {
		t.Errorf("reconnects %d connects %d", q.Stats().Reconnect.Load(), q.Stats().Connects.Load())
	}
}

func TestCloseSendsDREQ(t *testing.T) {
	resp := startResponder(t, testResponderConfig("::1"))
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	if resp.Stats().QPs.Load() != 1 {
		t.Fatalf("QPs %d", resp.Stats().QPs.Load())
	}
	q.Close()
	if resp.Stats().QPs.Load() != 0 || resp.Stats().CMDisconnects.Load() != 1 {
		t.Errorf("after Close: QPs %d, DREQs %d", resp.Stats().QPs.Load(), resp.Stats().CMDisconnects.Load())
	}
	if err := q.Apply([]memop.Op{{Kind: memop.Write, Data: []byte{1}}}); err != ErrClosed {
		t.Errorf("Apply after Close: %v", err)
	}
}

func TestApplyDeferredSendsOnPush(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	waitFor := func(t *testing.T, off, want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, _ := reg.Load64(off)
			if v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("word %d = %d, want %d", off, v, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	write := func(off, v uint64) []memop.Op {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return []memop.Op{{Kind: memop.Write, Offset: off, Data: b}, {Kind: memop.FetchAdd, Offset: off + 8, Delta: v}}
	}

	t.Run("deferred ops stay queued until Push, then all arrive in order", func(t *testing.T) {
		cfg := testRequesterConfig(resp.LocalAddr())
		cfg.Timeout = 4 * time.Second // the timer's safety net ticks once a second: not during this check
		q := dial(t, cfg)
		q.SetTargets([]Target{targetOf(m)})
		sent := q.Stats().Packets.Load()
		for i := range uint64(10) {
			if err := q.ApplyDeferred(write(0, i+1)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
		if v, _ := reg.Load64(8); v != 0 {
			t.Fatalf("a deferred op arrived before Push (counter %d)", v)
		}
		if d := q.Stats().Packets.Load() - sent; d != 20 {
			t.Fatalf("%d packets posted, want 20", d)
		}
		q.Push()
		waitFor(t, 8, 55)
		if v, _ := reg.Load64(0); v != 10 {
			t.Fatalf("last write = %d, want 10 (the writes arrived out of order)", v)
		}
		flush(t, q)
	})
	t.Run("a deferred write carries its bytes as they were at the call, not at the send", func(t *testing.T) {
		cfg := testRequesterConfig(resp.LocalAddr())
		cfg.Timeout = 4 * time.Second
		q := dial(t, cfg)
		q.SetTargets([]Target{targetOf(m)})
		buf := make([]byte, 8) // reused for every call, as a worker reuses its batch
		for i := range uint64(8) {
			binary.LittleEndian.PutUint64(buf, 100+i)
			if err := q.ApplyDeferred([]memop.Op{{Kind: memop.Write, Offset: 512 + 8*i, Data: buf}}); err != nil {
				t.Fatal(err)
			}
		}
		clear(buf)
		q.Push()
		flush(t, q)
		for i := range uint64(8) {
			if v, _ := reg.Load64(512 + 8*i); v != 100+i {
				t.Errorf("word %d = %d, want %d", 512+8*i, v, 100+i)
			}
		}
	})
	t.Run("Apply sends what earlier deferred calls queued, before its own ops", func(t *testing.T) {
		q := dial(t, testRequesterConfig(resp.LocalAddr()))
		q.SetTargets([]Target{targetOf(m)})
		if err := q.ApplyDeferred(write(64, 7)); err != nil {
			t.Fatal(err)
		}
		if err := q.Apply(write(128, 9)); err != nil {
			t.Fatal(err)
		}
		flush(t, q)
		for off, want := range map[uint64]uint64{64: 7, 72: 7, 128: 9, 136: 9} {
			if v, _ := reg.Load64(off); v != want {
				t.Errorf("word %d = %d, want %d", off, v, want)
			}
		}
	})
	t.Run("nobody pushing, the timer sends deferred ops within a tick", func(t *testing.T) {
		q := dial(t, testRequesterConfig(resp.LocalAddr())) // 20 ms timeout: a tick every 5 ms
		q.SetTargets([]Target{targetOf(m)})
		if err := q.ApplyDeferred(write(256, 3)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 264, 3)
	})
}
