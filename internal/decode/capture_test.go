package decode_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/internal/decode/decodetest"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// testReports are one report of each kind with a key, in compat and
// extended formats.
func testReports(t testing.TB) []dta.Report {
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

// datagram encodes reps into one datagram (a batch if more than one) with
// sequence number seq.
func datagram(t testing.TB, seq uint8, reps ...dta.Report) []byte {
	t.Helper()
	if len(reps) == 1 {
		b, err := dta.AppendDatagram(nil, dta.Header{Opcode: reps[0].Opcode, Seq: seq}, &reps[0])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var w dta.BatchWriter
	w.Reset(nil, dta.Header{Opcode: dta.OpBatch, Seq: seq})
	for i := range reps {
		if err := w.Add(&reps[i]); err != nil {
			t.Fatal(err)
		}
	}
	return w.Bytes()
}

// frames decodes every frame of a capture with a default Decoder.
func frames(t *testing.T, capture []byte) ([]decode.Packet, int) {
	t.Helper()
	var d decode.Decoder
	var pkts []decode.Packet
	n := 0
	err := decode.ReadCapture(bytes.NewReader(capture), func(f decode.Frame) error {
		n++
		if p, ok := d.Frame(n, f); ok {
			pkts = append(pkts, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkts, n
}

func TestReadCaptureReadsEveryFormat(t *testing.T) {
	reps := testReports(t)
	single := datagram(t, 1, reps[0])
	batch := datagram(t, 2, reps...)
	ts := time.Date(2023, 11, 14, 22, 13, 20, 123456789, time.UTC)
	const rep, tr = "10.0.0.1:40044", "10.0.0.2:40040"

	eth := func(src, dst string, p []byte) []byte {
		return decodetest.UDPFrame(src, dst, p, strings.Contains(src, "["))
	}
	raw := func(src, dst string, p []byte) []byte { return decodetest.UDPPacket(src, dst, p) }
	cooked := func(src, dst string, p []byte) []byte { return decodetest.SLL(raw(src, dst, p)) }
	tests := []struct {
		name  string
		c     *decodetest.Capture
		frame func(src, dst string, p []byte) []byte
		time  string
	}{
		{"pcap, little-endian, microseconds, Ethernet and VLAN", decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet), eth, "2023-11-14T22:13:20.123456Z"},
		{"pcap, big-endian, nanoseconds, raw IP", decodetest.NewPcap(binary.BigEndian, true, decode.LinkRaw), raw, "2023-11-14T22:13:20.123456789Z"},
		{"pcap, Linux cooked", decodetest.NewPcap(binary.LittleEndian, false, decode.LinkSLL), cooked, "2023-11-14T22:13:20.123456Z"},
		{"pcapng, little-endian, Ethernet", decodetest.NewPcapng(binary.LittleEndian, decode.LinkEthernet), eth, "2023-11-14T22:13:20.123456789Z"},
		{"pcapng, big-endian, raw IP", decodetest.NewPcapng(binary.BigEndian, decode.LinkRaw), raw, "2023-11-14T22:13:20.123456789Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range [][]byte{
				tt.frame(rep, tr, single),                                     // 1: a report
				tt.frame("10.0.0.1:5353", "10.0.0.9:53", single),              // 2: not DTA
				tt.frame("[2001:db8::1]:41000", "[2001:db8::2]:40040", batch), // 3: a batch over IPv6
				tt.frame(tr, rep, []byte{5, 0x80}),                            // 4: a NACK to 40044
				tt.frame(tr, "10.0.0.1:41000", []byte{6, 0}),                  // 5: an ACK from the translator's port
			} {
				tt.c.Add(ts, f)
			}
			pkts, n := frames(t, tt.c.Bytes())
			if n != 5 || len(pkts) != 4 {
				t.Fatalf("%d of %d frames decoded, want 4 of 5 (packet 2 is not DTA)", len(pkts), n)
			}
			for i, p := range pkts {
				if p.DTA == nil || p.RoCE != nil || p.Failed() || p.BadICRC() {
					t.Fatalf("packet %d: %+v", i, p)
				}
			}
			d := pkts[0].DTA
			if d.Index != 1 || d.Src != rep || d.Dst != tr || d.Time != tt.time || d.Type != "report" || d.Length != len(single) || d.Header == nil || d.Header.Opcode != 1 {
				t.Errorf("packet 1: %+v", d)
			}
			checkReports(t, d.Reports, reps[:1])
			d = pkts[1].DTA
			if d.Index != 3 || d.Src != "[2001:db8::1]:41000" || d.Header == nil || !d.Header.Batch || d.Header.Name != "batch" || d.Header.Seq != 2 {
				t.Errorf("packet 3: %+v", d)
			}
			checkReports(t, d.Reports, reps)
			if d := pkts[2].DTA; d.Index != 4 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decode.Ack{Seq: 5, NACK: true}) {
				t.Errorf("packet 4: %+v", d)
			}
			if d := pkts[3].DTA; d.Index != 5 || d.Type != "ack" || d.Ack == nil || *d.Ack != (decode.Ack{Seq: 6}) {
				t.Errorf("packet 5: %+v", d)
			}
		})
	}
}

// checkReports compares decoded reports with what was sent.
func checkReports(t *testing.T, got []decode.Report, want []dta.Report) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d reports decoded, want %d", len(got), len(want))
	}
	for i := range want {
		if w := decode.NewReport(&want[i]); got[i] != w {
			t.Errorf("report %d: %+v, want %+v", i+1, got[i], w)
		}
	}
}

