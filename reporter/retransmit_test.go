package reporter

import (
	"bytes"
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

func TestNackResendsExactlyTheMissingDatagrams(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 2*time.Second))
	sendN(t, r, 6)

	// The translator receives the six datagrams but loses the third.
	var first [][]byte
	var from = r.LocalAddr()
	for range 6 {
		b, src := f.mustRead()
		from = src
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
	if st.Retransmits.Load() != 4 || st.Nacks.Load() != 3 || st.Acks.Load() != 3 {
		t.Errorf("Stats: %d retransmits, %d NACKs, %d ACKs; want 4, 3, 3", st.Retransmits.Load(), st.Nacks.Load(), st.Acks.Load())
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
	r := mustNew(t, retransmitConfig(f, 50*time.Millisecond))
	sendN(t, r, 2)
	a, from := f.mustRead()
	b, _ := f.mustRead() // the tail: "lost", never acknowledged
	start := time.Now()  // the ACK of a, the last progress, comes after this
	f.reply(from, a[1], false)
	again, _ := f.mustRead()
	early := false
	for bytes.Equal(again, a) { // a slow test may see a resent before its ACK landed
		again, _ = f.mustRead()
		early = true
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("resent % x, want the unacknowledged % x", again, b)
	}
	if d := time.Since(start); d < 45*time.Millisecond && !early {
		t.Errorf("resent after %v, before the 50 ms timeout", d)
	}
	f.reply(from, b[1], false)
	f.expectNothing(200 * time.Millisecond)
	if n := r.Stats().Retransmits.Load(); n < 1 {
		t.Errorf("Stats.Retransmits = %d, want at least 1", n)
	}
}

func TestTimeoutResendsGiveUp(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, retransmitConfig(f, 20*time.Millisecond))
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
