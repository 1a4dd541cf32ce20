package cli

import (
	"bufio"
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
)

type decodeOptions struct {
	pcap   string
	legacy bool
	output string
	port   uint16
}

func newDecodeCmd() *cobra.Command {
	o := &decodeOptions{}
	cmd := &cobra.Command{
		Use:   "decode [HEX...] | --pcap FILE",
		Short: "Decode DTA datagrams (hex or a pcap/pcapng capture)",
		Long: `decode prints every field of every report in DTA datagrams (docs/PROTOCOL.md).

Input, one of:
  HEX...        each argument is one datagram's UDP payload in hex (spaces,
                colons and a 0x prefix are ignored)
  (nothing)     the same, one datagram per line on stdin (# starts a comment)
  --pcap FILE   a capture (pcap or pcapng; "-" reads stdin) of Ethernet, Linux
                cooked, raw IP or loopback frames: every IPv4/IPv6 UDP datagram
                to port --port (reports) or to port 40044 (ACK/NACK) is decoded,
                and 2-byte datagrams from port --port (a translator's ACKs)

A 2-byte datagram is an ACK/NACK; anything else a report datagram with the
3-byte base header (--legacy: the prototype's 2-byte header). -o json prints
one JSON object per datagram, every field present. The exit code is 1 when
some datagram did not decode.`,
		Example: `  dta decode 01010002000000010000002a
  dta decode "20 07 40 02  01 0009 02 00000001 0000002a  03 000d 04 00000009 0000000000000001"
  echo 0x0105 | dta decode
  dta decode --pcap dta.pcap
  dta decode --pcap dta.pcapng -o json | jq .reports
  tcpdump -i any -w - udp port 40040 | dta decode --pcap -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return usageError("-o: %q is not text or json", o.output)
			}
			if o.port == 0 {
				return usageError("--port: must be 1 to 65535")
			}
			p := &decodePrinter{w: cmd.OutOrStdout(), json: o.output == "json", dec: dta.Decoder{Legacy: o.legacy}}
			var err error
			switch {
			case o.pcap != "" && len(args) > 0:
				return usageError("decode: give hex arguments or --pcap, not both")
			case o.pcap != "":
				err = decodeCapture(cmd, o, p)
			case len(args) > 0:
				for i, a := range args {
					b, herr := decodeHex(a)
					if herr != nil {
						return usageError("argument %d: %v", i+1, herr)
					}
					if err = p.datagram(decodeMeta{index: i + 1}, b); err != nil {
						break
					}
				}
			default:
				err = decodeHexLines(cmd.InOrStdin(), p)
			}
			if err != nil {
				return err
			}
			if p.failed > 0 {
				return fmt.Errorf("%d of %d datagrams did not decode", p.failed, p.count)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(flagUsageError)
	fl := cmd.Flags()
	fl.StringVar(&o.pcap, "pcap", "", "read a pcap or pcapng capture `FILE` (- = stdin)")
	fl.BoolVar(&o.legacy, "legacy", false, "reports use the prototype's 2-byte base header")
	fl.StringVarP(&o.output, "output", "o", "text", "output `format`: text or json")
	fl.Uint16Var(&o.port, "port", dta.Port, "UDP `port` of reports in a capture")
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
		if err := p.datagram(decodeMeta{index: index}, b); err != nil {
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
		u, ok := captureUDP(pkt.link, pkt.data)
		if !ok {
			return nil
		}
		isReport := u.dst.Port() == o.port
		isAck := u.dst.Port() == dta.AckPort || (u.src.Port() == o.port && len(u.payload) == dta.AckLen)
		if !isReport && !isAck {
			return nil
		}
		m := decodeMeta{index: packets, time: pkt.time, src: u.src.String(), dst: u.dst.String(), ack: isAck && !isReport, note: u.note}
		return p.datagram(m, u.payload)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", o.pcap, err)
	}
	if p.count == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "dta: no DTA datagrams (UDP to port %d or %d) among the %d packets of %s\n", o.port, dta.AckPort, packets, o.pcap)
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
	w      io.Writer
	json   bool
	dec    dta.Decoder
	count  int // datagrams printed
	failed int // datagrams with a decoding error
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
	fmt.Fprintf(&b, "#%d", d.Index)
	if d.Time != "" {
		fmt.Fprintf(&b, " %s", d.Time)
	}
	if d.Src != "" {
		fmt.Fprintf(&b, " %s > %s", d.Src, d.Dst)
	}
	fmt.Fprintf(&b, " %d bytes", d.Length)
	if d.Note != "" {
		fmt.Fprintf(&b, " (%s)", d.Note)
	}
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
