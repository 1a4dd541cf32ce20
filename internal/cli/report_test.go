package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// reportSink is a UDP socket on loopback standing in for a translator.
type reportSink struct {
	t    *testing.T
	conn *net.UDPConn
}

func newReportSink(t *testing.T) *reportSink {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &reportSink{t: t, conn: c}
}

func (s *reportSink) addr() string { return s.conn.LocalAddr().String() }

// next returns the next datagram, failing the test after 5 s.
func (s *reportSink) next() []byte {
	s.t.Helper()
	buf := make([]byte, 65536)
	_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := s.conn.Read(buf)
	if err != nil {
		s.t.Fatalf("no datagram: %v", err)
	}
	return buf[:n]
}

// none fails if a datagram arrives within d.
func (s *reportSink) none(d time.Duration) {
	s.t.Helper()
	buf := make([]byte, 65536)
	_ = s.conn.SetReadDeadline(time.Now().Add(d))
	if n, err := s.conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		s.t.Fatalf("unexpected datagram % x (%v)", buf[:n], err)
	}
}

// reportRun runs the dta command line and returns its exit code, stdout
// and stderr.
func reportRun(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// reportDecode decodes every report of a datagram, copying them out of b.
func reportDecode(t *testing.T, b []byte) (dta.Header, []dta.Report) {
	t.Helper()
	var dg dta.Datagram
	if err := (dta.Decoder{}).Decode(b, &dg); err != nil {
		t.Fatalf("decode % x: %v", b, err)
	}
	var rs []dta.Report
	for {
		var r dta.Report
		err := dg.Next(&r)
		if err == io.EOF {
			return dg.Header, rs
		}
		if err != nil {
			t.Fatalf("decode % x: %v", b, err)
		}
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		rs = append(rs, r)
	}
}

func reportUnhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReportCommandsSendTheExpectedBytes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // hex of each datagram
		line string   // expected in stdout
	}{
		{"a compat Key-Write", []string{"keywrite", "--key", "1", "--value", "42"},
			[]string{"01 01 00  02 00000001 0000002a"}, "sent keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01]"},
		{"an extended Key-Write with a 5-tuple key, hex value and store", []string{"keywrite", "--key", "tcp,10.0.0.1:5000,10.0.1.2:443", "--value", "0x0102030405", "--store", "5", "--redundancy", "3"},
			[]string{"11 01 00  0005 03 0d 0005  0a000001 0a000102 1388 01bb 06  0102030405"}, "key=tcp,10.0.0.1:5000,10.0.1.2:443"},
		{"Key-Increment, counted", []string{"keyincrement", "--key", "9", "--delta", "1500", "--count", "3"},
			[]string{"03 01 00  02 00000009 00000000000005dc", "03 02 00  02 00000009 00000000000005dc", "03 03 00  02 00000009 00000000000005dc"}, "delta=1500"},
		{"an immediate Append", []string{"append", "--list", "3", "--value", "0xdeadbeef", "--immediate"},
			[]string{"02 01 80  00000003 deadbeef"}, "append list=3"},
		{"an Append of 18 bytes into a store", []string{"append", "--list", "1", "--value", "0x0a0000010a000002138801bb06000100010a", "--store", "6"},
			[]string{"12 01 00  0006 00000001 0012 0a0000010a000002138801bb06000100010a"}, "[extended 0x12]"},
		{"a compat postcard", []string{"postcard", "--key", "7", "--hop", "2", "--value", "7"},
			[]string{"04 01 00  00000007 02 00000007"}, "hop=2 path_len=0"},
		{"a postcard with a path length", []string{"postcard", "--key", "7", "--hop", "2", "--value", "7", "--path-len", "5"},
			[]string{"14 01 00  0000 02 05 04 04 00000007 00000007"}, "hop=2 path_len=5"},
		{"a whole path with --hops", []string{"postcard", "--key", "7", "--hops", "101,102,0x0067"},
			[]string{"14 01 00  0000 01 03 04 04 00000007 00000065", "14 02 00  0000 02 03 04 04 00000007 00000066", "14 03 00  0000 03 03 04 02 00000007 0067"}, "hop=3 path_len=3"},
		{"the legacy header", []string{"keywrite", "--key", "1", "--value", "42", "--legacy", "--immediate"},
			[]string{"01 80  02 00000001 0000002a"}, "(11 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReportSink(t)
			args := append([]string{"report"}, tt.args...)
			args = append(args, "--to", s.addr())
			code, out, errs := reportRun(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for i, w := range tt.want {
				if got := s.next(); !bytes.Equal(got, reportUnhex(t, w)) {
					t.Errorf("datagram %d: % x, want % x", i+1, got, reportUnhex(t, w))
				}
			}
			s.none(50 * time.Millisecond)
			if lines := strings.Count(out, "\n"); lines != len(tt.want) {
				t.Errorf("%d lines printed, want one per report:\n%s", lines, out)
			}
			if !strings.Contains(out, tt.line) || !strings.Contains(out, "to "+s.addr()) {
				t.Errorf("output lacks %q and the address:\n%s", tt.line, out)
			}
		})
	}
}