func TestFrameSkipsWhatIsNotADTAOrRoCEDatagram(t *testing.T) {
	s, d := netip.MustParseAddrPort("10.0.0.1:40044"), netip.MustParseAddrPort("10.0.0.2:40040")
	tests := []struct {
		name  string
		link  uint32
		frame []byte
	}{
		{"TCP", decode.LinkEthernet, decodetest.Ether(decodetest.IPPacket(s.Addr(), d.Addr(), 6, decodetest.UDP(s, d, []byte{1, 2, 3}), 0), false)},
		{"a later IPv4 fragment", decode.LinkEthernet, decodetest.Ether(decodetest.IPPacket(s.Addr(), d.Addr(), 17, decodetest.UDP(s, d, []byte{1, 2, 3}), 10), false)},
		{"a runt", decode.LinkEthernet, []byte{1, 2, 3}},
		{"UDP to another port", decode.LinkEthernet, decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:53", []byte{1, 1}, false)},
		{"ARP", decode.LinkEthernet, append(make([]byte, 12), 0x08, 0x06, 0, 1)},
		{"an IPv4 header cut short", decode.LinkRaw, decodetest.UDPPacket("10.0.0.1:1", "10.0.0.2:40040", nil)[:19]},
		{"a UDP header cut short", decode.LinkRaw, decodetest.UDPPacket("10.0.0.1:1", "10.0.0.2:40040", nil)[:27]},
		{"an unknown link type", 147, decodetest.UDPPacket("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1})},
		{"an empty raw frame", decode.LinkRaw, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dec decode.Decoder
			if p, ok := dec.Frame(1, decode.Frame{LinkType: tt.link, Data: tt.frame}); ok {
				t.Errorf("decoded %+v", p)
			}
		})
	}
}

func TestFindUDPReadsEveryLinkType(t *testing.T) {
	ip4 := decodetest.UDPPacket("10.0.0.1:1000", "10.0.0.2:40040", []byte("dta"))
	ip6 := decodetest.UDPPacket("[2001:db8::1]:1000", "[2001:db8::2]:40040", []byte("dta"))
	le := func(fam uint32, ip []byte) []byte { return append(binary.LittleEndian.AppendUint32(nil, fam), ip...) }
	be := func(fam uint32, ip []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, fam), ip...) }
	sll2 := func(etype uint16, ip []byte) []byte {
		return append(append(binary.BigEndian.AppendUint16(nil, etype), make([]byte, 18)...), ip...)
	}
	tests := []struct {
		name  string
		link  uint32
		frame []byte
		src   string
	}{
		{"Ethernet", decode.LinkEthernet, decodetest.Ether(ip4, false), "10.0.0.1:1000"},
		{"Ethernet with a VLAN tag", decode.LinkEthernet, decodetest.Ether(ip6, true), "[2001:db8::1]:1000"},
		{"Linux cooked v1 over IPv6", decode.LinkSLL, decodetest.SLL(ip6), "[2001:db8::1]:1000"},
		{"Linux cooked v2", decode.LinkSLL2, sll2(0x0800, ip4), "10.0.0.1:1000"},
		{"BSD loopback, host order", decode.LinkNull, le(2, ip4), "10.0.0.1:1000"},
		{"BSD loopback over IPv6 (family 30)", decode.LinkNull, le(30, ip6), "[2001:db8::1]:1000"},
		{"BSD loopback written big-endian", decode.LinkNull, be(2, ip4), "10.0.0.1:1000"},
		{"OpenBSD loopback", decode.LinkLoop, be(24, ip6), "[2001:db8::1]:1000"},
		{"raw IPv4", decode.LinkIPv4, ip4, "10.0.0.1:1000"},
		{"raw IPv6", decode.LinkIPv6, ip6, "[2001:db8::1]:1000"},
		{"raw IP on OpenBSD", decode.LinkRawAlt2, ip4, "10.0.0.1:1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := decode.FindUDP(tt.link, tt.frame)
			if !ok || u.Src.String() != tt.src || u.Dst.Port() != 40040 || string(u.Payload) != "dta" || u.Note != "" || len(u.IP) != len(ip4) && len(u.IP) != len(ip6) {
				t.Errorf("FindUDP: %+v, %v", u, ok)
			}
		})
	}
}

