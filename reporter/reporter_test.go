package reporter

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// sampleReports covers every format, compat and extended.
func sampleReports(t *testing.T) []dta.Report {
	five := mustKey(t, "tcp,10.0.0.1:5000,10.0.1.2:443")
	v20 := []byte("0123456789abcdefghij")
	return []dta.Report{
		KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 42}, 2, 0),
		KeyWrite(five, v20, 4, 7),
		KeyIncrement(mustKey(t, "4294967295"), 1500, 1, 0),
		KeyIncrement(five, 1<<40, 3, 2),
		Append(3, []byte{1, 2, 3, 4}, 0),
		Append(9, make([]byte, 18), 5),
		Postcard(mustKey(t, "77"), 2, 0, []byte{0, 1, 0, 3}, 0),
		Postcard(five, 5, 5, []byte{0, 3, 0, 1}, 0),
	}
}

func TestSingleSendsDecodeToTheSameReports(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr()})
	want := sampleReports(t)
	for i := range want {
		if err := r.Send(&want[i], false); err != nil {
			t.Fatalf("Send(%d): %v", i, err)
		}
	}
	var prevSeq uint8
	for i := range want {
		b, _ := f.mustRead()
		h, got := decodeAll(t, b, false)
		if h.Opcode != want[i].Opcode || h.Flags != 0 {
			t.Errorf("datagram %d: header %+v, want opcode %#x and no flags", i, h, want[i].Opcode)
		}
		if i > 0 && h.Seq != prevSeq+1 {
			t.Errorf("datagram %d: seq %d after %d", i, h.Seq, prevSeq)
		}
		prevSeq = h.Seq
		if len(got) != 1 || !sameReport(&got[0], &want[i]) {
			t.Errorf("datagram %d decodes to %+v, want %+v", i, got, want[i])
		}
	}
	st := r.Stats()
	if st.Reports.Load() != uint64(len(want)) || st.Datagrams.Load() != uint64(len(want)) {
		t.Errorf("Stats: %d reports in %d datagrams, want %d in %d", st.Reports.Load(), st.Datagrams.Load(), len(want), len(want))
	}
}

func TestBatchedSendsDecodeToTheSameReportsInOrder(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Batch: 16, FlushInterval: time.Hour})
	var want []dta.Report
	for range 13 {
		want = append(want, sampleReports(t)...) // 104 reports: 6 full batches and one of 8
	}
	for i := range want {
		if err := r.Send(&want[i], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []dta.Report
	for len(got) < len(want) {
		b, _ := f.mustRead()
		if len(b) > MTU {
			t.Errorf("datagram of %d bytes exceeds the MTU", len(b))
		}
		h, rs := decodeAll(t, b, false)
		if h.Opcode != dta.OpBatch || len(rs) > 16 {
			t.Errorf("datagram: opcode %#x with %d reports, want a batch of at most 16", h.Opcode, len(rs))
		}
		got = append(got, rs...)
	}
	for i := range want {
		if !sameReport(&got[i], &want[i]) {
			t.Fatalf("report %d decodes to %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := r.Stats().Datagrams.Load(); n != 7 {
		t.Errorf("Stats.Datagrams = %d, want 7", n)
	}
}

func TestBatchesNeverExceedTheMTU(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Batch: dta.MaxBatch, FlushInterval: time.Hour})
	big := KeyWrite(mustKey(t, "0x0102"), make([]byte, 600), 2, 1) // 3+6+2+600 bytes per record
	for range 5 {
		if err := r.Send(&big, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for total < 5 {
		b, _ := f.mustRead()
		if len(b) > MTU {
			t.Fatalf("datagram of %d bytes exceeds the MTU %d", len(b), MTU)
		}
		_, rs := decodeAll(t, b, false)
		total += len(rs)
	}
}

func TestALoneReportInABatchGoesOutInTheSingleFormat(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Batch: 8, FlushInterval: time.Hour})
	rep := KeyWrite(mustKey(t, "5"), []byte{1, 2, 3, 4}, 2, 0)
	if err := r.Send(&rep, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ := f.mustRead()
	h, got := decodeAll(t, b, false)
	if h.Opcode != dta.OpKeyWrite || len(b) != 12 || len(got) != 1 || !sameReport(&got[0], &rep) {
		t.Errorf("got % x (%+v), want a 12-byte compat Key-Write datagram", b, got)
	}
}

func TestAPartialBatchIsSentAfterTheFlushInterval(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Batch: 64, FlushInterval: 20 * time.Millisecond})
	want := sampleReports(t)[:3]
	start := time.Now()
	for i := range want {
		if err := r.Send(&want[i], false); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := f.mustRead()
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Errorf("partial batch sent after %v, before the 20 ms flush interval", d)
	}
	if _, got := decodeAll(t, b, false); len(got) != 3 {
		t.Errorf("partial batch holds %d reports, want 3", len(got))
	}
}

