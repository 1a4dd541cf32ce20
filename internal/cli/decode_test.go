package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/roce"
)

// A tiny capture writer, enough to produce decode's input: classic pcap in
// either byte order and timestamp precision, and pcapng.

// capOrder is binary.LittleEndian or binary.BigEndian.
type capOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

type capWriter struct {
	buf  bytes.Buffer
	bo   capOrder
	nano bool
	ng   bool
}

func newCapPcap(bo capOrder, nano bool, link uint32) *capWriter {
	c := &capWriter{bo: bo, nano: nano}
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	h := bo.AppendUint32(nil, magic)
	h = bo.AppendUint16(h, 2)
	h = bo.AppendUint16(h, 4)
	h = bo.AppendUint32(h, 0)
	h = bo.AppendUint32(h, 0)
	h = bo.AppendUint32(h, 65535)
	h = bo.AppendUint32(h, link)
	c.buf.Write(h)
	return c
}

// newCapPcapng starts a pcapng section with one interface of the given
// link type and nanosecond timestamps.
func newCapPcapng(bo capOrder, link uint16) *capWriter {
	c := &capWriter{bo: bo, ng: true}
	shb := bo.AppendUint32(nil, 0x1a2b3c4d)
	shb = bo.AppendUint16(shb, 1)
	shb = bo.AppendUint16(shb, 0)
	shb = bo.AppendUint64(shb, ^uint64(0)) // section length unknown
	c.block(0x0a0d0d0a, shb)
	idb := bo.AppendUint16(nil, link)
	idb = bo.AppendUint16(idb, 0)
	idb = bo.AppendUint32(idb, 0)
	idb = bo.AppendUint16(idb, 9) // if_tsresol = 10^-9
	idb = bo.AppendUint16(idb, 1)
	idb = append(idb, 9, 0, 0, 0)
	idb = bo.AppendUint32(idb, 0) // opt_endofopt
	c.block(1, idb)
	return c
}

func (c *capWriter) block(typ uint32, body []byte) {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	total := uint32(12 + len(body))
	b := c.bo.AppendUint32(nil, typ)
	b = c.bo.AppendUint32(b, total)
	b = append(b, body...)
	b = c.bo.AppendUint32(b, total)
	c.buf.Write(b)
}

func (c *capWriter) add(ts time.Time, frame []byte) {
	if c.ng {
		units := uint64(ts.UnixNano())
		b := c.bo.AppendUint32(nil, 0)
		b = c.bo.AppendUint32(b, uint32(units>>32))
		b = c.bo.AppendUint32(b, uint32(units))
		b = c.bo.AppendUint32(b, uint32(len(frame)))
		b = c.bo.AppendUint32(b, uint32(len(frame)))
		c.block(6, append(b, frame...))
		return
	}
	frac := uint32(ts.Nanosecond() / 1000)
	if c.nano {
		frac = uint32(ts.Nanosecond())
	}
	b := c.bo.AppendUint32(nil, uint32(ts.Unix()))
	b = c.bo.AppendUint32(b, frac)
	b = c.bo.AppendUint32(b, uint32(len(frame)))
	b = c.bo.AppendUint32(b, uint32(len(frame)))
	c.buf.Write(append(b, frame...))
}

