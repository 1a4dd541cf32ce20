package decode

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/dta-go/dta/wire/roce"
)

// This file decodes RoCEv2 packets: the BTH, the extended headers its
// opcode carries, the payload, the ICRC (when the IP header is known) and
// the CM MADs sent to QP1 (cm.go). Every byte is parsed by wire/roce; this
// file only chooses what to show and how.

// roceShortPayload is how many payload bytes the text output shows.
const roceShortPayload = 16

// ICRCStatus is the verdict on a RoCEv2 packet's ICRC trailer.
type ICRCStatus string

// ICRC verdicts (ICRC.Status).
const (
	ICRCOK         ICRCStatus = "ok"          // the trailer matches the packet
	ICRCBad        ICRCStatus = "bad"         // it does not: the packet was corrupted, or built wrong
	ICRCNotChecked ICRCStatus = "not checked" // ICRC.Reason says why
)

// RoCE is one decoded RoCEv2 packet; its JSON form is what dta decode -o
// json prints. The header fields are set exactly when the packet's opcode
// carries that header. It never aliases the decoded bytes.
type RoCE struct {
	Index        int           `json:"index"`
	Time         string        `json:"time,omitempty"`
	Src          string        `json:"src,omitempty"`
	Dst          string        `json:"dst,omitempty"`
	Length       int           `json:"length"` // UDP payload: BTH through ICRC
	Note         string        `json:"note,omitempty"`
	Type         string        `json:"type"` // "roce"
	BTH          *BTH          `json:"bth,omitempty"`
	RETH         *RETH         `json:"reth,omitempty"`
	AtomicETH    *AtomicETH    `json:"atomic_eth,omitempty"`
	AETH         *AETH         `json:"aeth,omitempty"`
	AtomicAckETH *AtomicAckETH `json:"atomic_ack_eth,omitempty"`
	ImmDt        *ImmDt        `json:"imm_dt,omitempty"`
	DETH         *DETH         `json:"deth,omitempty"`
	Payload      *Payload      `json:"payload,omitempty"` // absent for opcodes without payload
	CM           *CM           `json:"cm,omitempty"`      // UD SEND Only to QP1
	ICRC         ICRC          `json:"icrc"`
	Error        string        `json:"error,omitempty"` // what did not decode; the headers before it are set
}

// BTH is the base transport header.
type BTH struct {
	Opcode uint8  `json:"opcode"`
	Name   string `json:"name"`
	DestQP uint32 `json:"dest_qp"`
	PSN    uint32 `json:"psn"`
	AckReq bool   `json:"ack_req"`
	SE     bool   `json:"se"`
	MigReq bool   `json:"mig_req"`
	FECN   bool   `json:"fecn"`
	BECN   bool   `json:"becn"`
	PKey   uint16 `json:"pkey"`
	PadCnt uint8  `json:"pad"`
	TVer   uint8  `json:"tver"`
}

// RETH is the RDMA extended transport header of WRITEs and READ requests.
type RETH struct {
	VA     string `json:"va"`   // hex, 0x-prefixed
	RKey   string `json:"rkey"` // hex, 0x-prefixed
	DMALen uint32 `json:"dma_len"`
}

// AtomicETH is the atomic extended transport header of FETCH_ADD and
// COMPARE_SWAP.
type AtomicETH struct {
	VA      string `json:"va"`   // hex, 0x-prefixed
	RKey    string `json:"rkey"` // hex, 0x-prefixed
	SwapAdd uint64 `json:"swap_add"`
	Compare uint64 `json:"compare"`
}

// AETH is the ACK extended transport header of ACKs, NAKs and READ
// responses.
type AETH struct {
	Syndrome uint8  `json:"syndrome"`
	Type     string `json:"type"` // ACK, RNR NAK, NAK or reserved
	Code     uint8  `json:"code"` // credit count code, RNR timer code or NAK code
	Text     string `json:"text"`
	MSN      uint32 `json:"msn"`
}

// AtomicAckETH carries the value an atomic operation found.
type AtomicAckETH struct {
	OrigData uint64 `json:"orig_data"`
}

// ImmDt is the immediate data of a SEND or WRITE with immediate.
type ImmDt struct {
	Data uint32 `json:"data"`
}

// DETH is the datagram extended transport header of UD packets.
type DETH struct {
	QKey  string `json:"qkey"` // hex, 0x-prefixed
	SrcQP uint32 `json:"src_qp"`
}

