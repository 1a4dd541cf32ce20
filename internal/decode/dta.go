package decode

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dta-go/dta/wire/dta"
)

// Datagram is one decoded DTA datagram: a report datagram (Type "report",
// Header and Reports) or an ACK/NACK (Type "ack", Ack). Its JSON form is
// what dta decode -o json prints. It never aliases the decoded bytes.
type Datagram struct {
	Index   int      `json:"index"`
	Time    string   `json:"time,omitempty"` // RFC 3339, UTC, nanoseconds
	Src     string   `json:"src,omitempty"`
	Dst     string   `json:"dst,omitempty"`
	Length  int      `json:"length"` // the UDP payload's
	Note    string   `json:"note,omitempty"`
	Type    string   `json:"type"` // "report" or "ack"
	Header  *Header  `json:"header,omitempty"`
	Ack     *Ack     `json:"ack,omitempty"`
	Reports []Report `json:"reports"` // never nil
	Error   string   `json:"error,omitempty"`
}

// Header is a report datagram's base header.
type Header struct {
	Opcode     uint8  `json:"opcode"`
	Name       string `json:"name"` // the primitive, "-ext" for extended formats, "batch" or "unknown"
	Seq        uint8  `json:"seq"`
	Flags      uint8  `json:"flags"`
	Immediate  bool   `json:"immediate"`
	Retransmit bool   `json:"retransmit"`
	Legacy     bool   `json:"legacy"` // the prototype's 2-byte header, which has no Seq
	Batch      bool   `json:"batch"`
}

// Ack is a translator's ACK or NACK of a datagram's sequence number.
type Ack struct {
	Seq  uint8 `json:"seq"`
	NACK bool  `json:"nack"`
}

// Report holds every field of a report; the fields its primitive does not
// use are zero. A report that did not decode has only Opcode, Primitive
// and Error.
type Report struct {
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

	// Sketch-Merge: the run's epoch, row and first column (its counters
	// are Value). The JSON form carries them in Sketch, present only for
	// Sketch-Merge reports, so the other reports' JSON is unchanged.
	Epoch  uint32     `json:"-"`
	Row    uint8      `json:"-"`
	Column uint32     `json:"-"`
	Sketch *SketchRun `json:"sketch,omitempty"`
}

// SketchRun is where a Sketch-Merge report's counters go: its epoch, row
// and first column.
type SketchRun struct {
	Epoch  uint32 `json:"epoch"`
	Row    uint8  `json:"row"`
	Column uint32 `json:"column"`
}

// DTA decodes b, a UDP payload, as a DTA datagram: an ACK/NACK if it is 2
// bytes long (and d is not Legacy), a report datagram otherwise. It never
// fails: what does not decode is in the Error fields, and the reports
// before and after a bad one in a batch are decoded still.
func (d *Decoder) DTA(m Meta, b []byte) *Datagram {
	if len(b) == dta.AckLen && !d.Legacy {
		return d.Ack(m, b)
	}
	dg := newDatagram(&m, b, "report")
	dec := dta.Decoder{Legacy: d.Legacy}
	var in dta.Datagram
	if err := dec.Decode(b, &in); err != nil {
		dg.Error = err.Error()
		if len(b) >= dta.LegacyHeaderLen {
			h := in.Header
			dg.Header = newHeader(h, d.Legacy, h.Opcode == dta.OpBatch)
		}
		return dg
	}
	dg.Header = newHeader(in.Header, d.Legacy, in.Batch())
	for {
		var r dta.Report
		err := in.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			dg.Reports = append(dg.Reports, Report{Opcode: uint8(r.Opcode), Primitive: r.Primitive().String(), Error: err.Error()})
			if in.Done() {
				break
			}
			continue
		}
		dg.Reports = append(dg.Reports, NewReport(&r))
	}
	return dg
}

// Ack decodes b, a UDP payload known to be an ACK/NACK (sent to
// dta.AckPort). It never fails: what does not decode is in Error.
func (d *Decoder) Ack(m Meta, b []byte) *Datagram {
	dg := newDatagram(&m, b, "ack")
	var a dta.Ack
	if err := a.Decode(b); err != nil {
		dg.Error = err.Error()
	} else {
		dg.Ack = &Ack{Seq: a.Seq, NACK: a.NACK}
	}
	return dg
}

func newDatagram(m *Meta, b []byte, typ string) *Datagram {
	src, dst := m.endpoints()
	return &Datagram{Index: m.Index, Time: m.timeText(), Src: src, Dst: dst, Length: len(b), Note: m.Note, Type: typ, Reports: []Report{}}
}

// Failed reports whether the datagram, or one of its reports, did not
// decode.
func (dg *Datagram) Failed() bool {
	if dg.Error != "" {
		return true
	}
	for i := range dg.Reports {
		if dg.Reports[i].Error != "" {
			return true
		}
	}
	return false
}

func newHeader(h dta.Header, legacy, batch bool) *Header {
	return &Header{
		Opcode: uint8(h.Opcode), Name: opcodeName(h.Opcode), Seq: h.Seq, Flags: uint8(h.Flags),
		Immediate: h.Immediate(), Retransmit: h.Retransmit(), Legacy: legacy, Batch: batch,
	}
}

