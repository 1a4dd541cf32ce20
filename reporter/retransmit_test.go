package reporter

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// sendN sends n distinct compat Key-Write reports, one per datagram.
func sendN(t *testing.T, r *Reporter, n int) {
	t.Helper()
	for i := range n {
		rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, byte(i)}, 2, 0)
		if err := r.Send(&rep, false); err != nil {
			t.Fatal(err)
		}
	}
}

func retransmitConfig(f *fakeTranslator, rto time.Duration) Config {
	return Config{To: f.addr(), Local: "127.0.0.1:0", Retransmit: true, RetransmitTimeout: rto}
}

// syncedReporter returns a reporter whose first datagram the fake
// translator has acknowledged, and the reporter's address.
func syncedReporter(t *testing.T, f *fakeTranslator, rto time.Duration) (*Reporter, netip.AddrPort) {
	t.Helper()
	r := mustNew(t, retransmitConfig(f, rto))
	sendN(t, r, 1)
	b, from := f.mustRead()
	f.reply(from, b[1], false)
	for r.Stats().Acks.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	return r, from
}

func TestNackResendsExactlyTheMissingDatagrams(t *testing.T) {
	f := newFakeTranslator(t)
	r, from := syncedReporter(t, f, 2*time.Second)
	sendN(t, r, 6)

	// The translator receives the six datagrams but loses the third.
	var first [][]byte
	for range 6 {
		b, _ := f.mustRead()
		h, _ := decodeAll(t, b, false)
		if !h.Retransmit() {
			t.Fatalf("datagram % x lacks the retransmit flag", b)
		}
		first = append(first, b)
	}
	seq := func(i int) uint8 { return first[i][1] }
	for i := 1; i < 6; i++ {
		if seq(i) != seq(i-1)+1 {
			t.Fatalf("sequence numbers %d then %d", seq(i-1), seq(i))
		}
	}
	// It accepts the first two, then NACKs every datagram after the gap,
	// as a go-back-N translator does: three NACKs for the same seq.
	f.reply(from, seq(0), false)
	f.reply(from, seq(1), false)
	for range 3 {
		f.reply(from, seq(1), true)
	}
	// The reporter resends datagrams 3 to 6, once, byte for byte.
	for i := 2; i < 6; i++ {
		b, _ := f.mustRead()
		if !bytes.Equal(b, first[i]) {
			t.Fatalf("resent % x, want datagram %d: % x", b, i+1, first[i])
		}
	}
	f.reply(from, seq(5), false)
	f.expectNothing(300 * time.Millisecond)

	st := r.Stats()
	if st.Retransmits.Load() != 4 || st.Nacks.Load() != 3 || st.Acks.Load() != 4 {
		t.Errorf("Stats: %d retransmits, %d NACKs, %d ACKs; want 4, 3, 4", st.Retransmits.Load(), st.Nacks.Load(), st.Acks.Load())
	}
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with every datagram acknowledged", d)
	}
}

func TestUnacknowledgedDatagramsAreResentOnTimeout(t *testing.T) {
	f := newFakeTranslator(t)
	r, from := syncedReporter(t, f, 50*time.Millisecond)
	start := time.Now()
	sendN(t, r, 1)
	b, _ := f.mustRead() // the tail: "lost", never acknowledged
	again, _ := f.mustRead()
	if !bytes.Equal(again, b) {
		t.Fatalf("resent % x, want the unacknowledged % x", again, b)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("resent after %v, before the 50 ms timeout", d)
	}
	f.reply(from, b[1], false)
	f.expectNothing(200 * time.Millisecond)
	if n := r.Stats().Retransmits.Load(); n != 1 {
		t.Errorf("Stats.Retransmits = %d, want 1", n)
	}
}

func TestTheFirstDatagramWaitsForTheTranslatorsFirstAnswer(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, time.Second))
	sendN(t, r, 1)
	done := make(chan error, 1)
	go func() {
		rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 1}, 2, 0)
		done <- r.Send(&rep, false)
	}()
	b, from := f.mustRead()
	f.expectNothing(200 * time.Millisecond) // until the translator answers
	f.reply(from, b[1], false)
	next, _ := f.mustRead()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if next[1] != b[1]+1 {
		t.Errorf("second datagram has seq %d after %d", next[1], b[1])
	}
	f.reply(from, next[1], false)
}