// Payload is a packet's payload, without its pad bytes.
type Payload struct {
	Length int    `json:"length"` // without pad
	Hex    string `json:"hex"`
}

// ICRC says whether the ICRC trailer matches the packet. The values
// are the trailer's 4 bytes in wire order, as tshark shows them.
type ICRC struct {
	Status   ICRCStatus `json:"status"`
	Carried  string     `json:"carried,omitempty"`  // hex, 0x-prefixed; absent when the packet is shorter than an ICRC
	Computed string     `json:"computed,omitempty"` // hex, 0x-prefixed; absent when not checked
	Reason   string     `json:"reason,omitempty"`   // why it was not checked
}

// DecodeRoCEIP decodes b as a whole IPv4 or IPv6 datagram carrying a
// RoCEv2 packet, and checks its ICRC. m's endpoints are replaced by the
// datagram's. It never fails: what does not decode is in Error.
func DecodeRoCEIP(m Meta, b []byte) *RoCE {
	var env roce.Envelope
	udp, err := env.Decode(b)
	if err != nil {
		d := &RoCE{Index: m.Index, Length: len(b), Type: "roce", ICRC: ICRC{Status: ICRCNotChecked, Reason: "no RoCEv2 datagram"}}
		d.Error = fmt.Errorf("IP/UDP headers of a %d-byte datagram: %w", len(b), err).Error()
		return d
	}
	m.Src = netip.AddrPortFrom(env.Src, env.SrcPort)
	m.Dst = netip.AddrPortFrom(env.Dst, env.DstPort)
	return DecodeRoCE(m, udp, b)
}

// Failed reports whether the packet, or the CM message it carries, did not
// decode.
func (d *RoCE) Failed() bool { return d.Error != "" || (d.CM != nil && d.CM.Error != "") }

// BadICRC reports whether the packet's ICRC was checked and does not
// match.
func (d *RoCE) BadICRC() bool { return d.ICRC.Status == ICRCBad }

// DecodeRoCE decodes the RoCEv2 packet b (a UDP payload: BTH through
// ICRC) carried in the IP datagram ip, or nil if that is unknown: the ICRC
// is checked only with it. A UD SEND Only to QP1 has its CM message
// decoded too. It never fails: what does not decode is in Error (or
// CM.Error).
func DecodeRoCE(m Meta, b, ip []byte) *RoCE {
	src, dst := m.endpoints()
	d := &RoCE{Index: m.Index, Time: m.timeText(), Src: src, Dst: dst, Length: len(b), Note: m.Note, Type: "roce"}
	d.ICRC = checkICRC(b, ip)
	var bth roce.BTH
	if err := bth.Decode(b); errors.Is(err, roce.ErrTruncated) {
		d.Error = fmt.Errorf("%d bytes, a BTH needs %d: %w", len(b), roce.BTHLen, err).Error()
		return d
	}
	d.BTH = &BTH{
		Opcode: uint8(bth.Opcode), Name: bth.Opcode.String(), DestQP: bth.DestQP, PSN: bth.PSN,
		AckReq: bth.AckReq, SE: bth.SE, MigReq: bth.MigReq, FECN: bth.FECN, BECN: bth.BECN,
		PKey: bth.PKey, PadCnt: bth.PadCnt, TVer: bth.TVer,
	}
	var pkt roce.Packet
	if err := pkt.Decode(b); err != nil {
		d.Error = roceDecodeError(&bth, len(b), err).Error()
		return d
	}
	info, _ := bth.Opcode.Info()
	h := info.Headers
	if h&roce.HdrRETH != 0 {
		r := &pkt.RETH
		d.RETH = &RETH{VA: fmt.Sprintf("0x%016x", r.VA), RKey: fmt.Sprintf("0x%08x", r.RKey), DMALen: r.DMALen}
	}
	if h&roce.HdrAtomicETH != 0 {
		a := &pkt.AtomicETH
		d.AtomicETH = &AtomicETH{VA: fmt.Sprintf("0x%016x", a.VA), RKey: fmt.Sprintf("0x%08x", a.RKey), SwapAdd: a.SwapAdd, Compare: a.Compare}
	}
	if h&roce.HdrAETH != 0 {
		s := pkt.AETH.Syndrome
		d.AETH = &AETH{Syndrome: uint8(s), Type: syndromeType(s), Code: s.Value(), Text: s.String(), MSN: pkt.AETH.MSN}
	}
	if h&roce.HdrAtomicAckETH != 0 {
		d.AtomicAckETH = &AtomicAckETH{OrigData: pkt.AtomicAckETH.OrigData}
	}
	if h&roce.HdrImmDt != 0 {
		d.ImmDt = &ImmDt{Data: pkt.ImmDt.Data}
	}
	if h&roce.HdrDETH != 0 {
		d.DETH = &DETH{QKey: fmt.Sprintf("0x%08x", pkt.DETH.QKey), SrcQP: pkt.DETH.SrcQP}
	}
	if info.Payload != roce.PayloadNone {
		d.Payload = &Payload{Length: len(pkt.Payload), Hex: hex.EncodeToString(pkt.Payload)}
	}
	if bth.Opcode == roce.OpUDSendOnly && bth.DestQP == roce.GSIQP {
		d.CM = DecodeCM(pkt.Payload)
	}
	return d
}

