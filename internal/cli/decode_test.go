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

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/internal/decode/decodetest"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/roce"
)

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

func decodeJSONLines(t *testing.T, out string) []decode.Datagram {
	t.Helper()
	var ds []decode.Datagram
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d decode.Datagram
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds
}

// decodeCheck compares decoded JSON reports with what was sent.
func decodeCheck(t *testing.T, got []decode.Report, want []dta.Report) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d reports decoded, want %d", len(got), len(want))
	}
	for i := range want {
		w := decode.NewReport(&want[i])
		if got[i] != w {
			t.Errorf("report %d: %+v, want %+v", i+1, got[i], w)
		}
	}
}

// TestDecodeReadsACaptureFromAFileOrStdin runs the command over a capture
// (every format is internal/decode's TestReadCaptureReadsEveryFormat).
func TestDecodeReadsACaptureFromAFileOrStdin(t *testing.T) {
	reps := decodeTestReports(t)
	single := decodeSentDatagrams(t, 1, reps[:1])[0]
	batch := decodeSentDatagrams(t, 8, reps)[0]
	ts := time.Date(2023, 11, 14, 22, 13, 20, 123456789, time.UTC)
	const rep, tr = "10.0.0.1:40044", "10.0.0.2:40040"
	c := decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet)
	for _, f := range [][]byte{
		decodetest.UDPFrame(rep, tr, single, false),                                    // 1: a report
		decodetest.UDPFrame("10.0.0.1:5353", "10.0.0.9:53", single, false),             // 2: not DTA
		decodetest.UDPFrame("[2001:db8::1]:41000", "[2001:db8::2]:40040", batch, true), // 3: a batch over IPv6
		decodetest.UDPFrame(tr, rep, []byte{5, 0x80}, false),                           // 4: a NACK to 40044
		decodetest.UDPFrame(tr, "10.0.0.1:41000", []byte{6, 0}, false),                 // 5: an ACK from the translator's port
	} {
		c.Add(ts, f)
	}
	tests := []struct {
		name  string
		stdin io.Reader
		path  string
	}{
		{"a capture file", nil, c.File(t)},
		{"a capture on stdin", bytes.NewReader(c.Bytes()), "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := reportRun(t, tt.stdin, "decode", "--pcap", tt.path, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			ds := decodeJSONLines(t, out)
			if len(ds) != 4 {
				t.Fatalf("%d datagrams decoded, want 4 (packet 2 is not DTA):\n%s", len(ds), out)
			}
			d := ds[0]
			if d.Index != 1 || d.Src != rep || d.Dst != tr || d.Time != "2023-11-14T22:13:20.123456Z" || d.Type != "report" || d.Length != len(single) || d.Header == nil || d.Header.Opcode != 1 {
				t.Errorf("packet 1: %+v", d)
			}
			decodeCheck(t, d.Reports, reps[:1])
			d = ds[1]
			if d.Index != 3 || d.Src != "[2001:db8::1]:41000" || d.Header == nil || !d.Header.Batch || d.Header.Name != "batch" {
				t.Errorf("packet 3: %+v", d)
			}
			decodeCheck(t, d.Reports, reps)
			if d := ds[2]; d.Index != 4 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decode.Ack{Seq: 5, NACK: true}) {
				t.Errorf("packet 4: %+v", d)
			}
			if d := ds[3]; d.Index != 5 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decode.Ack{Seq: 6}) {
				t.Errorf("packet 5: %+v", d)
			}
		})
	}
}

func TestDecodeSkipsWhatIsNotADTADatagram(t *testing.T) {
	c := decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet)
	s, d := netip.MustParseAddrPort("10.0.0.1:40044"), netip.MustParseAddrPort("10.0.0.2:40040")
	c.Add(time.Unix(1, 0), decodetest.Ether(decodetest.IPPacket(s.Addr(), d.Addr(), 6, decodetest.UDP(s, d, []byte{1, 2, 3}), 0), false))   // TCP
	c.Add(time.Unix(2, 0), decodetest.Ether(decodetest.IPPacket(s.Addr(), d.Addr(), 17, decodetest.UDP(s, d, []byte{1, 2, 3}), 10), false)) // a later fragment
	c.Add(time.Unix(3, 0), []byte{1, 2, 3})                                                                                                 // a runt
	code, out, errs := reportRun(t, nil, "decode", "--pcap", c.File(t))
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
	c := decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet)
	c.Add(time.Unix(1, 0), decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false))
	c.AppendRaw([]byte{1, 2, 3, 4, 5}) // a torn record
	torn := c.File(t)
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
		{"a missing file", []string{"decode", "--pcap", filepath.Join(t.TempDir(), "none.pcap")}, "", 2, "", "--pcap: open"},
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
			code, out, errs := reportRun(t, nil, "decode", "--pcap", filepath.Join("..", "decode", "testdata", "rocev2", tt.file))
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