func (c *capWriter) file(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "capture.pcap")
	if err := os.WriteFile(p, c.buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// capIPPacket builds an IPv4 or IPv6 packet carrying proto with payload
// (the UDP header included by the caller); fragOff is in 8-byte units.
func capIPPacket(src, dst netip.Addr, proto byte, payload []byte, fragOff uint16) []byte {
	if src.Is4() {
		h := []byte{0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0}
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
		binary.BigEndian.PutUint16(h[6:], fragOff)
		s, d := src.As4(), dst.As4()
		h = append(append(h, s[:]...), d[:]...)
		return append(h, payload...)
	}
	h := []byte{0x60, 0, 0, 0, 0, 0, proto, 64}
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	s, d := src.As16(), dst.As16()
	h = append(append(h, s[:]...), d[:]...)
	return append(h, payload...)
}

func capUDP(src, dst netip.AddrPort, payload []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = append(b, 0, 0)
	return append(b, payload...)
}

// ether wraps an IP packet in Ethernet II, with a VLAN tag if vlan.
func capEther(ip []byte, vlan bool) []byte {
	b := make([]byte, 12)
	if vlan {
		b = append(b, 0x81, 0x00, 0x00, 0x07)
	}
	et := []byte{0x08, 0x00}
	if ip[0]>>4 == 6 {
		et = []byte{0x86, 0xdd}
	}
	b = append(append(b, et...), ip...)
	for len(b) < 60 {
		b = append(b, 0) // padding, which the IP length must cut off
	}
	return b
}

// sll wraps an IP packet in a Linux cooked (v1) header.
func capSLL(ip []byte) []byte {
	b := make([]byte, 14, 16+len(ip))
	b = append(b, 0x08, 0x00)
	return append(b, ip...)
}

func capUDPFrame(src, dst string, payload []byte, vlan bool) []byte {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	return capEther(capIPPacket(s.Addr(), d.Addr(), 17, capUDP(s, d, payload), 0), vlan)
}

// decodeSentDatagrams sends reps through a reporter (batch reports per datagram)
// and returns the datagrams a sink received.
func decodeSentDatagrams(t *testing.T, batch int, reps []dta.Report) [][]byte {
	t.Helper()
	s := newReportSink(t)
	r, err := reporter.New(reporter.Config{To: s.addr(), Batch: batch, FlushInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reps {
		if err := r.Send(&reps[i], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for n := 0; n < len(reps); {
		b := s.next()
		_, rs := reportDecode(t, b)
		n += len(rs)
		out = append(out, b)
	}
	return out
}

func decodeTestReports(t *testing.T) []dta.Report {
	key := func(s string) dta.Key {
		k, err := dta.ParseKey(s)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	return []dta.Report{
		reporter.KeyWrite(key("1"), []byte{0, 0, 0, 42}, 2, 0),
		reporter.KeyIncrement(key("udp,[2001:db8::1]:53,[2001:db8::2]:5353"), 1<<33, 4, 9),
		reporter.Append(7, []byte("eighteen-byte-evt!"), 4),
		reporter.Postcard(key("0x0102"), 2, 5, []byte{0, 1, 0, 2}, 3),
	}
}

func decodeJSONLines(t *testing.T, out string) []decodedDatagram {
	t.Helper()
	var ds []decodedDatagram
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d decodedDatagram
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds
}

// decodeCheck compares decoded JSON reports with what was sent.
func decodeCheck(t *testing.T, got []decodedReport, want []dta.Report) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d reports decoded, want %d", len(got), len(want))
	}
	for i := range want {
		w := decodeReport(&want[i])
		if got[i] != w {
			t.Errorf("report %d: %+v, want %+v", i+1, got[i], w)
		}
	}
}

func TestDecodeReadsCapturesOfEveryFormat(t *testing.T) {
	reps := decodeTestReports(t)
	single := decodeSentDatagrams(t, 1, reps[:1])[0]
	batch := decodeSentDatagrams(t, 8, reps)[0]
	ts := time.Date(2023, 11, 14, 22, 13, 20, 123456789, time.UTC)
	const rep, tr = "10.0.0.1:40044", "10.0.0.2:40040"

	frames := func(wrap func(src, dst string, payload []byte) []byte) [][]byte {
		return [][]byte{
			wrap(rep, tr, single),                                     // 1: a report
			wrap("10.0.0.1:5353", "10.0.0.9:53", single),              // 2: not DTA
			wrap("[2001:db8::1]:41000", "[2001:db8::2]:40040", batch), // 3: a batch over IPv6
			wrap(tr, rep, []byte{5, 0x80}),                            // 4: a NACK to 40044
			wrap(tr, "10.0.0.1:41000", []byte{6, 0}),                  // 5: an ACK from the translator's port
		}
	}
	eth := func(src, dst string, p []byte) []byte { return capUDPFrame(src, dst, p, strings.Contains(src, "[")) }
	raw := func(src, dst string, p []byte) []byte {
		s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
		return capIPPacket(s.Addr(), d.Addr(), 17, capUDP(s, d, p), 0)
	}
	cooked := func(src, dst string, p []byte) []byte {
		f := raw(src, dst, p)
		if f[0]>>4 == 6 {
			b := make([]byte, 14, 16+len(f))
			return append(append(b, 0x86, 0xdd), f...)
		}
		return capSLL(f)
	}
	captures := []struct {
		name  string
		c     *capWriter
		frame func(src, dst string, p []byte) []byte
		time  string
	}{
		{"pcap, little-endian, microseconds, Ethernet and VLAN", newCapPcap(binary.LittleEndian, false, linkEthernet), eth, "2023-11-14T22:13:20.123456Z"},
		{"pcap, big-endian, nanoseconds, raw IP", newCapPcap(binary.BigEndian, true, linkRaw), raw, "2023-11-14T22:13:20.123456789Z"},
		{"pcap, Linux cooked", newCapPcap(binary.LittleEndian, false, linkSLL), cooked, "2023-11-14T22:13:20.123456Z"},
		{"pcapng, little-endian, Ethernet", newCapPcapng(binary.LittleEndian, linkEthernet), eth, "2023-11-14T22:13:20.123456789Z"},
		{"pcapng, big-endian, raw IP", newCapPcapng(binary.BigEndian, linkRaw), raw, "2023-11-14T22:13:20.123456789Z"},
	}
	for _, cc := range captures {
		t.Run(cc.name, func(t *testing.T) {
			for _, f := range frames(cc.frame) {
				cc.c.add(ts, f)
			}
			code, out, errs := reportRun(t, nil, "decode", "--pcap", cc.c.file(t), "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			ds := decodeJSONLines(t, out)
			if len(ds) != 4 {
				t.Fatalf("%d datagrams decoded, want 4 (packet 2 is not DTA):\n%s", len(ds), out)
			}
			d := ds[0]
			if d.Index != 1 || d.Src != rep || d.Dst != tr || d.Time != cc.time || d.Type != "report" || d.Length != len(single) || d.Header == nil || d.Header.Opcode != 1 {
				t.Errorf("packet 1: %+v", d)
			}
			decodeCheck(t, d.Reports, reps[:1])
			d = ds[1]
			if d.Index != 3 || d.Src != "[2001:db8::1]:41000" || d.Header == nil || !d.Header.Batch || d.Header.Name != "batch" {
				t.Errorf("packet 3: %+v", d)
			}
			decodeCheck(t, d.Reports, reps)
			if d := ds[2]; d.Index != 4 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decodedAck{Seq: 5, NACK: true}) {
				t.Errorf("packet 4: %+v", d)
			}
			if d := ds[3]; d.Index != 5 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decodedAck{Seq: 6}) {
				t.Errorf("packet 5: %+v", d)
			}
		})
	}
}

func TestDecodeSkipsWhatIsNotADTADatagram(t *testing.T) {
	c := newCapPcap(binary.LittleEndian, false, linkEthernet)
	s, d := netip.MustParseAddrPort("10.0.0.1:40044"), netip.MustParseAddrPort("10.0.0.2:40040")
	c.add(time.Unix(1, 0), capEther(capIPPacket(s.Addr(), d.Addr(), 6, capUDP(s, d, []byte{1, 2, 3}), 0), false))   // TCP
	c.add(time.Unix(2, 0), capEther(capIPPacket(s.Addr(), d.Addr(), 17, capUDP(s, d, []byte{1, 2, 3}), 10), false)) // a later fragment
	c.add(time.Unix(3, 0), []byte{1, 2, 3})                                                                         // a runt
	code, out, errs := reportRun(t, nil, "decode", "--pcap", c.file(t))
	if code != 0 || out != "" || !strings.Contains(errs, "no DTA or RoCEv2 datagrams") || !strings.Contains(errs, "3 packets") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestDecodeHexPrintsEveryField(t *testing.T) {
	reps := decodeTestReports(t)
	batch := decodeSentDatagrams(t, 8, reps)[0]
	code, out, errs := reportRun(t, nil, "decode", "0x"+strings.ToUpper(hex.EncodeToString(batch)), "01 01 80 02 00000001 0000002a")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"#1 ", ": batch [0x20] seq=1 flags=0x00",
		"report 1: keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01]",
		"report 2: keyincrement key=udp,[2001:db8::1]:53,[2001:db8::2]:5353 delta=8589934592 n=4 store=9 [extended 0x13]",
		"report 3: append list=7 value=0x" + hex.EncodeToString([]byte("eighteen-byte-evt!")) + " store=4 [extended 0x12]",
		"report 4: postcard key=0x0102 hop=2 path_len=5 value=0x00010002 (65538) store=3 [extended 0x14]",
		"#2 12 bytes: keywrite [0x01] seq=1 flags=0x80 immediate",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = reportRun(t, nil, "decode", "-o", "json", hex.EncodeToString(batch))
	if code != 0 {
		t.Fatal(code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	r := m["reports"].([]any)[1].(map[string]any)
	for _, f := range []string{"opcode", "format", "primitive", "store", "redundancy", "key", "key_text", "value", "delta", "list", "hop", "path_len"} {
		if _, ok := r[f]; !ok {
			t.Errorf("JSON report lacks %q: %v", f, r)
		}
	}
	decodeCheck(t, decodeJSONLines(t, out)[0].Reports, reps)
}

func TestDecodeReadsHexLinesFromStdin(t *testing.T) {
	in := "# a capture by hand\n01 01 00 02 00000001 0000002a\n\n0x0203  # an ACK\n"
	code, out, errs := reportRun(t, strings.NewReader(in), "decode")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "#1 12 bytes: keywrite") || !strings.Contains(out, "#2 2 bytes: ACK seq=2") {
		t.Errorf("output:\n%s", out)
	}
}

func TestDecodeLegacyHeader(t *testing.T) {
	code, out, errs := reportRun(t, nil, "decode", "--legacy", "0180 02 00000001 0000002a")
	if code != 0 || !strings.Contains(out, "keywrite [0x01] flags=0x80 immediate (legacy header)") || !strings.Contains(out, "key=1 value=0x0000002a") {
		t.Errorf("exit %d: %s%s", code, out, errs)
	}
}

func TestDecodeErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("this is not a capture at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCapPcap(binary.LittleEndian, false, linkEthernet)
	c.add(time.Unix(1, 0), capUDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false))
	c.buf.Write([]byte{1, 2, 3, 4, 5}) // a torn record
	torn := c.file(t)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		out, err string
	}{
		{"bad hex is a usage error", []string{"decode", "zz"}, "", 2, "", "argument 1: bad hex"},
		{"an unknown output format", []string{"decode", "-o", "yaml", "0101"}, "", 2, "", `-o: "yaml"`},
		{"hex and --pcap together", []string{"decode", "--pcap", garbage, "0101"}, "", 2, "", "not both"},
		{"nothing on stdin", []string{"decode"}, "", 2, "", "no datagrams on stdin"},
		{"bad hex on stdin", []string{"decode"}, "0101\nxyz\n", 1, "", "stdin line 2"},
		{"a truncated report", []string{"decode", "010100"}, "", 1, "error: dta: truncated", "1 of 1 datagrams did not decode"},
		{"an unknown opcode", []string{"decode", "7f0100", "0101"}, "", 1, "unknown opcode", "1 of 2 datagrams"},
		{"a bad record in a batch", []string{"decode", "200100020100090200000001000000020100"}, "", 1, "report 2: error: dta: truncated", "did not decode"},
		{"a missing file", []string{"decode", "--pcap", filepath.Join(t.TempDir(), "none.pcap")}, "", 1, "", "no such file"},
		{"not a capture", []string{"decode", "--pcap", garbage}, "", 1, "", "not a pcap or pcapng capture"},
		{"a torn record", []string{"decode", "--pcap", torn}, "", 1, "#1 ", "record 2: unexpected EOF"},
		{"a bad flag", []string{"decode", "--pcapp", "x"}, "", 2, "", "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := reportRun(t, strings.NewReader(tt.stdin), tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errs, tt.code, tt.out, tt.err)
			}
		})
	}
}

// FuzzDecodeCapture: no capture file, however broken, makes decode panic.
func FuzzDecodeCapture(f *testing.F) {
	c := newCapPcap(binary.LittleEndian, false, linkEthernet)
	c.add(time.Unix(1, 0), capUDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, true))
	f.Add(c.buf.Bytes())
	ng := newCapPcapng(binary.BigEndian, linkEthernet)
	ng.add(time.Unix(1, 0), capUDPFrame("[::1]:1", "[::2]:40040", []byte{0x20, 1, 0, 1, 1, 0, 9, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false))
	f.Add(ng.buf.Bytes())
	f.Add(rocePcapBytes(f, roceFrame(f, "10.0.0.1:1", "10.0.0.2:4791", roceCM(roceTestREQ()))))
	o := &decodeOptions{port: dta.Port, rocePort: roce.Port}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &decodePrinter{w: &bytes.Buffer{}, json: true}
		n := 0
		_ = readCapture(bytes.NewReader(b), func(pkt capturePacket) error {
			n++
			return p.capture(o, n, pkt)
		})
	})
}