// roceDecodeError adds to an error of roce.Packet.Decode what was wrong
// with the n-byte packet whose BTH is h.
func roceDecodeError(h *roce.BTH, n int, err error) error {
	info, known := h.Opcode.Info()
	switch {
	case errors.Is(err, roce.ErrBadTVer):
		return fmt.Errorf("transport header version %d: %w", h.TVer, err)
	case errors.Is(err, roce.ErrUnknownOpcode):
		return fmt.Errorf("opcode 0x%02x: %w", uint8(h.Opcode), err)
	case errors.Is(err, roce.ErrTruncated) && known && n >= roce.BTHLen+roce.ICRCLen:
		return fmt.Errorf("%d bytes, %s needs %d of headers and %d of ICRC: %w", n, info.Name, info.HeaderLen, roce.ICRCLen, err)
	case errors.Is(err, roce.ErrTruncated):
		return fmt.Errorf("%d bytes, a BTH and ICRC need %d: %w", n, roce.BTHLen+roce.ICRCLen, err)
	case errors.Is(err, roce.ErrBadLength) && known:
		return fmt.Errorf("%s carries no payload, this one has %d bytes after its headers: %w", info.Name, n-info.HeaderLen-roce.ICRCLen, err)
	case errors.Is(err, roce.ErrBadPad) && known:
		return fmt.Errorf("pad count %d, payload and pad %d bytes: %w", h.PadCnt, n-info.HeaderLen-roce.ICRCLen, err)
	}
	return fmt.Errorf("decoding the packet: %w", err)
}

// checkICRC checks the ICRC trailer of the UDP payload b against the IP
// datagram ip that carried it (nil if unknown).
func checkICRC(b, ip []byte) ICRC {
	var c ICRC
	if len(b) >= roce.ICRCLen {
		c.Carried = "0x" + hex.EncodeToString(b[len(b)-roce.ICRCLen:])
	}
	if ip == nil {
		c.Status, c.Reason = ICRCNotChecked, "no IP header"
		return c
	}
	crc, err := roce.ICRC(ip)
	switch {
	case errors.Is(err, roce.ErrNotRoCE):
		c.Status, c.Reason = ICRCNotChecked, "IPv4 options, IPv6 extension headers or an IP fragment"
		return c
	case errors.Is(err, roce.ErrTruncated):
		c.Status, c.Reason = ICRCNotChecked, "packet or capture truncated"
		return c
	case errors.Is(err, roce.ErrBadLength):
		c.Status, c.Reason = ICRCNotChecked, "IP and UDP lengths disagree"
		return c
	case err != nil:
		c.Status, c.Reason = ICRCNotChecked, err.Error()
		return c
	}
	c.Computed = "0x" + hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, crc))
	c.Status = ICRCBad
	if c.Computed == c.Carried {
		c.Status = ICRCOK
	}
	return c
}

// syndromeType names the type of an AETH syndrome.
func syndromeType(s roce.Syndrome) string {
	switch s.Type() {
	case roce.SyndromeACK:
		return "ACK"
	case roce.SyndromeRNRNAK:
		return "RNR NAK"
	case roce.SyndromeNAK:
		return "NAK"
	}
	return "reserved"
}