func TestFindUDPNotesIncompletePayloads(t *testing.T) {
	s, d := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:40040")
	whole := decodetest.UDPPacket("10.0.0.1:1", "10.0.0.2:40040", []byte("0123456789"))
	tests := []struct {
		name    string
		ip      []byte
		payload string
		note    string
	}{
		{"a capture cut inside the payload", whole[:len(whole)-4], "012345", "capture truncated"},
		{"a first IPv4 fragment", decodetest.IPPacket(s.Addr(), d.Addr(), 17, decodetest.UDP(s, d, []byte("0123456789")), 0x2000), "0123456789", "IP fragment: payload incomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := decode.FindUDP(decode.LinkRaw, tt.ip)
			if !ok || string(u.Payload) != tt.payload || u.Note != tt.note {
				t.Errorf("FindUDP: %+v, %v; want payload %q, note %q", u, ok, tt.payload, tt.note)
			}
		})
	}
}

func TestReadCaptureRefusesMalformedFiles(t *testing.T) {
	good := decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet)
	good.Add(time.Unix(1, 0), decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false))
	torn := append(bytes.Clone(good.Bytes()), 1, 2, 3, 4, 5)
	huge := bytes.Clone(good.Bytes())
	binary.LittleEndian.PutUint32(huge[24+8:], decode.MaxCaptureRecord+1)
	ng := decodetest.NewPcapng(binary.LittleEndian, decode.LinkEthernet)
	ng.Add(time.Unix(1, 0), []byte{1, 2, 3, 4})
	badBlock := bytes.Clone(ng.Bytes())
	binary.LittleEndian.PutUint32(badBlock[len(badBlock)-36+4:], 13) // the packet block's length
	badIface := bytes.Clone(ng.Bytes())
	binary.LittleEndian.PutUint32(badIface[len(badIface)-36+8:], 3) // its interface id
	badMagic := bytes.Clone(ng.Bytes())
	badMagic[8] = 0x77
	tests := []struct {
		name string
		file []byte
		is   error  // with errors.Is, if not nil
		want string // in the message
	}{
		{"an empty file", nil, io.EOF, "reading the capture header"},
		{"text", []byte("this is not a capture at all"), decode.ErrNotCapture, "not a pcap or pcapng capture"},
		{"a pcap header cut short", good.Bytes()[:20], io.ErrUnexpectedEOF, "reading the pcap header"},
		{"a torn record", torn, io.ErrUnexpectedEOF, "record 2: unexpected EOF"},
		{"a record longer than the bound", huge, nil, "record 1: captured length 1048577 exceeds 1048576"},
		{"a pcapng block length that is not a multiple of 4", badBlock, nil, "block 3: block length 13"},
		{"a pcapng packet on an undeclared interface", badIface, nil, "block 3: packet on undeclared interface 3"},
		{"a pcapng section with a bad byte-order magic", badMagic, nil, "block 1: bad pcapng byte-order magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decode.ReadCapture(bytes.NewReader(tt.file), func(decode.Frame) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("ReadCapture: %v; want %q (%v)", err, tt.want, tt.is)
			}
		})
	}
}