func opcodeName(op dta.Opcode) string {
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

// NewReport describes a decoded report, copying its key and value: the
// form DTA gives each report of a datagram.
func NewReport(r *dta.Report) Report {
	d := Report{
		Opcode: uint8(r.Opcode), Format: "compat", Primitive: r.Primitive().String(),
		Store: r.Store, Redundancy: r.Redundancy, Delta: r.Delta, List: r.List, Hop: r.Hop, PathLen: r.PathLen,
		Epoch: r.Epoch, Row: r.Row, Column: r.Column,
	}
	if r.Opcode.Extended() {
		d.Format = "extended"
	}
	if r.Primitive() == dta.SketchMerge {
		d.Sketch = &SketchRun{Epoch: r.Epoch, Row: r.Row, Column: r.Column}
	}
	if len(r.Key) > 0 {
		d.Key = "0x" + hex.EncodeToString(r.Key)
		d.KeyText = keyText(r.Opcode, r.Key)
	}
	if len(r.Value) > 0 {
		d.Value = "0x" + hex.EncodeToString(r.Value)
	}
	return d
}

// keyText is a report's key in the form dta.ParseKey reads: decimal for
// compat reports, a 5-tuple or hex for extended ones.
func keyText(op dta.Opcode, key []byte) string {
	return dta.Key{Compat: !op.Extended() && len(key) == 4, Bytes: key}.String()
}

// hexBytes reads back the 0x-prefixed hex of a Report field.
func hexBytes(s string) []byte {
	b, _ := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	return b
}

// Text formats the fields of r that its primitive uses, on one line:
// "keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01]". It is
// meant for reports that decoded (Error empty).
func (r *Report) Text() string {
	var b strings.Builder
	op := dta.Opcode(r.Opcode)
	key := hexBytes(r.Key)
	value := hexBytes(r.Value)
	b.WriteString(op.Primitive().String())
	switch op.Primitive() {
	case dta.KeyWrite:
		fmt.Fprintf(&b, " key=%s value=%s n=%d", keyText(op, key), valueText(value), r.Redundancy)
	case dta.KeyIncrement:
		fmt.Fprintf(&b, " key=%s delta=%d n=%d", keyText(op, key), r.Delta, r.Redundancy)
	case dta.Append:
		fmt.Fprintf(&b, " list=%d value=%s", r.List, valueText(value))
	case dta.Postcard:
		fmt.Fprintf(&b, " key=%s hop=%d path_len=%d value=%s", keyText(op, key), r.Hop, r.PathLen, valueText(value))
	case dta.SketchMerge:
		sr := SketchRun{Epoch: r.Epoch, Row: r.Row, Column: r.Column}
		if r.Sketch != nil { // read back from JSON
			sr = *r.Sketch
		}
		fmt.Fprintf(&b, " epoch=%d row=%d column=%d counters=[", sr.Epoch, sr.Row, sr.Column)
		for i := 0; i+8 <= len(value); i += 8 {
			if i > 0 {
				b.WriteByte(' ')
			}
			if i == 8*16 {
				fmt.Fprintf(&b, "… %d more", (len(value)-i)/8)
				break
			}
			fmt.Fprintf(&b, "%d", int64(binary.BigEndian.Uint64(value[i:])))
		}
		b.WriteByte(']')
	}
	format := "compat"
	if op.Extended() {
		format = "extended"
	}
	fmt.Fprintf(&b, " store=%d [%s 0x%02x]", r.Store, format, r.Opcode)
	return b.String()
}

// valueText prints bytes in hex, and 4-byte values also in decimal.
func valueText(v []byte) string {
	s := "0x" + hex.EncodeToString(v)
	if len(v) == 4 {
		s += " (" + strconv.FormatUint(uint64(binary.BigEndian.Uint32(v)), 10) + ")"
	}
	return s
}

// Text is the datagram as dta decode prints it: a line for the datagram
// ("#3 2023-11-14T22:13:20Z 10.0.0.1:1 > 10.0.0.2:40040 12 bytes: keywrite
// [0x01] seq=1 flags=0x00"), then one per report.
func (dg *Datagram) Text() string {
	var b strings.Builder
	textPrefix(&b, dg.Index, dg.Time, dg.Src, dg.Dst, dg.Length, dg.Note)
	switch {
	case dg.Ack != nil:
		kind := "ACK"
		if dg.Ack.NACK {
			kind = "NACK"
		}
		fmt.Fprintf(&b, ": %s seq=%d", kind, dg.Ack.Seq)
	case dg.Header != nil:
		h := dg.Header
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
	if dg.Error != "" {
		fmt.Fprintf(&b, ": error: %s", dg.Error)
	}
	b.WriteByte('\n')
	for i := range dg.Reports {
		r := &dg.Reports[i]
		fmt.Fprintf(&b, "  report %d: ", i+1)
		if r.Error != "" {
			if r.Opcode != 0 {
				fmt.Fprintf(&b, "opcode 0x%02x: ", r.Opcode)
			}
			fmt.Fprintf(&b, "error: %s\n", r.Error)
			continue
		}
		b.WriteString(r.Text())
		if r.KeyText != "" && r.Key != r.KeyText {
			fmt.Fprintf(&b, " key_bytes=%s", r.Key)
		}
		b.WriteByte('\n')
	}
	return b.String()
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
