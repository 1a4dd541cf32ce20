package reporter

import (
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

func TestUnacknowledgedCountsWhatTheTranslatorNeverConfirmed(t *testing.T) {
	// Answers are given relative to s, the seq of the datagram the
	// translator acknowledged first; datagram i (from 1) of those sent
	// after it has seq s+i.
	type answer struct {
		after uint8 // the answer's seq is s+after
		nack  bool
	}
	tests := []struct {
		name    string
		sent    int
		answers []answer
		want    uint64
	}{
		{"every datagram acknowledged leaves none", 3, []answer{{3, false}}, 0},
		{"datagrams still in the window are counted", 3, []answer{{1, false}}, 2},
		{"a NACK acknowledges the datagrams up to its seq", 3, []answer{{2, true}}, 1},
		{"a translator that stops answering leaves every datagram, forgotten ones included", WindowSize + 5, nil, WindowSize + 5},
		{"forgotten datagrams a later ACK covers are acknowledged", WindowSize + 5, []answer{{WindowSize + 5, false}}, 0},
		{"an ACK of the datagram just before the window covers the forgotten ones", WindowSize + 5, []answer{{5, false}}, WindowSize},
		{"forgotten datagrams the translator missed stay unacknowledged once the rest is resent", WindowSize + 5,
			[]answer{{0, true}, {WindowSize, false}}, 5},
		{"a gap after some forgotten datagrams loses only those after it", WindowSize + 5,
			[]answer{{2, true}, {2 + WindowSize, false}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTranslator(t)
			r, _ := syncedReporter(t, f, time.Hour) // no timeout resends
			if n := r.Unacknowledged(); n != 0 {
				t.Fatalf("after the first ACK: Unacknowledged = %d, want 0", n)
			}
			r.mu.Lock()
			s := r.confirmed
			r.silent = true // as after a wait with no answer: a full window forgets without waiting
			r.mu.Unlock()
			sendN(t, r, tt.sent)
			now := time.Now()
			for _, a := range tt.answers {
				r.handleAck(dta.Ack{Seq: s + a.after, NACK: a.nack}, now)
			}
			if got := r.Unacknowledged(); got != tt.want {
				t.Errorf("Unacknowledged = %d, want %d (Evicted %d, Unrecoverable %d)", got, tt.want,
					r.Stats().Evicted.Load(), r.Stats().Unrecoverable.Load())
			}
			r.handleAck(dta.Ack{Seq: s + uint8(tt.sent)}, now) // Close need not wait
		})
	}
}

func TestUnacknowledgedAfterCloseIsWhatCloseGaveUpOn(t *testing.T) {
	tests := []struct {
		name       string
		retransmit bool
		want       uint64
	}{
		{"with Retransmit, every datagram a silent translator never acknowledged", true, 3},
		{"without Retransmit, nothing is acknowledged and nothing counted", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTranslator(t)
			cfg := retransmitConfig(f, 10*time.Millisecond)
			cfg.Retransmit = tt.retransmit
			r := mustNew(t, cfg)
			sendN(t, r, 3)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if got := r.Unacknowledged(); got != tt.want {
				t.Errorf("Unacknowledged after Close = %d, want %d", got, tt.want)
			}
		})
	}
}
