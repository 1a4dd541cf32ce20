package xdp

import (
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing is a ring in ordinary memory, standing in for the kernel's.
func fakeRing(n uint32, descSize uintptr) ring {
	mem := make([]byte, 64+int(n)*int(descSize))
	base := unsafe.Pointer(unsafe.SliceData(mem))
	return ring{
		mem:      mem,
		producer: (*uint32)(base),
		consumer: (*uint32)(unsafe.Add(base, 4)),
		flags:    (*uint32)(unsafe.Add(base, 8)),
		descs:    unsafe.Add(base, 64),
		mask:     n - 1,
		size:     n,
	}
}

// fakeReader is a reader over fake rings and a UMEM of 256 frames, playing
// the kernel's part itself: deliver writes frames into the UMEM and RX ring.
type fakeReader struct {
	r    *reader
	next uint64 // next frame to fill, round robin
}

func newFakeReader(t testing.TB, h Handler) *fakeReader {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Interface, cfg.Frames, cfg.RXRing = "fake0", 256, 256
	s := &socket{fd: -1, frameSize: uint64(cfg.FrameSize), umem: make([]byte, cfg.Frames*cfg.FrameSize)}
	s.fill = fakeRing(256, 8)
	s.rx = fakeRing(256, unsafe.Sizeof(unix.XDPDesc{}))
	l := &Listener{cfg: cfg, done: make(chan struct{})}
	r := newReader(0, s, []Route{{Port: 40040, NewHandler: func(int) Handler { return h }}}, l)
	return &fakeReader{r: r}
}

// deliver puts frames on the RX ring as the kernel would (each at an offset
// of 256 bytes into its UMEM frame, as copy mode leaves them).
func (f *fakeReader) deliver(frames ...[]byte) {
	s := f.r.s
	prod := atomic.LoadUint32(s.rx.producer)
	for i, fr := range frames {
		base := (f.next % 256) * s.frameSize
		f.next++
		copy(s.umem[base+256:], fr)
		d := s.rx.desc(prod + uint32(i))
		d.Addr, d.Len = base+256, uint32(len(fr))
	}
	atomic.StoreUint32(s.rx.producer, prod+uint32(len(frames)))
}

func TestReaderHandsOnGoodFramesAndCountsTheRest(t *testing.T) {
	rec := newRecorder()
	f := newFakeReader(t, rec)
	good := AppendFrame(nil, macA, macB, src4, dst4, []byte("good"))
	otherPort := AppendFrame(nil, macA, macB, src4, netip.AddrPortFrom(dst4.Addr(), 9), []byte("other"))
	f.deliver(good, good[:20], otherPort, good)
	if n := f.r.receive(); n != 4 {
		t.Fatalf("receive took %d descriptors, want 4", n)
	}
	if rec.count() != 2 || string(rec.got[0]) != "good" || rec.from[0] != src4 {
		t.Fatalf("handed on %q from %v", rec.got, rec.from)
	}
	st := &f.r.l.stats
	if st.Packets.Load() != 2 || st.Malformed[ReasonShortIP].Load() != 1 || st.Malformed[ReasonPort].Load() != 1 {
		t.Errorf("stats: packets %d, short_ip %d, port %d", st.Packets.Load(), st.Malformed[ReasonShortIP].Load(), st.Malformed[ReasonPort].Load())
	}
	if rec.batch != 1 {
		t.Errorf("EndBatch called %d times, want once per batch", rec.batch)
	}
	// The four frames went back to the fill ring, at their frames' bases.
	s := f.r.s
	if got := atomic.LoadUint32(s.fill.producer); got != 4 {
		t.Fatalf("fill producer %d, want 4", got)
	}
	for i := range uint32(4) {
		if a := *s.fill.addr(i); a != uint64(i)*s.frameSize {
			t.Errorf("fill slot %d = %d, want %d", i, a, uint64(i)*s.frameSize)
		}
	}
	// An RX descriptor outside the UMEM is counted, not followed.
	prod := atomic.LoadUint32(s.rx.producer)
	d := s.rx.desc(prod)
	d.Addr, d.Len = uint64(len(s.umem))-10, 100
	atomic.StoreUint32(s.rx.producer, prod+1)
	f.r.receive()
	if st.InvalidDescs.Load() != 1 {
		t.Errorf("InvalidDescs = %d, want 1", st.InvalidDescs.Load())
	}
	if got := atomic.LoadUint32(s.fill.producer); got != 4 {
		t.Errorf("an invalid descriptor was given back to the fill ring (producer %d, want 4)", got)
	}
}

func TestReaderBatchDoesNotAllocate(t *testing.T) {
	h := &countHandler{}
	f := newFakeReader(t, h)
	good := AppendFrame(nil, macA, macB, src4, dst4, []byte("a Key-Write report"))
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = good
	}
	allocs := testing.AllocsPerRun(200, func() {
		f.deliver(batch...)
		// The fake kernel takes the refilled frames back at once.
		atomic.StoreUint32(f.r.s.fill.consumer, atomic.LoadUint32(f.r.s.fill.producer))
		f.r.receive()
	})
	if allocs != 0 {
		t.Errorf("a batch of 64 frames allocates %v times", allocs)
	}
	if h.n.Load() < 64*200 {
		t.Errorf("handled %d datagrams", h.n.Load())
	}
}