// Text is the packet as dta decode prints it: a line for the BTH, then
// one per extended header, the payload (its first 16 bytes), the CM
// message and the ICRC verdict.
func (d *RoCE) Text() string {
	var b strings.Builder
	textPrefix(&b, d.Index, d.Time, d.Src, d.Dst, d.Length, d.Note)
	b.WriteString(": RoCEv2")
	if h := d.BTH; h != nil {
		fmt.Fprintf(&b, " %s [0x%02x] qp=0x%06x psn=%d ack_req=%d pkey=0x%04x pad=%d", h.Name, h.Opcode, h.DestQP, h.PSN, bool01(h.AckReq), h.PKey, h.PadCnt)
		for _, f := range []struct {
			set  bool
			name string
		}{{h.SE, "se"}, {h.MigReq, "mig_req"}, {h.FECN, "fecn"}, {h.BECN, "becn"}} {
			if f.set {
				b.WriteString(" " + f.name)
			}
		}
		if h.TVer != 0 {
			fmt.Fprintf(&b, " tver=%d", h.TVer)
		}
	}
	if d.Error != "" {
		fmt.Fprintf(&b, ": error: %s", d.Error)
	}
	b.WriteByte('\n')
	if r := d.RETH; r != nil {
		fmt.Fprintf(&b, "  reth: va=%s rkey=%s dma_len=%d\n", r.VA, r.RKey, r.DMALen)
	}
	if a := d.AtomicETH; a != nil {
		fmt.Fprintf(&b, "  atomic_eth: va=%s rkey=%s", a.VA, a.RKey)
		if d.BTH.Opcode == uint8(roce.OpFetchAdd) {
			fmt.Fprintf(&b, " add=%d\n", a.SwapAdd)
		} else {
			fmt.Fprintf(&b, " compare=%d swap=%d\n", a.Compare, a.SwapAdd)
		}
	}
	if a := d.AETH; a != nil {
		fmt.Fprintf(&b, "  aeth: %s msn=%d [syndrome 0x%02x]\n", aethText(a), a.MSN, a.Syndrome)
	}
	if a := d.AtomicAckETH; a != nil {
		fmt.Fprintf(&b, "  atomic_ack_eth: orig_data=%d (0x%016x)\n", a.OrigData, a.OrigData)
	}
	if i := d.ImmDt; i != nil {
		fmt.Fprintf(&b, "  imm_dt: 0x%08x (%d)\n", i.Data, i.Data)
	}
	if e := d.DETH; e != nil {
		fmt.Fprintf(&b, "  deth: qkey=%s src_qp=0x%06x\n", e.QKey, e.SrcQP)
	}
	if pl := d.Payload; pl != nil {
		fmt.Fprintf(&b, "  payload: %d bytes", pl.Length)
		if pl.Length > 0 {
			if len(pl.Hex) > 2*roceShortPayload {
				fmt.Fprintf(&b, " %s...", pl.Hex[:2*roceShortPayload])
			} else {
				fmt.Fprintf(&b, " %s", pl.Hex)
			}
		}
		b.WriteByte('\n')
	}
	if c := d.CM; c != nil {
		c.text(&b)
	}
	fmt.Fprintf(&b, "  icrc: %s", d.ICRC.Status)
	switch {
	case d.ICRC.Status == ICRCOK:
		fmt.Fprintf(&b, " (%s)", d.ICRC.Carried)
	case d.ICRC.Status == ICRCBad:
		fmt.Fprintf(&b, " (carried %s, computed %s)", d.ICRC.Carried, d.ICRC.Computed)
	case d.ICRC.Reason != "":
		fmt.Fprintf(&b, " (%s)", d.ICRC.Reason)
	}
	b.WriteByte('\n')
	return b.String()
}

// aethText describes an AETH syndrome: "ACK credits=unlimited",
// "RNR NAK timer=1.28ms", "NAK code=2 (remote access error)".
func aethText(a *AETH) string {
	s := roce.Syndrome(a.Syndrome)
	switch s.Type() {
	case roce.SyndromeACK:
		if n := roce.CreditCount(s.Value()); n >= 0 {
			return fmt.Sprintf("ACK credits=%d", n)
		}
		return "ACK credits=unlimited"
	case roce.SyndromeRNRNAK:
		return "RNR NAK timer=" + roce.RNRTimer(s.Value()).String()
	case roce.SyndromeNAK:
		meaning, ok := strings.CutPrefix(a.Text, "NAK ")
		if !ok {
			meaning = "reserved"
		}
		return fmt.Sprintf("NAK code=%d (%s)", s.Value(), meaning)
	}
	return "reserved syndrome"
}

func bool01(v bool) int {
	if v {
		return 1
	}
	return 0
}