func TestAReporterStopsWaitingForASilentTranslator(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 50*time.Millisecond))
	start := time.Now()
	sendN(t, r, 20) // one wait of 50 ms, then none
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Errorf("20 datagrams to a silent translator took %v, want one 50 ms wait", d)
	}
}

func TestTimeoutResendsGiveUp(t *testing.T) {
	f := newFakeTranslator(t)
	r, _ := syncedReporter(t, f, 20*time.Millisecond)
	sendN(t, r, 1)
	f.mustRead()
	for range MaxTimeoutResends {
		f.mustRead()
	}
	f.expectNothing(200 * time.Millisecond)
	if n := r.Stats().Retransmits.Load(); n != MaxTimeoutResends {
		t.Errorf("Stats.Retransmits = %d, want %d", n, MaxTimeoutResends)
	}
}

func TestAReporterRenumbersWhenTheTranslatorExpectsAnotherSequence(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 2*time.Second))
	sendN(t, r, 1)
	b, from := f.mustRead()
	// The translator still tracks this address from an earlier reporter
	// whose last datagram was b[1]+100: it takes ours for a duplicate.
	last := b[1] + 100
	f.reply(from, last, false)
	again, _ := f.mustRead()
	if again[1] != last+1 || !bytes.Equal(again[2:], b[2:]) || again[0] != b[0] {
		t.Fatalf("after ACK(%d) resent % x, want % x renumbered to %d", last, again, b, last+1)
	}
	f.reply(from, last+1, false)
	sendN(t, r, 1)
	next, _ := f.mustRead()
	if next[1] != last+2 {
		t.Errorf("next datagram has seq %d, want %d", next[1], last+2)
	}
	f.reply(from, next[1], false)
}

func TestAckFromAnotherHostIsIgnored(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, time.Hour))
	if r.fromTranslator(mustAddrPort(t, "127.0.0.2:40040")) {
		t.Error("an ACK from 127.0.0.2 was taken for the translator's")
	}
	if !r.fromTranslator(mustAddrPort(t, "127.0.0.1:9")) {
		t.Error("an ACK from the translator's address and another port was refused")
	}
}

func TestWindowForgetsTheOldestWhenFull(t *testing.T) {
	var w window
	w.head = 250
	for i := range WindowSize + 3 {
		_, evicted := w.push([]byte{byte(dta.OpKeyWrite), w.next(), 0x40, byte(i)})
		if evicted != (i >= WindowSize) {
			t.Fatalf("push %d: evicted = %v", i, evicted)
		}
	}
	if w.count != WindowSize || w.head != 253 {
		t.Fatalf("count %d head %d, want %d and 253", w.count, w.head, WindowSize)
	}
	if !w.wasEvicted(252) || w.wasEvicted(253) {
		t.Error("eviction marks wrong")
	}
	if freed, ok := w.ackThrough(252); !ok || freed != 0 {
		t.Errorf("ackThrough(head-1) = %d, %v; want 0, true", freed, ok)
	}
	if _, ok := w.ackThrough(251); ok {
		t.Error("ackThrough of a forgotten datagram was taken as in the window")
	}
	if freed, ok := w.ackThrough(253 + 9 - 256); !ok || freed != 10 {
		t.Errorf("ackThrough(head+9) = %d, %v; want 10, true", freed, ok)
	}
	if got := w.at(0); got[1] != 253+10-256 || got[3] != 13 {
		t.Errorf("oldest after ACK: % x", got)
	}
}