// RoCEv2 decoding.

// roceFrame builds an Ethernet frame carrying pkt from src to dst
// ("addr:port", IPv4 or IPv6), with the ICRC computed.
func roceFrame(t testing.TB, src, dst string, pkt roce.Packet) []byte {
	t.Helper()
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	env := roce.Envelope{Src: s.Addr(), Dst: d.Addr(), SrcPort: s.Port(), DstPort: d.Port()}
	f, err := env.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}, &pkt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// rocePcapBytes writes frames into a classic pcap with roce's writer.
func rocePcapBytes(t testing.TB, frames ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := roce.NewPcapWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// rocePcap writes frames into a classic pcap file with roce's writer and
// returns its path.
func rocePcap(t *testing.T, frames ...[]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "roce.pcap")
	if err := os.WriteFile(p, rocePcapBytes(t, frames...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// roceCM returns the UD SEND to QP1 that carries a CM message.
func roceCM(m roce.CM) roce.Packet {
	return roce.CMPacket(7, m.AppendTo(nil))
}

// roceTestREQ is rdma_cm's REQ from 10.0.0.1:40000 for TCP port 7471.
func roceTestREQ() roce.CM {
	req := roce.ConnectRequest{
		LocalCommID: 0xaabbccdd, ServiceID: roce.ServiceID(roce.PortSpaceTCP, 7471), LocalQPN: 0x11,
		StartingPSN: 100, PathMTU: roce.MTU1024, ResponderResources: 1, InitiatorDepth: 2, PKey: 0xffff,
	}
	h := roce.IPCMHeader{SrcPort: 40000, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")}
	copy(req.PrivateData[:], h.AppendTo(nil))
	return roce.CM{Header: roce.CMHeader(roce.AttrREQ, 0x1234), REQ: req}
}

func TestDecodeRoCEPrintsEveryHeaderOfACapturedPacket(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	const req6, resp6 = "[2001:db8::1]:49152", "[2001:db8::2]:4791"
	bth := func(op roce.Opcode, psn uint32, ackReq bool) roce.BTH {
		return roce.BTH{Opcode: op, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: psn, AckReq: ackReq}
	}
	reth := roce.RETH{VA: 0x7f0000001000, RKey: 0x1234abcd, DMALen: 5}
	corrupt := func(f []byte) []byte {
		f[len(f)-roce.ICRCLen-3-2] ^= 0x10 // the payload's 4th byte (3 bytes of pad follow the 5 of payload)
		return f
	}
	rej := roce.CM{Header: roce.CMHeader(roce.AttrREJ, 0x1234), REJ: roce.ConnectReject{
		LocalCommID: 0x01020304, RemoteCommID: 0xaabbccdd, MessageRejected: roce.CMMsgREQ, Reason: roce.RejectInvalidServiceID,
	}}
	rep := roce.CM{Header: roce.CMHeader(roce.AttrREP, 0x1234), REP: roce.ConnectReply{
		LocalCommID: 0x01020304, RemoteCommID: 0xaabbccdd, LocalQPN: 0x22, StartingPSN: 0x200, ResponderResources: 1, InitiatorDepth: 1,
	}}
	copy(rep.REP.PrivateData[:], "dta")
	dreq := roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 0x99), DREQ: roce.DisconnectRequest{LocalCommID: 1, RemoteCommID: 2, RemoteQPN: 0x22}}
	tests := []struct {
		name  string
		frame []byte
		code  int
		want  []string
	}{
		{"an RDMA WRITE shows its RETH, payload and a good ICRC",
			roceFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpWriteOnly, 100, true), RETH: reth, Payload: []byte("hello")}), 0,
			[]string{
				"#1 2023-11-14T22:13:20Z 10.0.0.1:49152 > 10.0.0.2:4791 40 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=100 ack_req=1 pkey=0xffff pad=3\n",
				"  reth: va=0x00007f0000001000 rkey=0x1234abcd dma_len=5\n",
				"  payload: 5 bytes 68656c6c6f\n",
				"  icrc: ok (0x",
			}},
		{"a WRITE with immediate over IPv6 shows the immediate",
			roceFrame(t, req6, resp6, roce.Packet{BTH: bth(roce.OpWriteOnlyImm, 101, true), RETH: reth, ImmDt: roce.ImmDt{Data: 42}, Payload: []byte{1, 2, 3, 4}}), 0,
			[]string{
				"[2001:db8::1]:49152 > [2001:db8::2]:4791 40 bytes: RoCEv2 RDMA WRITE Only with Immediate [0x0b] qp=0x000011 psn=101 ack_req=1",
				"  reth: va=0x00007f0000001000 rkey=0x1234abcd dma_len=5\n",
				"  imm_dt: 0x0000002a (42)\n",
				"  payload: 4 bytes 01020304\n",
				"  icrc: ok",
			}},
		{"a FETCH_ADD shows address, key and addend",
			roceFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpFetchAdd, 102, true), AtomicETH: roce.AtomicETH{VA: 0x7f0000002008, RKey: 0x55, SwapAdd: 9}}), 0,
			[]string{
				"RoCEv2 FetchAdd [0x14] qp=0x000011 psn=102 ack_req=1",
				"  atomic_eth: va=0x00007f0000002008 rkey=0x00000055 add=9\n",
				"  icrc: ok",
			}},
		{"an ACK from the responder shows its syndrome and MSN",
			roceFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 100, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 3}}), 0,
			[]string{
				"10.0.0.2:4791 > 10.0.0.1:49152 20 bytes: RoCEv2 Acknowledge [0x11] qp=0x000011 psn=100 ack_req=0",
				"  aeth: ACK credits=unlimited msn=3 [syndrome 0x1f]\n",
				"  icrc: ok",
			}},
		{"a NAK shows the NAK code and its meaning",
			roceFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 104, false), AETH: roce.AETH{Syndrome: roce.NAKRemoteAccessError, MSN: 3}}), 0,
			[]string{"  aeth: NAK code=2 (remote access error) msn=3 [syndrome 0x62]\n"}},
		{"an RNR NAK shows the timer",
			roceFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 104, false), AETH: roce.AETH{Syndrome: roce.RNRNAKSyndrome(14), MSN: 3}}), 0,
			[]string{"  aeth: RNR NAK timer=1.28ms msn=3 [syndrome 0x2e]\n"}},
		{"an ATOMIC ACK shows the original value",
			roceFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpAtomicACK, 102, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 4}, AtomicAckETH: roce.AtomicAckETH{OrigData: 41}}), 0,
			[]string{
				"RoCEv2 Atomic Acknowledge [0x12] qp=0x000011 psn=102",
				"  aeth: ACK credits=unlimited msn=4",
				"  atomic_ack_eth: orig_data=41 (0x0000000000000029)\n",
			}},
		{"a CM REQ shows its key fields and the rdma_cm addresses",
			roceFrame(t, req, resp, roceCM(roceTestREQ())), 0,
			[]string{
				"RoCEv2 UD SEND Only [0x64] qp=0x000001 psn=7",
				"  deth: qkey=0x80010000 src_qp=0x000001\n",
				"  payload: 256 bytes 01070203000000000000000000001234...\n",
				"  cm: REQ tid=0x0000000000001234 local_comm_id=0xaabbccdd service_id=0x0000000001061d2f qpn=0x000011 starting_psn=100 mtu=1024 responder_resources=1 initiator_depth=2 private_data=92 bytes (36 in use)\n",
				"  rdma_cm: tcp 10.0.0.1:40000 > 10.0.0.2:7471\n",
				"  icrc: ok",
			}},
		{"a CM REP shows both comm ids, the QPN and the starting PSN",
			roceFrame(t, resp, req, roceCM(rep)), 0,
			[]string{"  cm: REP tid=0x0000000000001234 local_comm_id=0x01020304 remote_comm_id=0xaabbccdd qpn=0x000022 starting_psn=512 responder_resources=1 initiator_depth=1 private_data=196 bytes (3 in use)\n"}},
		{"a CM REJ shows the reason",
			roceFrame(t, resp, req, roceCM(rej)), 0,
			[]string{"  cm: REJ tid=0x0000000000001234 local_comm_id=0x01020304 remote_comm_id=0xaabbccdd reason=8 (invalid service ID) rejected=REQ private_data=148 bytes (0 in use)\n"}},
		{"a CM DREQ shows the QP it disconnects",
			roceFrame(t, req, resp, roceCM(dreq)), 0,
			[]string{"  cm: DREQ tid=0x0000000000000099 local_comm_id=0x00000001 remote_comm_id=0x00000002 remote_qpn=0x000022 private_data=220 bytes (0 in use)\n"}},
		{"a corrupted packet prints its ICRC as bad and fails the command",
			corrupt(roceFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpWriteOnly, 100, true), RETH: reth, Payload: []byte("hello")})), 1,
			[]string{"  payload: 5 bytes 68656c7c6f\n", "  icrc: bad (carried 0x"}},
	}
	ts := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapPcap(binary.LittleEndian, false, linkEthernet)
			c.add(ts, tt.frame)
			code, out, errs := reportRun(t, nil, "decode", "--pcap", c.file(t))
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.code == 1 && !strings.Contains(errs, "1 of 1 datagrams have a bad RoCEv2 ICRC") {
				t.Errorf("stderr %q", errs)
			}
		})
	}
}

