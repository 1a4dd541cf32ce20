package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
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
	if code != 0 || out != "" || !strings.Contains(errs, "no DTA datagrams") || !strings.Contains(errs, "3 packets") {
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
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &decodePrinter{w: &bytes.Buffer{}, json: true}
		_ = readCapture(bytes.NewReader(b), func(pkt capturePacket) error {
			if u, ok := captureUDP(pkt.link, pkt.data); ok {
				return p.datagram(decodeMeta{}, u.payload)
			}
			return nil
		})
	})
}