func TestAFullWindowWaitsForAnAnsweringTranslator(t *testing.T) {
	f := newFakeTranslator(t)
	r, from := syncedReporter(t, f, time.Second)
	done := make(chan error, 1)
	go func() { // WindowSize+10 more: the last 10 must wait for ACKs
		rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 1}, 2, 0)
		for range WindowSize + 10 {
			if err := r.Send(&rep, false); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var last uint8
	for range WindowSize {
		b, _ := f.mustRead()
		last = b[1]
	}
	f.expectNothing(200 * time.Millisecond) // the window is full: Send waits
	f.reply(from, last, false)
	for range 10 {
		b, _ := f.mustRead()
		last = b[1]
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.reply(from, last, false)
	if n := r.Stats().Evicted.Load(); n != 0 {
		t.Errorf("Stats.Evicted = %d, want 0: an answering translator paces the reporter", n)
	}
}

func TestAFullWindowForgetsTheOldestWhenTheTranslatorIsSilent(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 50*time.Millisecond))
	start := time.Now()
	sendN(t, r, WindowSize+10)
	if d := time.Since(start); d > time.Second {
		t.Errorf("sending to a silent translator took %v", d)
	}
	if n := r.Stats().Evicted.Load(); n != 10 {
		t.Errorf("Stats.Evicted = %d, want 10", n)
	}
}

func TestDatagramsAfterAForgottenOneAreRenumberedAndResent(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 100*time.Millisecond))
	sendN(t, r, 1)
	first, from := f.mustRead()
	s := first[1]
	f.reply(from, s, false)
	for r.Stats().Acks.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	// The translator goes quiet and misses datagram s+1; the reporter sends
	// on and forgets the oldest 5 of WindowSize+5.
	sendN(t, r, WindowSize+5)
	bodies := map[uint8][]byte{}
	for len(bodies) < WindowSize+5 { // timeout resends may come in between
		b, _ := f.mustRead()
		bodies[b[1]] = bytes.Clone(b[2:])
	}
	if n := r.Stats().Evicted.Load(); n != 5 {
		t.Fatalf("Stats.Evicted = %d, want 5", n)
	}
	// It NACKs s: s+1 is gone, but the 128 datagrams still held get
	// through under the numbers it expects, s+1 onwards, in order.
	f.reply(from, s, true)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < WindowSize; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d datagrams renumbered and resent", i)
		}
		b, _, ok := f.read(time.Second)
		if !ok {
			continue
		}
		want := bodies[s+6+uint8(i)]
		if b[1] == s+1+uint8(i) && bytes.Equal(b[2:], want) {
			i++
		}
	}
	if n := r.Stats().Unrecoverable.Load(); n != 1 {
		t.Errorf("Stats.Unrecoverable = %d, want 1", n)
	}
	f.reply(from, s+WindowSize, false)
}

func TestAStaleAnswerDoesNotRenumber(t *testing.T) {
	f := newFakeTranslator(t)
	r, _ := syncedReporter(t, f, time.Hour)
	r.mu.Lock()
	s := r.confirmed
	r.silent = true // as after a wait with no answer: the window fills without waiting
	r.mu.Unlock()
	sendN(t, r, WindowSize+5) // s+1 … s+5 are forgotten
	head := func() uint8 {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.win.head
	}
	if head() != s+6 {
		t.Fatalf("window starts at %d, want %d", head(), s+6)
	}
	now := time.Now()
	r.handleAck(dta.Ack{Seq: s - 1, NACK: true}, now) // older than the confirmed s: stale
	r.handleAck(dta.Ack{Seq: s + 200}, now)           // s+201 was never sent: foreign
	if head() != s+6 || r.Stats().Unrecoverable.Load() != 0 {
		t.Fatalf("a stale answer renumbered the window to %d", head())
	}
	r.handleAck(dta.Ack{Seq: s, NACK: true}, now) // the translator still waits for s+1
	if head() != s+1 || r.Stats().Unrecoverable.Load() != 1 {
		t.Errorf("after NACK(%d): window starts at %d, Unrecoverable %d; want %d and 1", s, head(), r.Stats().Unrecoverable.Load(), s+1)
	}
	r.handleAck(dta.Ack{Seq: s + WindowSize}, now) // all taken: Close need not wait
}

func TestSeqBefore(t *testing.T) {
	for _, tt := range []struct {
		a, b uint8
		want bool
	}{{1, 2, true}, {2, 1, false}, {5, 5, false}, {250, 3, true}, {3, 250, false}, {0, 127, true}, {0, 128, false}} {
		if got := seqBefore(tt.a, tt.b); got != tt.want {
			t.Errorf("seqBefore(%d, %d) = %v", tt.a, tt.b, got)
		}
	}
}