func BenchmarkReaderBatch(b *testing.B) {
	h := &countHandler{}
	f := newFakeReader(b, h)
	good := AppendFrame(nil, macA, macB, src4, dst4, []byte("a Key-Write report"))
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = good
	}
	b.ReportAllocs()
	for b.Loop() {
		f.deliver(batch...)
		atomic.StoreUint32(f.r.s.fill.consumer, atomic.LoadUint32(f.r.s.fill.producer))
		f.r.receive()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/frame")
}

// BenchmarkReaderReceive is the reader alone: the frames are written into
// the UMEM once (so they are in this core's cache, unlike frames the kernel
// just wrote from another CPU) and every round hands the same 64
// descriptors back to it.
func BenchmarkReaderReceive(b *testing.B) {
	h := &countHandler{}
	f := newFakeReader(b, h)
	good := AppendFrame(nil, macA, macB, src4, dst4, []byte("a Key-Write report"))
	batch := make([][]byte, 256)
	for i := range batch {
		batch[i] = good
	}
	f.deliver(batch...)
	s := f.r.s
	atomic.StoreUint32(s.rx.producer, 0)
	b.ReportAllocs()
	for b.Loop() {
		cons := atomic.LoadUint32(s.rx.consumer)
		atomic.StoreUint32(s.rx.producer, cons+64)
		atomic.StoreUint32(s.fill.consumer, atomic.LoadUint32(s.fill.producer))
		f.r.receive()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/frame")
}

func TestThePauseGrowsUnderLoadAndShrinksWhenTheRingFills(t *testing.T) {
	r := &reader{batch: 64, target: 1024, pauseMin: 50_000, pauseMax: 500_000, pause: unix.NsecToTimespec(50_000)}
	after := func(got uint32) int64 {
		r.got = got
		r.adapt()
		return r.pause.Nano()
	}
	// Wake-ups finding a batch or more, under half the target: doubled,
	// up to the maximum.
	for _, want := range []int64{100_000, 200_000, 400_000, 500_000, 500_000} {
		if p := after(300); p != want {
			t.Fatalf("pause %d, want %d", p, want)
		}
	}
	if r.got != 0 {
		t.Errorf("adapt left got = %d", r.got)
	}
	// Between half the target and the target: kept.
	if p := after(800); p != 500_000 {
		t.Errorf("pause %d after a wake-up of 800 frames, want it kept", p)
	}
	// Over the target: halved, not below the minimum.
	for _, want := range []int64{250_000, 125_000, 62_500, 50_000, 50_000} {
		if p := after(2000); p != want {
			t.Fatalf("pause %d, want %d", p, want)
		}
	}
	// Light load, under lightLoad frames: straight back to the minimum.
	after(300)
	after(300)
	if p := after(lightLoad - 1); p != 50_000 {
		t.Errorf("pause %d after a wake-up of %d frames, want the minimum", p, lightLoad-1)
	}
	// A steady sender under a batch per wake-up, as Append's batched
	// writes are: the pause grows all the same.
	for _, want := range []int64{100_000, 200_000} {
		if p := after(lightLoad); p != want {
			t.Fatalf("pause %d after a wake-up of %d frames, want %d", p, lightLoad, want)
		}
	}
	// A fixed pause (CoalesceMax = Coalesce) never moves.
	r = &reader{batch: 64, target: 1024, pauseMin: 50_000, pauseMax: 50_000, pause: unix.NsecToTimespec(50_000)}
	if p := after(300); p != 50_000 {
		t.Errorf("fixed pause moved to %d", p)
	}
}

func TestCoalesceMaxIsValidated(t *testing.T) {
	c := DefaultConfig()
	c.Interface = "x"
	for _, m := range []time.Duration{time.Microsecond, 11 * time.Millisecond} {
		c.CoalesceMax = m
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "coalesce_max") {
			t.Errorf("CoalesceMax %v: %v", m, err)
		}
	}
	for _, m := range []time.Duration{0, c.Coalesce, 10 * time.Millisecond} {
		c.CoalesceMax = m
		if err := c.Validate(); err != nil {
			t.Errorf("CoalesceMax %v: %v", m, err)
		}
	}
}