func TestReportQuietPrintsNothing(t *testing.T) {
	s := newReportSink(t)
	code, out, errs := reportRun(t, nil, "report", "keyincrement", "--key", "1", "-q", "--to", s.addr())
	if code != 0 || out != "" || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and nothing printed", code, out, errs)
	}
	s.next()
}

func TestReportUsageErrorsExitWith2(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "give a subcommand"},
		{[]string{"report", "keywirte"}, `unknown subcommand "keywirte"`},
		{[]string{"report", "keywrite", "--value", "1"}, "--key: required"},
		{[]string{"report", "keywrite", "--key", "1"}, "--value: required"},
		{[]string{"report", "keywrite", "--key", "x", "--value", "1"}, "--key"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "-1"}, "--value"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "4294967296"}, "--value"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "0xzz"}, "bad hex"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "--redundancy", "9"}, "--redundancy"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "--count", "0"}, "--count"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "--vlaue", "2"}, "unknown flag: --vlaue"},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "extra"}, `unexpected argument "extra"`},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "--to", "nowhere"}, "--to: \"nowhere\""},
		{[]string{"report", "keywrite", "--key", "1", "--value", "1", "--legacy", "--retransmit"}, "exclude each other"},
		{[]string{"report", "keyincrement", "--key", "1", "--delta", "-5"}, "--delta"},
		{[]string{"report", "append", "--list", "1"}, "--value: required"},
		{[]string{"report", "postcard", "--key", "1", "--value", "1"}, "--hop: required"},
		{[]string{"report", "postcard", "--key", "1", "--hop", "9", "--value", "1"}, "--hop: 9"},
		{[]string{"report", "postcard", "--key", "1", "--hop", "3", "--path-len", "2", "--value", "1"}, "--hop: 3"},
		{[]string{"report", "postcard", "--key", "1", "--hop", "1", "--value", "0x010203040506070809"}, "want 1 to 8"},
		{[]string{"report", "postcard", "--key", "1", "--hops", "1,2", "--hop", "1"}, "without --hop"},
		{[]string{"report", "postcard", "--key", "1", "--hops", "1,2,3", "--path-len", "2"}, "shorter"},
		{[]string{"report", "postcard", "--key", "1", "--hops", "1,2,3,4,5,6,7,8,9"}, "at most 8"},
		{[]string{"report", "gen"}, "give one stream"},
		{[]string{"report", "gen", "paths"}, `unknown stream "paths"`},
		{[]string{"report", "gen", "counters", "--batch", "256"}, "--batch"},
		{[]string{"report", "gen", "counters", "--rate", "-1"}, "--rate"},
		{[]string{"report", "gen", "events", "--entry-size", "8"}, "--entry-size: 8"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errs := reportRun(t, nil, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, tt.want)
			}
		})
	}
}

func TestReportAndDecodeCommandsHaveHelpWithExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newReportCmd())
	walk(newDecodeCmd())
	for _, args := range [][]string{{"report", "--help"}, {"report", "postcard", "--help"}, {"report", "gen", "--help"}, {"decode", "--help"}} {
		code, out, _ := reportRun(t, nil, args...)
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%v: exit %d, help without examples:\n%s", args, code, out)
		}
	}
}

func TestReportGenSendsTheGeneratorsStream(t *testing.T) {
	s := newReportSink(t)
	code, out, errs := reportRun(t, nil, "report", "gen", "int-path", "--to", s.addr(), "--count", "100", "--batch", "8", "--rate", "0", "--seed", "9", "--store", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	g, err := reporter.NewGenerator(reporter.GenConfig{Kind: reporter.INTPath, Seed: 9, Store: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]dta.Report, 100)
	g.Fill(want)
	var got []dta.Report
	for len(got) < len(want) {
		h, rs := reportDecode(t, s.next())
		if h.Opcode != dta.OpBatch || len(rs) != 8 && len(got)+len(rs) != 100 {
			t.Fatalf("datagram %+v with %d reports, want batches of 8", h, len(rs))
		}
		got = append(got, rs...)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Opcode != g.Opcode || w.Store != g.Store || w.Redundancy != g.Redundancy || !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) {
			t.Fatalf("report %d: %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(out, "sent 100 int-path reports (keywrite) in 13 datagrams") {
		t.Errorf("summary: %q", out)
	}
}

func TestReportGenHonoursTheRateAndShowsProgress(t *testing.T) {
	s := newReportSink(t)
	go func() { // drain
		buf := make([]byte, 2048)
		for {
			if _, err := s.conn.Read(buf); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	code, out, errs := reportRun(t, nil, "report", "gen", "counters", "--to", s.addr(), "--count", "1300", "--rate", "1000", "--batch", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("1300 reports at 1000/s took %v", d)
	}
	if !strings.Contains(errs, "gen counters: ") || !strings.Contains(errs, "reports/s") {
		t.Errorf("no progress line on stderr: %q", errs)
	}
	if !strings.Contains(out, "sent 1300 counters reports (keyincrement)") {
		t.Errorf("summary: %q", out)
	}
}

func TestReportGenStopsWhenCancelled(t *testing.T) {
	s := newReportSink(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"report", "gen", "postcards", "--to", s.addr(), "--count", "0", "--rate", "1000", "-q"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "sent ") || errb.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, a summary and no progress", code, out.String(), errb.String())
	}
}
