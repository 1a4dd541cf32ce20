package reporter

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// fakeTranslator is a real UDP socket on loopback standing in for the
// translator: tests read what the reporter sent and decode it with wire/dta.
type fakeTranslator struct {
	t    *testing.T
	conn *net.UDPConn
}

func newFakeTranslator(t *testing.T) *fakeTranslator {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fakeTranslator{t: t, conn: c}
}

func (f *fakeTranslator) addr() string { return f.conn.LocalAddr().String() }

// read returns the next datagram, or ok=false after timeout.
func (f *fakeTranslator) read(timeout time.Duration) (b []byte, from netip.AddrPort, ok bool) {
	f.t.Helper()
	buf := make([]byte, 65536)
	_ = f.conn.SetReadDeadline(time.Now().Add(timeout))
	n, from, err := f.conn.ReadFromUDPAddrPort(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, from, false
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return buf[:n], from, true
}

// mustRead returns the next datagram or fails the test.
func (f *fakeTranslator) mustRead() ([]byte, netip.AddrPort) {
	f.t.Helper()
	b, from, ok := f.read(5 * time.Second)
	if !ok {
		f.t.Fatal("no datagram arrived within 5 s")
	}
	return b, from
}

// expectNothing fails if a datagram arrives within d.
func (f *fakeTranslator) expectNothing(d time.Duration) {
	f.t.Helper()
	if b, _, ok := f.read(d); ok {
		f.t.Fatalf("unexpected datagram % x", b)
	}
}

// reply sends an ACK or NACK to the reporter.
func (f *fakeTranslator) reply(to netip.AddrPort, seq uint8, nack bool) {
	f.t.Helper()
	if _, err := f.conn.WriteToUDPAddrPort(dta.Ack{Seq: seq, NACK: nack}.AppendTo(nil), to); err != nil {
		f.t.Fatal(err)
	}
}

// decodeAll decodes every report of datagram b, copying them out of b.
func decodeAll(t *testing.T, b []byte, legacy bool) (dta.Header, []dta.Report) {
	t.Helper()
	var dg dta.Datagram
	if err := (dta.Decoder{Legacy: legacy}).Decode(b, &dg); err != nil {
		t.Fatalf("decode % x: %v", b, err)
	}
	var out []dta.Report
	for {
		var r dta.Report
		err := dg.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decode report of % x: %v", b, err)
		}
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		out = append(out, r)
	}
	return dg.Header, out
}

// sameReport reports whether a and b are equal field by field (nil and
// empty slices are equal).
func sameReport(a, b *dta.Report) bool {
	return a.Opcode == b.Opcode && a.Store == b.Store && a.Redundancy == b.Redundancy &&
		bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) && a.Delta == b.Delta &&
		a.List == b.List && a.Hop == b.Hop && a.PathLen == b.PathLen
}

func mustNew(t *testing.T, cfg Config) *Reporter {
	t.Helper()
	r, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustKey(t *testing.T, s string) dta.Key {
	t.Helper()
	k, err := dta.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