func TestAnImmediateReportGoesAloneWithTheFlag(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Batch: 64, FlushInterval: time.Hour})
	rs := sampleReports(t)
	for i := range 2 {
		if err := r.Send(&rs[i], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Send(&rs[2], true); err != nil {
		t.Fatal(err)
	}
	b, _ := f.mustRead()
	if h, got := decodeAll(t, b, false); h.Opcode != dta.OpBatch || h.Immediate() || len(got) != 2 {
		t.Errorf("first datagram: %+v with %d reports, want the pending batch of 2 without the immediate flag", h, len(got))
	}
	b, _ = f.mustRead()
	if h, got := decodeAll(t, b, false); h.Opcode != rs[2].Opcode || !h.Immediate() || len(got) != 1 || !sameReport(&got[0], &rs[2]) {
		t.Errorf("second datagram: %+v %+v, want the immediate report alone, flagged", h, got)
	}
}

func TestLegacyHeader(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Legacy: true})
	rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 42}, 2, 0)
	if err := r.Send(&rep, true); err != nil {
		t.Fatal(err)
	}
	b, _ := f.mustRead()
	want := []byte{0x01, 0x80, 2, 0, 0, 0, 1, 0, 0, 0, 42}
	if string(b) != string(want) {
		t.Errorf("legacy datagram % x, want % x", b, want)
	}
}

func TestRateLimitIsHonoured(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Rate: 5000, Batch: 10, FlushInterval: time.Hour})
	rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 42}, 2, 0)
	start := time.Now()
	for range 1000 {
		if err := r.Send(&rep, false); err != nil {
			t.Fatal(err)
		}
	}
	// 1000 reports at 5000/s: 200 ms, less a burst of 10.
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("1000 reports at 5000/s took %v, want about 200 ms", d)
	}
}

func TestCloseEndsASendWaitingForItsRate(t *testing.T) {
	f := newFakeTranslator(t)
	r := mustNew(t, Config{To: f.addr(), Rate: MinRate}) // one report per 1000 s
	rep := KeyWrite(mustKey(t, "1"), []byte{0, 0, 0, 42}, 2, 0)
	if err := r.Send(&rep, false); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Send(&rep, false) }()
	time.Sleep(50 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("the waiting Send returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a Send waiting 1000 s for its token")
	}
}