// A reader pausing in raw system calls keeps its P while it sleeps; it
// must let a waiting goroutine have it within about yieldEvery, not after
// the 10ms sysmon waits before preempting. Counted against the reader's own
// pauses, not the clock, so that a loaded machine (pauses that oversleep, a
// thread that waits for a CPU) does not change the ratio.
func TestPausingReaderLetsOtherGoroutinesRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const pause = 100 * time.Microsecond
	r := &reader{pause: unix.NsecToTimespec(pause.Nanoseconds())}
	r.runnable[0].Name = "/sched/goroutines/runnable:goroutines"
	var stop atomic.Bool
	var sleeps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for !stop.Load() {
			r.sleep()
			sleeps.Add(1)
		}
	}()
	runtime.Gosched() // let the pausing goroutine take the P
	var runs int
	// About 100 chances to yield (yieldEvery of pauses each), or 10 s.
	want := int64(100 * yieldEvery / pause)
	for deadline := time.Now().Add(10 * time.Second); sleeps.Load() < want && time.Now().Before(deadline); {
		runtime.Gosched() // wait for the P again
		runs++
	}
	stop.Store(true)
	<-done
	yields := sleeps.Load() * int64(pause) / int64(yieldEvery)
	// Yielding every yieldEvery of pauses: about one turn per chance.
	// Preempted by sysmon only (every 10ms, a tenth of the chances at
	// least): far fewer.
	if yields < 10 || int64(runs) < yields/2 {
		t.Errorf("the other goroutine ran %d times while the reader paused %d times (%d chances to yield), want about one per chance", runs, sleeps.Load(), yields)
	}
	t.Logf("%d turns, %d pauses, %d chances to yield", runs, sleeps.Load(), yields)
}

// idleRecorder is a recorder that counts the Idle calls it gets, noting how
// many batches it had ended by each.
type idleRecorder struct {
	*recorder
	idles   int
	batchAt []int
}

func (r *idleRecorder) Idle() {
	r.idles++
	r.batchAt = append(r.batchAt, r.batch)
}

func TestAnIdlerIsToldOnceBeforeEachWaitThatFollowsItsDatagrams(t *testing.T) {
	rec := &idleRecorder{recorder: newRecorder()}
	f := newFakeReader(t, rec)
	good := AppendFrame(nil, macA, macB, src4, dst4, []byte("good"))
	otherPort := AppendFrame(nil, macA, macB, src4, netip.AddrPortFrom(dst4.Addr(), 9), []byte("other"))
	f.deliver(good, good)
	f.r.receive()
	f.deliver(good)
	f.r.receive()
	if rec.idles != 0 {
		t.Fatalf("%d Idle calls while the reader still had frames", rec.idles)
	}
	f.r.sleep() // the reader's pause: the ring has run dry
	if rec.idles != 1 || rec.batchAt[0] != 2 {
		t.Fatalf("%d Idle calls (after batches %v), want 1 after both batches", rec.idles, rec.batchAt)
	}
	f.r.sleep()
	f.deliver(otherPort) // a frame for another port: nothing for this handler
	f.r.receive()
	f.r.idle() // as before a poll
	if rec.idles != 1 {
		t.Fatalf("%d Idle calls, want none for waits without a datagram of its own", rec.idles)
	}
	f.deliver(good)
	f.r.receive()
	f.r.idle()
	if rec.idles != 2 || rec.batchAt[1] != 3 {
		t.Errorf("%d Idle calls (after batches %v), want a second after the third batch", rec.idles, rec.batchAt)
	}
}