func TestDecodeRoCEReadsRealCaptures(t *testing.T) {
	tests := []struct {
		name string
		file string
		code int
		want []string
	}{
		{"a ConnectX-4 CNP decodes with a good ICRC", "hw_cx4_cnp.pcap", 0, []string{
			"#1 2023-11-14T22:13:20Z 10.0.17.1:0 > 10.0.18.1:4791 32 bytes: RoCEv2 CNP [0x81] qp=0x000118 psn=0 ack_req=0 pkey=0xffff pad=0 becn\n",
			"  icrc: ok (0x82fd002a)\n",
		}},
		{"the spec's WRITE Only vector decodes with a good ICRC", "write_only_ok.pcap", 0, []string{
			"10.0.0.1:49374 > 10.0.0.2:4791 48 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=256 ack_req=1 pkey=0xffff pad=0\n",
			"  reth: va=0x00007f0000001000 rkey=0x12345678 dma_len=16\n",
			"  payload: 16 bytes 000102030405060708090a0b0c0d0e0f\n",
			"  icrc: ok (0x9409eeba)\n",
		}},
		{"the same vector with a flipped byte has a bad ICRC", "write_only_bad.pcap", 1, []string{
			"  payload: 16 bytes 000102020405060708090a0b0c0d0e0f\n",
			"  icrc: bad (carried 0x9409eeba, computed 0x11d07867)\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := reportRun(t, nil, "decode", "--pcap", filepath.Join("testdata", "rocev2", tt.file))
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDecodeRoCEGoesOnAfterAMalformedPacket(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 5}, RETH: roce.RETH{VA: 0x1000, RKey: 1, DMALen: 4}, Payload: []byte{1, 2, 3, 4}}
	good := roceFrame(t, req, resp, write)
	ipOf := func(f []byte) []byte { return f[roce.EthernetLen:] }
	udpOf := func(f []byte) []byte { return f[roce.EthernetLen+roce.IPv4HeaderLen+roce.UDPHeaderLen:] }
	withPayload := func(p []byte) []byte { return capUDPFrame(req, resp, p, false) }
	unknown := append([]byte(nil), udpOf(good)...)
	unknown[0] = 0x1f
	badTVer := append([]byte(nil), udpOf(good)...)
	badTVer[1] |= 0x01
	shortMAD := roce.CMPacket(1, []byte("not a whole MAD"))
	notCM := roce.CM{Header: roce.CMHeader(roce.AttrREQ, 1)}
	notCM.Header.MgmtClass = 0x03 // subnet administration
	lap := roce.CM{Header: roce.CMHeader(roce.AttrLAP, 1)}
	frames := [][]byte{
		withPayload(udpOf(good)[:8]),  // 1: shorter than a BTH
		withPayload(udpOf(good)[:20]), // 2: RETH cut short
		withPayload(unknown),          // 3
		withPayload(badTVer),          // 4
		roceFrame(t, req, resp, roce.Packet{BTH: roce.BTH{Opcode: roce.OpUDSendOnly, DestQP: roce.GSIQP}, Payload: shortMAD.Payload}), // 5
		roceFrame(t, req, resp, roceCM(notCM)), // 6: not an error
		roceFrame(t, req, resp, roceCM(lap)),   // 7: not an error
		capUDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false), // 8: DTA
		capUDPFrame("10.0.0.1:1", "10.0.0.2:53", udpOf(good), false),                                    // 9: skipped
		good, // 10
		capEther(capIPPacket(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 17, ipOf(good)[roce.IPv4HeaderLen:], 0x2000), false), // 11: MF set
	}
	c := newCapPcapng(binary.LittleEndian, linkEthernet)
	for _, f := range frames {
		c.add(time.Unix(1, 0), f)
	}
	code, out, errs := reportRun(t, nil, "decode", "--pcap", c.file(t))
	if code != 1 || !strings.Contains(errs, "5 of 10 datagrams did not decode; 3 of 10 datagrams have a bad RoCEv2 ICRC") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	for _, w := range []string{
		"#1 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 8 bytes: RoCEv2: error: 8 bytes, a BTH needs 12: roce: truncated\n  icrc: not checked (packet or capture truncated)\n",
		"#2 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 20 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0: error: 20 bytes, RDMA WRITE Only needs 28 of headers and 4 of ICRC: roce: truncated\n",
		"RoCEv2 opcode(0x1f) [0x1f] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0: error: opcode 0x1f: roce: unknown opcode\n",
		"tver=1: error: transport header version 1: roce: BTH transport version is not 0\n",
		"  cm: error: a MAD is 256 bytes, this payload 15: roce: truncated\n",
		"  cm: attribute(0x10) tid=0x0000000000000001: not a CM MAD (base version 1, class 0x03, class version 2): not decoded\n",
		"  cm: LAP tid=0x0000000000000001: not decoded\n",
		"#8 1970-01-01T00:00:01Z 10.0.0.1:1 > 10.0.0.2:40040 12 bytes: keywrite [0x01]",
		"#10 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 36 bytes: RoCEv2 RDMA WRITE Only [0x0a]",
		"#11 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 36 bytes (IP fragment: payload incomplete): RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0\n  reth: va=0x0000000000001000 rkey=0x00000001 dma_len=4\n  payload: 4 bytes 01020304\n  icrc: not checked (IPv4 options, IPv6 extension headers or an IP fragment)\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "#9 ") {
		t.Errorf("packet 9 (UDP to port 53) decoded:\n%s", out)
	}
}

func TestDecodeRoCEHex(t *testing.T) {
	ack := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 256}, AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 5}}
	env := roce.Envelope{Src: netip.MustParseAddr("10.0.0.2"), Dst: netip.MustParseAddr("10.0.0.1"), SrcPort: 4791, DstPort: 49152}
	ip, err := env.AppendDatagram(nil, &ack)
	if err != nil {
		t.Fatal(err)
	}
	ip6env := roce.Envelope{Src: netip.MustParseAddr("2001:db8::2"), Dst: netip.MustParseAddr("2001:db8::1"), SrcPort: 4791, DstPort: 49152}
	ip6, err := ip6env.AppendDatagram(nil, &ack)
	if err != nil {
		t.Fatal(err)
	}
	badIP := append([]byte(nil), ip...)
	badIP[len(badIP)-1] ^= 1
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   []string
		err   string
	}{
		{"a UDP payload decodes without an ICRC check", []string{"decode", "--roce", "1100ffff 00000011 00000100  1f000005  00000000"}, "", 0,
			[]string{"#1 20 bytes: RoCEv2 Acknowledge [0x11] qp=0x000011 psn=256 ack_req=0 pkey=0xffff pad=0\n  aeth: ACK credits=unlimited msn=5 [syndrome 0x1f]\n  icrc: not checked (no IP header)\n"}, ""},
		{"hex lines on stdin decode as RoCEv2 too", []string{"decode", "--roce"}, "# an ACK\n1100ffff0000001100000100 1f000005 00000000\n", 0,
			[]string{"#1 20 bytes: RoCEv2 Acknowledge", "  aeth: ACK credits=unlimited msn=5"}, ""},
		{"a whole IPv4 packet gets its ICRC checked", []string{"decode", "--roce", "--ip", hex.EncodeToString(ip)}, "", 0,
			[]string{"#1 10.0.0.2:4791 > 10.0.0.1:49152 20 bytes: RoCEv2 Acknowledge [0x11]", "  icrc: ok (0x"}, ""},
		{"a whole IPv6 packet gets its ICRC checked", []string{"decode", "--roce", "--ip", hex.EncodeToString(ip6)}, "", 0,
			[]string{"#1 [2001:db8::2]:4791 > [2001:db8::1]:49152 20 bytes: RoCEv2 Acknowledge [0x11]", "  icrc: ok (0x"}, ""},
		{"a whole IP packet with a wrong ICRC fails", []string{"decode", "--roce", "--ip", hex.EncodeToString(badIP)}, "", 1,
			[]string{"  icrc: bad (carried 0x"}, "1 of 1 datagrams have a bad RoCEv2 ICRC"},
		{"an IP packet that is not UDP is an error and the next one decodes", []string{"decode", "--roce", "--ip", "4500001400000000400600000a0000010a000002", hex.EncodeToString(ip)}, "", 1,
			[]string{"#1 20 bytes: RoCEv2: error: IP/UDP headers of a 20-byte datagram: roce: not an IPv4/IPv6 UDP datagram\n", "#2 10.0.0.2:4791 > 10.0.0.1:49152 20 bytes: RoCEv2 Acknowledge"}, "1 of 2 datagrams did not decode"},
		{"--ip needs --roce", []string{"decode", "--ip", "00"}, "", 2, nil, "--ip: give --roce too"},
		{"--roce does not apply to captures", []string{"decode", "--roce", "--pcap", "x.pcap"}, "", 2, nil, "--roce reads hex input"},
		{"--roce-port cannot be 0", []string{"decode", "--roce-port", "0", "00"}, "", 2, nil, "--roce-port: must be 1 to 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := reportRun(t, strings.NewReader(tt.stdin), tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errs, tt.code, tt.err)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDecodeRoCEAsJSON(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 9, AckReq: true},
		RETH: roce.RETH{VA: 0xffff800000001000, RKey: 0xdeadbeef, DMALen: 3}, ImmDt: roce.ImmDt{Data: 7}, Payload: []byte{1, 2, 3}}
	path := rocePcap(t,
		roceFrame(t, req, resp, write),
		roceFrame(t, req, resp, roceCM(roceTestREQ())),
		roceFrame(t, resp, req, roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, DestQP: 0x22, PSN: 9}, AETH: roce.AETH{Syndrome: roce.NAKPSNSequenceError, MSN: 1}}),
	)
	code, out, errs := reportRun(t, nil, "decode", "--pcap", path, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var ds []decodedRoCE
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d decodedRoCE
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	if len(ds) != 3 {
		t.Fatalf("%d packets decoded, want 3:\n%s", len(ds), out)
	}
	d := ds[0]
	if d.Type != "roce" || d.Index != 1 || d.Src != req || d.Dst != resp || d.Time != "2023-11-14T22:13:20Z" || d.Length != 40 ||
		d.BTH == nil || *d.BTH != (decodedBTH{Opcode: 0x0b, Name: "RDMA WRITE Only with Immediate", DestQP: 0x11, PSN: 9, AckReq: true, PKey: 0xffff, PadCnt: 1}) ||
		d.RETH == nil || *d.RETH != (decodedRETH{VA: "0xffff800000001000", RKey: "0xdeadbeef", DMALen: 3}) ||
		d.ImmDt == nil || d.ImmDt.Data != 7 || d.Payload == nil || *d.Payload != (decodedPayload{Length: 3, Hex: "010203"}) ||
		d.ICRC.Status != "ok" || d.ICRC.Carried != d.ICRC.Computed || d.AETH != nil || d.CM != nil || d.Error != "" {
		t.Errorf("packet 1: %s", out)
	}
	cm := ds[1].CM
	if cm == nil || cm.Attribute != "REQ" || cm.LocalCommID != 0xaabbccdd || cm.RemoteCommID != nil || cm.QPN == nil || *cm.QPN != 0x11 ||
		cm.StartingPSN == nil || *cm.StartingPSN != 100 || cm.PrivateDataLen != 92 || cm.PrivateDataUsed != 36 ||
		cm.RDMACM == nil || *cm.RDMACM != (decodedIPCM{PortSpace: "tcp", Src: "10.0.0.1:40000", Dst: "10.0.0.2:7471"}) {
		t.Errorf("packet 2: %+v", cm)
	}
	if a := ds[2].AETH; a == nil || *a != (decodedAETH{Syndrome: 0x60, Type: "NAK", Code: 0, Text: "NAK PSN sequence error", MSN: 1}) || ds[2].Payload != nil {
		t.Errorf("packet 3: %s", out)
	}
}