func TestReadCaptureStopsAtTheCallbacksError(t *testing.T) {
	c := decodetest.NewPcapng(binary.BigEndian, decode.LinkRaw)
	for range 3 {
		c.Add(time.Unix(1, 0), []byte{0x45})
	}
	stop := errors.New("stop")
	n := 0
	err := decode.ReadCapture(bytes.NewReader(c.Bytes()), func(decode.Frame) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("%d frames, error %v", n, err)
	}
}

// FuzzReadCapture: no capture file, however broken, makes reading it or
// decoding its frames panic, and every frame it hands out lies within the
// file.
func FuzzReadCapture(f *testing.F) {
	c := decodetest.NewPcap(binary.LittleEndian, false, decode.LinkEthernet)
	c.Add(time.Unix(1, 0), decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}, true))
	f.Add(c.Bytes())
	ng := decodetest.NewPcapng(binary.BigEndian, decode.LinkEthernet)
	ng.Add(time.Unix(1, 0), decodetest.UDPFrame("[::1]:1", "[::2]:40040", []byte{0x20, 1, 0, 1, 1, 0, 9, 2, 0, 0, 0, 1, 0, 0, 0, 42}, false))
	f.Add(ng.Bytes())
	f.Add(decodetest.RoCEPcap(f, decodetest.RoCEFrame(f, "10.0.0.1:1", "10.0.0.2:4791", decodetest.CMPacket(decodetest.REQ()))))
	raw := decodetest.NewPcap(binary.BigEndian, true, decode.LinkSLL)
	raw.Add(time.Unix(1, 0), decodetest.SLL(decodetest.UDPPacket("10.0.0.2:40040", "10.0.0.1:40044", []byte{5, 0x80})))
	f.Add(raw.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decode.Decoder{}
		n := 0
		_ = decode.ReadCapture(bytes.NewReader(b), func(fr decode.Frame) error {
			n++
			if len(fr.Data) > len(b) {
				t.Fatalf("a %d-byte frame in a %d-byte file", len(fr.Data), len(b))
			}
			if p, ok := d.Frame(n, fr); ok {
				_ = p.Text()
				if _, err := json.Marshal(p); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		})
	})
}

// FuzzFindUDP: no frame of any link type makes FindUDP panic, and what it
// finds lies within the frame.
func FuzzFindUDP(f *testing.F) {
	for _, link := range []uint32{decode.LinkEthernet, decode.LinkRaw, decode.LinkSLL, decode.LinkSLL2, decode.LinkNull, decode.LinkLoop} {
		f.Add(link, decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", []byte{1, 1}, true))
		f.Add(link, decodetest.UDPPacket("[::1]:1", "[::2]:4791", []byte{1, 2, 3}))
	}
	f.Fuzz(func(t *testing.T, link uint32, b []byte) {
		u, ok := decode.FindUDP(link, b)
		if !ok {
			return
		}
		if len(u.Payload) > len(b) || len(u.IP) > len(b) || !u.Src.IsValid() || !u.Dst.IsValid() {
			t.Fatalf("FindUDP: %+v from %d bytes", u, len(b))
		}
	})
}