// TestDecodeRoCEGoesOnAfterAMalformedPacket: the command prints every
// packet and counts the bad ones (what each prints is internal/decode's
// TestRoCEDescribesMalformedPackets).
func TestDecodeRoCEGoesOnAfterAMalformedPacket(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 5}, RETH: roce.RETH{VA: 0x1000, RKey: 1, DMALen: 4}, Payload: []byte{1, 2, 3, 4}}
	good := decodetest.RoCEFrame(t, req, resp, write)
	ipOf := func(f []byte) []byte { return f[roce.EthernetLen:] }
	udpOf := func(f []byte) []byte { return f[roce.EthernetLen+roce.IPv4HeaderLen+roce.UDPHeaderLen:] }
	withPayload := func(p []byte) []byte { return decodetest.UDPFrame(req, resp, p, false) }
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
		decodetest.RoCEFrame(t, req, resp, roce.Packet{BTH: roce.BTH{Opcode: roce.OpUDSendOnly, DestQP: roce.GSIQP}, Payload: shortMAD.Payload}), // 5
		decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(notCM)),                                                                           // 6: not an error
		decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(lap)),                                                                             // 7: not an error
		decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false),                                  // 8: DTA
		decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:53", udpOf(good), false),                                                                     // 9: skipped
		good, // 10
		decodetest.Ether(decodetest.IPPacket(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 17, ipOf(good)[roce.IPv4HeaderLen:], 0x2000), false), // 11: MF set
	}
	c := decodetest.NewPcapng(binary.LittleEndian, decode.LinkEthernet)
	for _, f := range frames {
		c.Add(time.Unix(1, 0), f)
	}
	code, out, errs := reportRun(t, nil, "decode", "--pcap", c.File(t))
	if code != 1 || !strings.Contains(errs, "5 of 10 datagrams did not decode; 3 of 10 datagrams have a bad RoCEv2 ICRC") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	for _, w := range []string{
		"#1 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 8 bytes: RoCEv2: error: 8 bytes, a BTH needs 12: roce: truncated\n",
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

// TestDecodeRoCEAsJSON: -o json prints one decode.RoCE per packet (every
// field is internal/decode's TestRoCEMarshalsEveryHeader).
func TestDecodeRoCEAsJSON(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 9, AckReq: true},
		RETH: roce.RETH{VA: 0xffff800000001000, RKey: 0xdeadbeef, DMALen: 3}, ImmDt: roce.ImmDt{Data: 7}, Payload: []byte{1, 2, 3}}
	path := filepath.Join(t.TempDir(), "roce.pcap")
	if err := os.WriteFile(path, decodetest.RoCEPcap(t,
		decodetest.RoCEFrame(t, req, resp, write),
		decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(decodetest.REQ())),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := reportRun(t, nil, "decode", "--pcap", path, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var ds []decode.RoCE
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d decode.RoCE
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	if len(ds) != 2 {
		t.Fatalf("%d packets decoded, want 2:\n%s", len(ds), out)
	}
	if d := ds[0]; d.Type != "roce" || d.Index != 1 || d.Src != req || d.Dst != resp || d.Time != "2023-11-14T22:13:20Z" ||
		d.BTH == nil || d.BTH.Name != "RDMA WRITE Only with Immediate" || d.RETH == nil || d.ImmDt == nil || d.ICRC.Status != decode.ICRCOK {
		t.Errorf("packet 1: %s", out)
	}
	if cm := ds[1].CM; cm == nil || cm.Attribute != "REQ" || cm.RDMACM == nil {
		t.Errorf("packet 2: %s", out)
	}
}