// FuzzDecodeRoCE: no IP datagram or UDP payload, however broken, makes the
// RoCEv2 decoding panic, and an ICRC it calls ok matches the trailer.
func FuzzDecodeRoCE(f *testing.F) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	for _, pkt := range []roce.Packet{
		{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm, DestQP: 0x11}, RETH: roce.RETH{VA: 1, RKey: 2, DMALen: 3}, Payload: []byte{1, 2, 3}},
		{BTH: roce.BTH{Opcode: roce.OpAtomicACK, DestQP: 0x11}, AETH: roce.AETH{Syndrome: roce.NAKInvalidRequest}},
		{BTH: roce.BTH{Opcode: roce.OpFetchAdd, DestQP: 0x11}, AtomicETH: roce.AtomicETH{SwapAdd: 1}},
		roceCM(roceTestREQ()),
		roceCM(roce.CM{Header: roce.CMHeader(roce.AttrREJ, 1)}),
	} {
		f.Add(roceFrame(f, req, resp, pkt)[roce.EthernetLen:])
		f.Add(roceFrame(f, "[::1]:1", "[::2]:4791", pkt)[roce.EthernetLen:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, js := range []bool{false, true} {
			p := &decodePrinter{w: io.Discard, json: js}
			if u, ok := captureUDP(linkRaw, b); ok {
				d := decodeRoCE(decodeMeta{}, u.payload, u.ip)
				if d.ICRC.Status == icrcOK && (d.ICRC.Carried != d.ICRC.Computed || roce.VerifyICRC(u.ip) != nil) {
					t.Fatalf("ICRC ok but %+v, %v", d.ICRC, roce.VerifyICRC(u.ip))
				}
				_ = p.roce(decodeMeta{}, u.payload, u.ip)
			}
			_ = p.roce(decodeMeta{}, b, nil)
			_ = p.roceIP(decodeMeta{}, b)
		}
	})
}
