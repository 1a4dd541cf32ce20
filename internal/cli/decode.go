package cli

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/roce"
)

type decodeOptions struct {
	pcap     string
	legacy   bool
	output   string
	port     uint16
	roce     bool // hex input is RoCEv2
	ip       bool // with roce: hex input is a whole IP datagram
	rocePort uint16
}

func newDecodeCmd() *cobra.Command {
	o := &decodeOptions{}
	cmd := &cobra.Command{
		Use:   "decode [--roce [--ip]] [HEX...] | --pcap FILE",
		Short: "Decode DTA datagrams and RoCEv2 packets (hex or a pcap/pcapng capture)",
		Long: `decode prints every field of every report in DTA datagrams (docs/PROTOCOL.md),
and every header of RoCEv2 packets (the translator-collector RDMA traffic).

Input, one of:
  HEX...        each argument is one datagram's UDP payload in hex (spaces,
                colons and a 0x prefix are ignored)
  (nothing)     the same, one datagram per line on stdin (# starts a comment)
  --pcap FILE   a capture (pcap or pcapng; "-" reads stdin) of Ethernet, Linux
                cooked, raw IP or loopback frames: every IPv4/IPv6 UDP datagram
                to port --port (reports) or to port 40044 (ACK/NACK) is decoded,
                and 2-byte datagrams from port --port (a translator's ACKs);
                datagrams to or from port --roce-port (4791) are decoded as
                RoCEv2; other packets are skipped

A 2-byte datagram is an ACK/NACK; anything else a report datagram with the
3-byte base header (--legacy: the prototype's 2-byte header).

RoCEv2: --roce reads hex input as RoCEv2 packets (UDP payload: BTH through
ICRC), whose ICRC cannot be checked without the IP header ("icrc: not checked
(no IP header)"); --roce --ip reads whole IPv4/IPv6 packets instead and checks
it. In a capture the ICRC is checked against the captured IP and UDP headers.
Each packet prints its BTH, the headers its opcode carries (reth, atomic_eth,
aeth, atomic_ack_eth, imm_dt, deth), its payload, the CM message of a UD SEND
to QP1 (private_data counts the bytes up to the last non-zero one) and
"icrc: ok", "bad" or "not checked". ICRC values are the trailer's 4 bytes in
wire order, as tshark shows them.

-o json prints one JSON object per datagram: "type" is "report" or "ack"
(every field present) or "roce" (the headers its opcode carries). A datagram
that does not decode prints an error and decoding goes on with the next one.
The exit code is 1 when some datagram did not decode or some RoCEv2 packet
has a bad ICRC.`,
		Example: `  dta decode 01010002000000010000002a
  dta decode "20 07 40 02  01 0009 02 00000001 0000002a  03 000d 04 00000009 0000000000000001"
  echo 0x0105 | dta decode
  dta decode --pcap dta.pcap
  dta decode --pcap dta.pcapng -o json | jq .reports
  tcpdump -i any -w - udp port 40040 | dta decode --pcap -
  tcpdump -i any -w - udp port 4791 | dta decode --pcap -
  dta decode --roce "1100ffff 00000011 00000100  1f000005  e35a05df"   # an ACK, MSN 5
  dta decode --roce --ip "4500003000004000401126bb0a0000020a000001  12b712b7001c0000  1100ffff0000001100000100 1f000005 e35a05df"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return usageError("-o: %q is not text or json", o.output)
			}
			if o.port == 0 {
				return usageError("--port: must be 1 to 65535")
			}
			if o.rocePort == 0 {
				return usageError("--roce-port: must be 1 to 65535")
			}
			if o.ip && !o.roce {
				return usageError("--ip: give --roce too (--roce --ip reads whole IP packets carrying RoCEv2)")
			}
			p := &decodePrinter{w: cmd.OutOrStdout(), json: o.output == "json", dec: dta.Decoder{Legacy: o.legacy}, hexRoCE: o.roce, hexIP: o.ip}
			var err error
			switch {
			case o.pcap != "" && len(args) > 0:
				return usageError("decode: give hex arguments or --pcap, not both")
			case o.pcap != "" && o.roce:
				return usageError("decode: --roce reads hex input; in a capture RoCEv2 is found by its UDP port (--roce-port)")
			case o.pcap != "":
				err = decodeCapture(cmd, o, p)
			case len(args) > 0:
				for i, a := range args {
					b, herr := decodeHex(a)
					if herr != nil {
						return usageError("argument %d: %v", i+1, herr)
					}
					if err = p.hexDatagram(decodeMeta{index: i + 1}, b); err != nil {
						break
					}
				}
			default:
				err = decodeHexLines(cmd.InOrStdin(), p)
			}
			if err != nil {
				return err
			}
			return p.verdict()
		},
	}
	cmd.SetFlagErrorFunc(flagUsageError)
	fl := cmd.Flags()
	fl.StringVar(&o.pcap, "pcap", "", "read a pcap or pcapng capture `FILE` (- = stdin)")
	fl.BoolVar(&o.legacy, "legacy", false, "reports use the prototype's 2-byte base header")
	fl.StringVarP(&o.output, "output", "o", "text", "output `format`: text or json")
	fl.Uint16Var(&o.port, "port", dta.Port, "UDP `port` of reports in a capture")
	fl.BoolVar(&o.roce, "roce", false, "hex input is RoCEv2 packets (UDP payload: BTH through ICRC)")
	fl.BoolVar(&o.ip, "ip", false, "with --roce: hex input is whole IPv4/IPv6 packets, so the ICRC is checked")
	fl.Uint16Var(&o.rocePort, "roce-port", roce.Port, "UDP `port` of RoCEv2 packets in a capture (either end)")
	return cmd
}

// decodeHex parses one datagram written in hex.
func decodeHex(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', ':', '\r':
			return -1
		}
		return r
	}, s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return nil, errors.New("no hex digits")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad hex: %w", err)
	}
	return b, nil
}

// decodeHexLines decodes one hex datagram per line of r.
func decodeHexLines(r io.Reader, p *decodePrinter) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line, index := 0, 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		b, err := decodeHex(s)
		if err != nil {
			return fmt.Errorf("stdin line %d: %w", line, err)
		}
		index++
		if err := p.hexDatagram(decodeMeta{index: index}, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	if index == 0 {
		return usageError("decode: no datagrams on stdin (give hex arguments, hex lines on stdin, or --pcap FILE)")
	}
	return nil
}

// decodeCapture decodes the DTA datagrams of a capture file.
func decodeCapture(cmd *cobra.Command, o *decodeOptions, p *decodePrinter) error {
	var in io.Reader = cmd.InOrStdin()
	if o.pcap != "-" {
		f, err := os.Open(o.pcap)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	packets := 0
	err := readCapture(in, func(pkt capturePacket) error {
		packets++
		return p.capture(o, packets, pkt)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", o.pcap, err)
	}
	if p.count == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "dta: no DTA or RoCEv2 datagrams (UDP to port %d or %d, or to or from port %d) among the %d packets of %s\n", o.port, dta.AckPort, o.rocePort, packets, o.pcap)
	}
	return nil
}

// capture decodes packet number index of a capture if it is a DTA report
// (to --port), a RoCEv2 packet (to or from --roce-port) or a DTA ACK/NACK
// (to port 40044, or 2 bytes from --port), in that order of precedence.
func (p *decodePrinter) capture(o *decodeOptions, index int, pkt capturePacket) error {
	u, ok := captureUDP(pkt.link, pkt.data)
	if !ok {
		return nil
	}
	m := decodeMeta{index: index, time: pkt.time, src: u.src.String(), dst: u.dst.String(), note: u.note}
	switch {
	case u.dst.Port() == o.port:
		return p.datagram(m, u.payload)
	case u.dst.Port() == o.rocePort || u.src.Port() == o.rocePort:
		return p.roce(m, u.payload, u.ip)
	case u.dst.Port() == dta.AckPort || (u.src.Port() == o.port && len(u.payload) == dta.AckLen):
		m.ack = true
		return p.datagram(m, u.payload)
	}
	return nil
}

// hexDatagram decodes a datagram given in hex: DTA, or RoCEv2 with --roce.
func (p *decodePrinter) hexDatagram(m decodeMeta, b []byte) error {
	switch {
	case p.hexIP:
		return p.roceIP(m, b)
	case p.hexRoCE:
		return p.roce(m, b, nil)
	}
	return p.datagram(m, b)
}

// verdict is the command's error once every datagram is printed: nil
// unless some did not decode or had a bad ICRC.
func (p *decodePrinter) verdict() error {
	var msgs []string
	if p.failed > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d datagrams did not decode", p.failed, p.count))
	}
	if p.badICRC > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d datagrams have a bad RoCEv2 ICRC", p.badICRC, p.count))
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// decodeMeta is what is known of a datagram besides its bytes.
type decodeMeta struct {
	index    int // datagram number (hex input) or packet number (capture)
	time     time.Time
	src, dst string
	ack      bool   // known to be an ACK/NACK (capture: sent to port 40044)
	note     string // capture: e.g. "truncated capture"
}

// decodePrinter prints decoded datagrams as text or JSON lines.
type decodePrinter struct {
	w       io.Writer
	json    bool
	dec     dta.Decoder
	hexRoCE bool // hex input is RoCEv2 (UDP payloads)
	hexIP   bool // hex input is RoCEv2 in whole IP datagrams
	count   int  // datagrams printed
	failed  int  // datagrams with a decoding error
	badICRC int  // RoCEv2 packets whose ICRC does not match
}

// decodedDatagram is the JSON form of one datagram.
type decodedDatagram struct {
	Index   int             `json:"index"`
	Time    string          `json:"time,omitempty"`
	Src     string          `json:"src,omitempty"`
	Dst     string          `json:"dst,omitempty"`
	Length  int             `json:"length"`
	Note    string          `json:"note,omitempty"`
	Type    string          `json:"type"` // "report" or "ack"
	Header  *decodedHeader  `json:"header,omitempty"`
	Ack     *decodedAck     `json:"ack,omitempty"`
	Reports []decodedReport `json:"reports"`
	Error   string          `json:"error,omitempty"`
}

type decodedHeader struct {
	Opcode     uint8  `json:"opcode"`
	Name       string `json:"name"`
	Seq        uint8  `json:"seq"`
	Flags      uint8  `json:"flags"`
	Immediate  bool   `json:"immediate"`
	Retransmit bool   `json:"retransmit"`
	Legacy     bool   `json:"legacy"`
	Batch      bool   `json:"batch"`
}

type decodedAck struct {
	Seq  uint8 `json:"seq"`
	NACK bool  `json:"nack"`
}

// decodedReport holds every field of a report; the fields its primitive
// does not use are zero.
type decodedReport struct {
	Opcode     uint8  `json:"opcode"`
	Format     string `json:"format"` // compat or extended
	Primitive  string `json:"primitive"`
	Store      uint16 `json:"store"`
	Redundancy uint8  `json:"redundancy"`
	Key        string `json:"key"`      // hex, 0x-prefixed
	KeyText    string `json:"key_text"` // as dta.ParseKey reads it
	Value      string `json:"value"`    // hex, 0x-prefixed
	Delta      uint64 `json:"delta"`
	List       uint32 `json:"list"`
	Hop        uint8  `json:"hop"`
	PathLen    uint8  `json:"path_len"`
	Error      string `json:"error,omitempty"`
}

// datagram decodes b and prints it.
func (p *decodePrinter) datagram(m decodeMeta, b []byte) error {
	p.count++
	d := decodedDatagram{Index: m.index, Src: m.src, Dst: m.dst, Length: len(b), Note: m.note, Type: "report", Reports: []decodedReport{}}
	if !m.time.IsZero() {
		d.Time = m.time.UTC().Format(time.RFC3339Nano)
	}
	failed := false
	var raw []dta.Report // d.Reports as decoded, for text; they alias b
	if m.ack || (len(b) == dta.AckLen && !p.dec.Legacy) {
		d.Type = "ack"
		var a dta.Ack
		if err := a.Decode(b); err != nil {
			d.Error, failed = err.Error(), true
		} else {
			d.Ack = &decodedAck{Seq: a.Seq, NACK: a.NACK}
		}
	} else {
		var dg dta.Datagram
		if err := p.dec.Decode(b, &dg); err != nil {
			d.Error, failed = err.Error(), true
			if len(b) >= dta.LegacyHeaderLen {
				h := dg.Header
				d.Header = decodeHeader(h, p.dec.Legacy, h.Opcode == dta.OpBatch)
			}
		} else {
			d.Header = decodeHeader(dg.Header, p.dec.Legacy, dg.Batch())
			for {
				var r dta.Report
				err := dg.Next(&r)
				if err == io.EOF {
					break
				}
				if err != nil {
					failed = true
					d.Reports = append(d.Reports, decodedReport{Opcode: uint8(r.Opcode), Primitive: r.Primitive().String(), Error: err.Error()})
					raw = append(raw, r)
					if dg.Done() {
						break
					}
					continue
				}
				d.Reports = append(d.Reports, decodeReport(&r))
				raw = append(raw, r)
			}
		}
	}
	if failed {
		p.failed++
	}
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		return enc.Encode(d)
	}
	return p.text(&d, raw)
}

func decodeHeader(h dta.Header, legacy, batch bool) *decodedHeader {
	return &decodedHeader{
		Opcode: uint8(h.Opcode), Name: decodeOpcodeName(h.Opcode), Seq: h.Seq, Flags: uint8(h.Flags),
		Immediate: h.Immediate(), Retransmit: h.Retransmit(), Legacy: legacy, Batch: batch,
	}
}

func decodeOpcodeName(op dta.Opcode) string {
	switch {
	case op == dta.OpBatch:
		return "batch"
	case op.Primitive() == 0:
		return "unknown"
	case op.Extended():
		return op.Primitive().String() + "-ext"
	}
	return op.Primitive().String()
}

func decodeReport(r *dta.Report) decodedReport {
	d := decodedReport{
		Opcode: uint8(r.Opcode), Format: "compat", Primitive: r.Primitive().String(),
		Store: r.Store, Redundancy: r.Redundancy, Delta: r.Delta, List: r.List, Hop: r.Hop, PathLen: r.PathLen,
	}
	if r.Opcode.Extended() {
		d.Format = "extended"
	}
	if len(r.Key) > 0 {
		d.Key = "0x" + hex.EncodeToString(r.Key)
		d.KeyText = reportKeyText(r)
	}
	if len(r.Value) > 0 {
		d.Value = "0x" + hex.EncodeToString(r.Value)
	}
	return d
}

// reportKeyText is a report's key in the form dta.ParseKey reads: decimal
// for compat reports, a 5-tuple or hex for extended ones.
func reportKeyText(r *dta.Report) string {
	return dta.Key{Compat: !r.Opcode.Extended() && len(r.Key) == 4, Bytes: r.Key}.String()
}

// describeReport formats the fields of r that its primitive uses, on one
// line: "keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01]".
func describeReport(r *dta.Report) string {
	var b strings.Builder
	b.WriteString(r.Primitive().String())
	switch r.Primitive() {
	case dta.KeyWrite:
		fmt.Fprintf(&b, " key=%s value=%s n=%d", reportKeyText(r), reportValueText(r.Value), r.Redundancy)
	case dta.KeyIncrement:
		fmt.Fprintf(&b, " key=%s delta=%d n=%d", reportKeyText(r), r.Delta, r.Redundancy)
	case dta.Append:
		fmt.Fprintf(&b, " list=%d value=%s", r.List, reportValueText(r.Value))
	case dta.Postcard:
		fmt.Fprintf(&b, " key=%s hop=%d path_len=%d value=%s", reportKeyText(r), r.Hop, r.PathLen, reportValueText(r.Value))
	case dta.SketchMerge:
		fmt.Fprintf(&b, " epoch=%d row=%d column=%d counters=[", r.Epoch, r.Row, r.Column)
		for i := 0; i+8 <= len(r.Value); i += 8 {
			if i > 0 {
				b.WriteByte(' ')
			}
			if i == 8*16 {
				fmt.Fprintf(&b, "… %d more", (len(r.Value)-i)/8)
				break
			}
			fmt.Fprintf(&b, "%d", int64(binary.BigEndian.Uint64(r.Value[i:])))
		}
		b.WriteByte(']')
	}
	format := "compat"
	if r.Opcode.Extended() {
		format = "extended"
	}
	fmt.Fprintf(&b, " store=%d [%s 0x%02x]", r.Store, format, uint8(r.Opcode))
	return b.String()
}

// reportValueText prints bytes in hex, and 4-byte values also in decimal.
func reportValueText(v []byte) string {
	s := "0x" + hex.EncodeToString(v)
	if len(v) == 4 {
		s += " (" + strconv.FormatUint(uint64(uint32(v[0])<<24|uint32(v[1])<<16|uint32(v[2])<<8|uint32(v[3])), 10) + ")"
	}
	return s
}

// text prints d for people; raw holds d's reports as decoded.
func (p *decodePrinter) text(d *decodedDatagram, raw []dta.Report) error {
	var b strings.Builder
	textPrefix(&b, d.Index, d.Time, d.Src, d.Dst, d.Length, d.Note)
	switch {
	case d.Ack != nil:
		kind := "ACK"
		if d.Ack.NACK {
			kind = "NACK"
		}
		fmt.Fprintf(&b, ": %s seq=%d", kind, d.Ack.Seq)
	case d.Header != nil:
		h := d.Header
		fmt.Fprintf(&b, ": %s [0x%02x]", h.Name, h.Opcode)
		if !h.Legacy {
			fmt.Fprintf(&b, " seq=%d", h.Seq)
		}
		fmt.Fprintf(&b, " flags=0x%02x", h.Flags)
		if h.Immediate {
			b.WriteString(" immediate")
		}
		if h.Retransmit {
			b.WriteString(" retransmit")
		}
		if h.Legacy {
			b.WriteString(" (legacy header)")
		}
	}
	if d.Error != "" {
		fmt.Fprintf(&b, ": error: %s", d.Error)
	}
	b.WriteByte('\n')
	for i := range d.Reports {
		fmt.Fprintf(&b, "  report %d: ", i+1)
		if r := &d.Reports[i]; r.Error != "" {
			if r.Opcode != 0 {
				fmt.Fprintf(&b, "opcode 0x%02x: ", r.Opcode)
			}
			fmt.Fprintf(&b, "error: %s\n", r.Error)
			continue
		}
		b.WriteString(describeReport(&raw[i]))
		if r := &d.Reports[i]; r.KeyText != "" && r.Key != r.KeyText {
			fmt.Fprintf(&b, " key_bytes=%s", r.Key)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// textPrefix writes the start of a datagram's first line:
// "#3 2023-11-14T22:13:20Z 10.0.0.1:1 > 10.0.0.2:40040 12 bytes (note)".
func textPrefix(b *strings.Builder, index int, ts, src, dst string, length int, note string) {
	fmt.Fprintf(b, "#%d", index)
	if ts != "" {
		fmt.Fprintf(b, " %s", ts)
	}
	if src != "" {
		fmt.Fprintf(b, " %s > %s", src, dst)
	}
	fmt.Fprintf(b, " %d bytes", length)
	if note != "" {
		fmt.Fprintf(b, " (%s)", note)
	}
}