func TestCloseFlushesThePendingBatch(t *testing.T) {
	f := newFakeTranslator(t)
	r, err := New(Config{To: f.addr(), Batch: 64, FlushInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := sampleReports(t)
	for i := range rs {
		if err := r.Send(&rs[i], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := f.mustRead()
	if _, got := decodeAll(t, b, false); len(got) != len(rs) {
		t.Errorf("Close sent %d reports, want %d", len(got), len(rs))
	}
	if err := r.Send(&rs[0], false); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close = %v, want the first's nil", err)
	}
}

func TestSendRejectsReportsThatWouldNotDecode(t *testing.T) {
	f := newFakeTranslator(t)
	for _, batch := range []int{1, 8} {
		r := mustNew(t, Config{To: f.addr(), Batch: batch})
		bad := []dta.Report{
			KeyWrite(mustKey(t, "1"), []byte{1, 2, 3, 4}, 0, 0),    // N = 0
			KeyWrite(mustKey(t, "1"), []byte{1, 2, 3, 4}, 9, 0),    // N > MaxRedundancy
			Postcard(mustKey(t, "1"), 6, 5, []byte{1, 2, 3, 4}, 0), // hop beyond the path
			Append(1, nil, 0), // empty entry
		}
		for i := range bad {
			if err := r.Send(&bad[i], false); !errors.Is(err, dta.ErrEncode) {
				t.Errorf("batch %d: Send(bad %d) = %v, want dta.ErrEncode", batch, i, err)
			}
		}
	}
}

func TestSendDoesNotAllocate(t *testing.T) {
	f := newFakeTranslator(t)
	// The sends outpace the drain: a large buffer drops fewer.
	_ = f.conn.SetReadBuffer(8 << 20)
	go func() { // drain, and acknowledge retransmittable datagrams, without allocating
		buf := make([]byte, 2048)
		var ack [dta.AckLen]byte
		for {
			n, from, err := f.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n >= dta.HeaderLen && dta.Flags(buf[2])&dta.FlagRetransmit != 0 {
				ack[0] = buf[1]
				_, _ = f.conn.WriteToUDPAddrPort(ack[:], from)
			}
		}
	}()
	for _, cfg := range []Config{
		{To: f.addr()},
		{To: f.addr(), Batch: 32, FlushInterval: time.Hour},
		// ACKed; a datagram the loaded kernel drops is resent after 100 ms
		// (with an hour, a full window waited an hour for room).
		{To: f.addr(), Local: "127.0.0.1:0", Retransmit: true, RetransmitTimeout: 100 * time.Millisecond},
		{To: f.addr(), Rate: 50000, Batch: 8}, // sleeps in the limiter
	} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			r := mustNew(t, cfg)
			rep := KeyWrite(mustKey(t, "tcp,10.0.0.1:5000,10.0.1.2:443"), make([]byte, 20), 2, 1)
			if n := testing.AllocsPerRun(1000, func() {
				if err := r.Send(&rep, false); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("Send allocates %v times per report", n)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" = valid
	}{
		{"the zero config is valid", Config{}, ""},
		{"the default config is valid", DefaultConfig(), ""},
		{"a host name is accepted", Config{To: "collector.example:40040"}, ""},
		{"To needs a port", Config{To: "127.0.0.1"}, "Config.To"},
		{"To needs a host", Config{To: ":40040"}, "host is missing"},
		{"To cannot be port 0", Config{To: "127.0.0.1:0"}, "port 0"},
		{"Local may be port 0", Config{Local: "127.0.0.1:0"}, ""},
		{"Local needs a valid port", Config{Local: ":99999"}, "Config.Local"},
		{"Batch above MaxBatch", Config{Batch: 256}, "Config.Batch"},
		{"negative Batch", Config{Batch: -1}, "Config.Batch"},
		{"negative FlushInterval", Config{FlushInterval: -1}, "Config.FlushInterval"},
		{"negative Rate", Config{Rate: -1}, "Config.Rate"},
		{"a NaN Rate", Config{Rate: math.NaN()}, "Config.Rate"},
		{"a Rate too small to schedule", Config{Rate: 1e-300}, "Config.Rate"},
		{"an infinite Rate", Config{Rate: math.Inf(1)}, "Config.Rate"},
		{"negative RetransmitTimeout", Config{RetransmitTimeout: -1}, "Config.RetransmitTimeout"},
		{"Legacy with Retransmit", Config{Legacy: true, Retransmit: true}, "excludes Retransmit"},
		{"Legacy with batches", Config{Legacy: true, Batch: 2}, "excludes Batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestHelpersChooseTheFormat(t *testing.T) {
	compat, hexKey := mustKey(t, "7"), mustKey(t, "0x00000007")
	v4, v8 := []byte{1, 2, 3, 4}, make([]byte, 8)
	tests := []struct {
		name string
		r    dta.Report
		want dta.Opcode
	}{
		{"Key-Write with a 32-bit key and 4-byte value is compat", KeyWrite(compat, v4, 2, 0), dta.OpKeyWrite},
		{"Key-Write to a store is extended", KeyWrite(compat, v4, 2, 3), dta.OpKeyWriteExt},
		{"Key-Write with a hex key is extended", KeyWrite(hexKey, v4, 2, 0), dta.OpKeyWriteExt},
		{"Key-Write with an 8-byte value is extended", KeyWrite(compat, v8, 2, 0), dta.OpKeyWriteExt},
		{"Key-Increment with a 32-bit key is compat", KeyIncrement(compat, 1, 2, 0), dta.OpKeyIncrement},
		{"Key-Increment to a store is extended", KeyIncrement(compat, 1, 2, 1), dta.OpKeyIncrementExt},
		{"Key-Increment with a hex key is extended", KeyIncrement(hexKey, 1, 2, 0), dta.OpKeyIncrementExt},
		{"Append of 4 bytes is compat", Append(1, v4, 0), dta.OpAppend},
		{"Append of 8 bytes is extended", Append(1, v8, 0), dta.OpAppendExt},
		{"Append to a store is extended", Append(1, v4, 2), dta.OpAppendExt},
		{"Postcard without path length is compat", Postcard(compat, 1, 0, v4, 0), dta.OpPostcard},
		{"Postcard with a path length is extended", Postcard(compat, 1, 5, v4, 0), dta.OpPostcardExt},
		{"Postcard with a hex key is extended", Postcard(hexKey, 1, 0, v4, 0), dta.OpPostcardExt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.Opcode != tt.want {
				t.Errorf("opcode %#x, want %#x", tt.r.Opcode, tt.want)
			}
			if _, err := tt.r.AppendTo(nil); err != nil {
				t.Errorf("does not encode: %v", err)
			}
		})
	}
}

func TestCloseStopsEveryGoroutine(t *testing.T) {
	f := newFakeTranslator(t)
	r, err := New(Config{To: f.addr(), Local: "127.0.0.1:0", Batch: 8, Retransmit: true, RetransmitTimeout: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Append(1, []byte{1, 2, 3, 4}, 0)
	if err := r.Send(&rep, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits for both goroutines to finish their work; one may still be
	// returning (after its deferred Done) for a moment, so look for a while.
	buf := make([]byte, 1<<20)
	var stack string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		stack = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stack, "(*Reporter).flusher") && !strings.Contains(stack, "(*Reporter).readAcks") || time.Now().After(deadline) {
			break
		}
	}
	for _, fn := range []string{"(*Reporter).flusher", "(*Reporter).readAcks"} {
		if strings.Contains(stack, fn) {
			t.Errorf("%s still runs 2 s after Close:\n%s", fn, stack)
		}
	}
}
