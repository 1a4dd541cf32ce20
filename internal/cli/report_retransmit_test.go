package cli

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

func TestUnacknowledgedErrorSaysHowManyOfHowMany(t *testing.T) {
	to := netip.MustParseAddrPort("127.0.0.1:60041")
	tests := []struct {
		name                   string
		unacked, sent, answers uint64
		want                   []string // in the message; none: no error
		notWant                string
	}{
		{"every datagram acknowledged is no error", 0, 5, 5, nil, ""},
		{"a silent translator gets the count and a hint", 1, 1, 0,
			[]string{"--retransmit: 1 of 1 datagrams sent not acknowledged by the translator at 127.0.0.1:60041", "no ACK or NACK came back"}, ""},
		{"a translator that answered gets the count and no hint", 2, 5, 7,
			[]string{"2 of 5 datagrams sent not acknowledged"}, "no ACK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := unacknowledgedError(to, tt.unacked, tt.sent, tt.answers)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || (tt.notWant != "" && strings.Contains(msg, tt.notWant)) {
				t.Errorf("%q: want one line without %q", msg, tt.notWant)
			}
			var ee *exitError
			if errors.As(err, &ee) {
				t.Errorf("exit code %d, want 1 (a failed operation, not a usage error)", ee.code)
			}
		})
	}
}

// ackingTranslator answers every datagram it receives on loopback as
// answer says (from the datagram's seq), until the test ends.
func ackingTranslator(t *testing.T, answer func(seq uint8) (dta.Ack, bool)) string {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { c.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n < 2 {
				continue
			}
			if a, ok := answer(buf[1]); ok {
				_, _ = c.WriteToUDPAddrPort(a.AppendTo(nil), from)
			}
		}
	}()
	return c.LocalAddr().String()
}

func TestReportRetransmitFailsWhenTheTranslatorDoesNotAcknowledge(t *testing.T) {
	// --retransmit binds the reporter to UDP port 40044, where a
	// translator's ACKs go.
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{Port: dta.AckPort})
	if err != nil {
		t.Skipf("UDP port %d is busy (%v): --retransmit cannot bind it here", dta.AckPort, err)
	}
	probe.Close()

	silent := func(uint8) (dta.Ack, bool) { return dta.Ack{}, false }
	acks := func(seq uint8) (dta.Ack, bool) { return dta.Ack{Seq: seq}, true }
	nacks := func(seq uint8) (dta.Ack, bool) { return dta.Ack{Seq: seq - 1, NACK: true}, true } // always missing the one before
	tests := []struct {
		name       string
		translator string // "up": a real dta up; otherwise a fake
		answer     func(uint8) (dta.Ack, bool)
		args       []string
		code       int
		stdout     []string
		stderr     string // "" : stderr must be empty
	}{
		{"a Key-Write a real translator acknowledges exits 0", "up", nil,
			[]string{"report", "keywrite", "--key", "1", "--value", "2", "--retransmit"},
			0, []string{"sent keywrite", "translator: 1 ACKs, 0 NACKs"}, ""},
		{"a Key-Write nobody acknowledges prints its summary and exits 1 saying how many", "", silent,
			[]string{"report", "keywrite", "--key", "1", "--value", "2", "--retransmit"},
			1, []string{"sent keywrite", "translator: 0 ACKs, 0 NACKs"}, "1 of 1 datagrams sent not acknowledged"},
		{"quiet, a Key-Write nobody acknowledges still exits 1 with the error", "", silent,
			[]string{"report", "keywrite", "--key", "1", "--value", "2", "--retransmit", "-q"},
			1, nil, "1 of 1 datagrams sent not acknowledged"},
		{"Key-Increments NACKed to the end exit 1", "", nacks,
			[]string{"report", "keyincrement", "--key", "1", "--count", "2", "--retransmit"},
			1, []string{"NACKs"}, "datagrams sent not acknowledged"},
		{"a generated stream the translator acknowledges exits 0", "", acks,
			[]string{"report", "gen", "counters", "--count", "64", "--rate", "0", "--retransmit", "-q"},
			0, []string{"sent 64 counters reports", "translator: "}, ""},
		{"a generated stream nobody acknowledges exits 1", "", silent,
			[]string{"report", "gen", "counters", "--count", "64", "--rate", "0", "--retransmit", "-q"},
			1, []string{"sent 64 counters reports", "translator: 0 ACKs"}, "4 of 4 datagrams sent not acknowledged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var to string
			if tt.translator == "up" {
				to, _ = startUp(t)
			} else {
				to = ackingTranslator(t, tt.answer)
			}
			code, out, errs := reportRun(t, nil, append(tt.args, "--to", to)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, tt.code, out, errs)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tt.stdout == nil && out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if tt.stderr == "" && errs != "" || !strings.Contains(errs, tt.stderr) || strings.Count(errs, "\n") > 1 {
				t.Errorf("stderr %q, want one line with %q", errs, tt.stderr)
			}
		})
	}
}
