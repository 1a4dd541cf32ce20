package cli

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// This file decodes RoCEv2 packets for dta decode: the BTH, the extended
// headers its opcode carries, the payload, the ICRC (when the IP header is
// known) and the CM MADs sent to QP1. Every byte is parsed by
// wire/roce; this file only chooses what to show and how.

// roceShortPayload is how many payload bytes the text output shows.
const roceShortPayload = 16

// ICRC verdicts (decodedICRC.Status).
const (
	icrcOK         = "ok"
	icrcBad        = "bad"
	icrcNotChecked = "not checked"
)

// decodedRoCE is the JSON form of one RoCEv2 packet. The header objects
// are present exactly when the packet's opcode carries that header.
type decodedRoCE struct {
	Index        int                  `json:"index"`
	Time         string               `json:"time,omitempty"`
	Src          string               `json:"src,omitempty"`
	Dst          string               `json:"dst,omitempty"`
	Length       int                  `json:"length"` // UDP payload: BTH through ICRC
	Note         string               `json:"note,omitempty"`
	Type         string               `json:"type"` // "roce"
	BTH          *decodedBTH          `json:"bth,omitempty"`
	RETH         *decodedRETH         `json:"reth,omitempty"`
	AtomicETH    *decodedAtomicETH    `json:"atomic_eth,omitempty"`
	AETH         *decodedAETH         `json:"aeth,omitempty"`
	AtomicAckETH *decodedAtomicAckETH `json:"atomic_ack_eth,omitempty"`
	ImmDt        *decodedImmDt        `json:"imm_dt,omitempty"`
	DETH         *decodedDETH         `json:"deth,omitempty"`
	Payload      *decodedPayload      `json:"payload,omitempty"` // absent for opcodes without payload
	CM           *decodedCM           `json:"cm,omitempty"`      // UD SEND Only to QP1
	ICRC         decodedICRC          `json:"icrc"`
	Error        string               `json:"error,omitempty"`
}

type decodedBTH struct {
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

type decodedRETH struct {
	VA     string `json:"va"`   // hex, 0x-prefixed
	RKey   string `json:"rkey"` // hex, 0x-prefixed
	DMALen uint32 `json:"dma_len"`
}

type decodedAtomicETH struct {
	VA      string `json:"va"`   // hex, 0x-prefixed
	RKey    string `json:"rkey"` // hex, 0x-prefixed
	SwapAdd uint64 `json:"swap_add"`
	Compare uint64 `json:"compare"`
}

type decodedAETH struct {
	Syndrome uint8  `json:"syndrome"`
	Type     string `json:"type"` // ACK, RNR NAK, NAK or reserved
	Code     uint8  `json:"code"` // credit count code, RNR timer code or NAK code
	Text     string `json:"text"`
	MSN      uint32 `json:"msn"`
}

type decodedAtomicAckETH struct {
	OrigData uint64 `json:"orig_data"`
}

type decodedImmDt struct {
	Data uint32 `json:"data"`
}

type decodedDETH struct {
	QKey  string `json:"qkey"` // hex, 0x-prefixed
	SrcQP uint32 `json:"src_qp"`
}

type decodedPayload struct {
	Length int    `json:"length"` // without pad
	Hex    string `json:"hex"`
}

// decodedICRC says whether the ICRC trailer matches the packet. The values
// are the trailer's 4 bytes in wire order, as tshark shows them.
type decodedICRC struct {
	Status   string `json:"status"` // ok, bad or not checked
	Carried  string `json:"carried,omitempty"`
	Computed string `json:"computed,omitempty"`
	Reason   string `json:"reason,omitempty"` // why it was not checked
}

// decodedCM is a MAD sent to QP1: its header and the key fields of the
// CM message it names. Fields a message does not carry are omitted.
type decodedCM struct {
	Class              uint8        `json:"class"`
	Attribute          string       `json:"attribute"` // REQ, REP, RTU, REJ, MRA, DREQ, DREP, ...
	AttrID             uint16       `json:"attr_id"`
	TID                string       `json:"tid"` // hex, 0x-prefixed
	LocalCommID        uint32       `json:"local_comm_id"`
	RemoteCommID       *uint32      `json:"remote_comm_id,omitempty"` // all but REQ
	ServiceID          string       `json:"service_id,omitempty"`     // REQ
	QPN                *uint32      `json:"qpn,omitempty"`            // REQ, REP: the sender's QP
	RemoteQPN          *uint32      `json:"remote_qpn,omitempty"`     // DREQ: the receiver's QP
	StartingPSN        *uint32      `json:"starting_psn,omitempty"`
	PathMTU            int          `json:"path_mtu,omitempty"` // REQ, bytes
	ResponderResources *uint8       `json:"responder_resources,omitempty"`
	InitiatorDepth     *uint8       `json:"initiator_depth,omitempty"`
	Reason             string       `json:"reason,omitempty"`      // REJ
	ReasonCode         uint16       `json:"reason_code,omitempty"` // REJ
	Message            string       `json:"message,omitempty"`     // REJ: the message rejected; MRA: the message acknowledged
	PrivateDataLen     int          `json:"private_data_len"`      // the message's fixed-size field
	PrivateDataUsed    int          `json:"private_data_used"`     // up to its last non-zero byte
	RDMACM             *decodedIPCM `json:"rdma_cm,omitempty"`     // REQ of an IP-based service
	Note               string       `json:"note,omitempty"`        // why the message was not decoded
	Error              string       `json:"error,omitempty"`
}

// decodedIPCM is the rdma_cm IP-CM header of a REQ's private data.
type decodedIPCM struct {
	PortSpace string `json:"port_space"`
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	Error     string `json:"error,omitempty"`
}

// roce decodes the RoCEv2 packet b (a UDP payload: BTH through ICRC) and
// prints it. ip is the IP datagram that carried it, or nil when unknown:
// the ICRC is checked only with it.
func (p *decodePrinter) roce(m decodeMeta, b, ip []byte) error {
	d := decodeRoCE(m, b, ip)
	return p.printRoCE(&d)
}

// roceIP decodes b as a whole IPv4 or IPv6 datagram carrying a RoCEv2
// packet (hex input with --roce --ip).
func (p *decodePrinter) roceIP(m decodeMeta, b []byte) error {
	var env roce.Envelope
	udp, err := env.Decode(b)
	if err != nil {
		d := decodedRoCE{Index: m.index, Length: len(b), Type: "roce", ICRC: decodedICRC{Status: icrcNotChecked, Reason: "no RoCEv2 datagram"}}
		d.Error = fmt.Errorf("IP/UDP headers of a %d-byte datagram: %w", len(b), err).Error()
		return p.printRoCE(&d)
	}
	m.src = netip.AddrPortFrom(env.Src, env.SrcPort).String()
	m.dst = netip.AddrPortFrom(env.Dst, env.DstPort).String()
	return p.roce(m, udp, b)
}

// printRoCE counts and prints a decoded RoCEv2 packet.
func (p *decodePrinter) printRoCE(d *decodedRoCE) error {
	p.count++
	if d.Error != "" || (d.CM != nil && d.CM.Error != "") {
		p.failed++
	}
	if d.ICRC.Status == icrcBad {
		p.badICRC++
	}
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		return enc.Encode(d)
	}
	_, err := io.WriteString(p.w, roceText(d))
	return err
}

// decodeRoCE decodes the RoCEv2 packet b carried in the IP datagram ip
// (nil if unknown). It never fails: what does not decode is in Error.
func decodeRoCE(m decodeMeta, b, ip []byte) decodedRoCE {
	d := decodedRoCE{Index: m.index, Src: m.src, Dst: m.dst, Length: len(b), Note: m.note, Type: "roce"}
	if !m.time.IsZero() {
		d.Time = m.time.UTC().Format(time.RFC3339Nano)
	}
	d.ICRC = checkICRC(b, ip)
	var bth roce.BTH
	if err := bth.Decode(b); errors.Is(err, roce.ErrTruncated) {
		d.Error = fmt.Errorf("%d bytes, a BTH needs %d: %w", len(b), roce.BTHLen, err).Error()
		return d
	}
	d.BTH = &decodedBTH{
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
		d.RETH = &decodedRETH{VA: fmt.Sprintf("0x%016x", r.VA), RKey: fmt.Sprintf("0x%08x", r.RKey), DMALen: r.DMALen}
	}
	if h&roce.HdrAtomicETH != 0 {
		a := &pkt.AtomicETH
		d.AtomicETH = &decodedAtomicETH{VA: fmt.Sprintf("0x%016x", a.VA), RKey: fmt.Sprintf("0x%08x", a.RKey), SwapAdd: a.SwapAdd, Compare: a.Compare}
	}
	if h&roce.HdrAETH != 0 {
		s := pkt.AETH.Syndrome
		d.AETH = &decodedAETH{Syndrome: uint8(s), Type: syndromeType(s), Code: s.Value(), Text: s.String(), MSN: pkt.AETH.MSN}
	}
	if h&roce.HdrAtomicAckETH != 0 {
		d.AtomicAckETH = &decodedAtomicAckETH{OrigData: pkt.AtomicAckETH.OrigData}
	}
	if h&roce.HdrImmDt != 0 {
		d.ImmDt = &decodedImmDt{Data: pkt.ImmDt.Data}
	}
	if h&roce.HdrDETH != 0 {
		d.DETH = &decodedDETH{QKey: fmt.Sprintf("0x%08x", pkt.DETH.QKey), SrcQP: pkt.DETH.SrcQP}
	}
	if info.Payload != roce.PayloadNone {
		d.Payload = &decodedPayload{Length: len(pkt.Payload), Hex: hex.EncodeToString(pkt.Payload)}
	}
	if bth.Opcode == roce.OpUDSendOnly && bth.DestQP == roce.GSIQP {
		d.CM = decodeCM(pkt.Payload)
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
func checkICRC(b, ip []byte) decodedICRC {
	var c decodedICRC
	if len(b) >= roce.ICRCLen {
		c.Carried = "0x" + hex.EncodeToString(b[len(b)-roce.ICRCLen:])
	}
	if ip == nil {
		c.Status, c.Reason = icrcNotChecked, "no IP header"
		return c
	}
	crc, err := roce.ICRC(ip)
	switch {
	case errors.Is(err, roce.ErrNotRoCE):
		c.Status, c.Reason = icrcNotChecked, "IPv4 options, IPv6 extension headers or an IP fragment"
		return c
	case errors.Is(err, roce.ErrTruncated):
		c.Status, c.Reason = icrcNotChecked, "packet or capture truncated"
		return c
	case errors.Is(err, roce.ErrBadLength):
		c.Status, c.Reason = icrcNotChecked, "IP and UDP lengths disagree"
		return c
	case err != nil:
		c.Status, c.Reason = icrcNotChecked, err.Error()
		return c
	}
	c.Computed = "0x" + hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, crc))
	c.Status = icrcBad
	if c.Computed == c.Carried {
		c.Status = icrcOK
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

// decodeCM decodes the MAD of a UD SEND Only to QP1.
func decodeCM(mad []byte) *decodedCM {
	c := &decodedCM{}
	var cm roce.CM
	err := cm.Decode(mad)
	if errors.Is(err, roce.ErrTruncated) {
		c.Error = fmt.Errorf("a MAD is %d bytes, this payload %d: %w", roce.MADLen, len(mad), err).Error()
		return c
	}
	h := &cm.Header
	c.Class, c.Attribute, c.AttrID, c.TID = h.MgmtClass, h.AttrID.String(), uint16(h.AttrID), fmt.Sprintf("0x%016x", h.TID)
	switch {
	case errors.Is(err, roce.ErrNotCM):
		c.Attribute = fmt.Sprintf("attribute(0x%x)", uint16(h.AttrID))
		c.Note = fmt.Sprintf("not a CM MAD (base version %d, class 0x%02x, class version %d): not decoded", h.BaseVersion, h.MgmtClass, h.ClassVersion)
		return c
	case errors.Is(err, roce.ErrUnknownAttribute):
		c.Note = "not decoded"
		return c
	case err != nil:
		c.Error = fmt.Errorf("CM %s: %w", h.AttrID, err).Error()
		return c
	}
	u32 := func(v uint32) *uint32 { return &v }
	u8 := func(v uint8) *uint8 { return &v }
	var private []byte
	switch h.AttrID {
	case roce.AttrREQ:
		r := &cm.REQ
		c.LocalCommID, c.ServiceID = r.LocalCommID, fmt.Sprintf("0x%016x", r.ServiceID)
		c.QPN, c.StartingPSN, c.PathMTU = u32(r.LocalQPN), u32(r.StartingPSN), r.PathMTU.Bytes()
		c.ResponderResources, c.InitiatorDepth = u8(r.ResponderResources), u8(r.InitiatorDepth)
		private = r.PrivateData[:]
		if ps, port, ok := roce.ParseServiceID(r.ServiceID); ok {
			c.RDMACM = decodeIPCM(ps, port, private)
		}
	case roce.AttrREP:
		r := &cm.REP
		c.LocalCommID, c.RemoteCommID = r.LocalCommID, u32(r.RemoteCommID)
		c.QPN, c.StartingPSN = u32(r.LocalQPN), u32(r.StartingPSN)
		c.ResponderResources, c.InitiatorDepth = u8(r.ResponderResources), u8(r.InitiatorDepth)
		private = r.PrivateData[:]
	case roce.AttrRTU:
		c.LocalCommID, c.RemoteCommID, private = cm.RTU.LocalCommID, u32(cm.RTU.RemoteCommID), cm.RTU.PrivateData[:]
	case roce.AttrREJ:
		r := &cm.REJ
		c.LocalCommID, c.RemoteCommID, private = r.LocalCommID, u32(r.RemoteCommID), r.PrivateData[:]
		c.Reason, c.ReasonCode, c.Message = r.Reason.String(), uint16(r.Reason), cmMessageName(r.MessageRejected)
	case roce.AttrMRA:
		r := &cm.MRA
		c.LocalCommID, c.RemoteCommID, private = r.LocalCommID, u32(r.RemoteCommID), r.PrivateData[:]
		c.Message = cmMessageName(r.MessageMRAed)
	case roce.AttrDREQ:
		r := &cm.DREQ
		c.LocalCommID, c.RemoteCommID, private = r.LocalCommID, u32(r.RemoteCommID), r.PrivateData[:]
		c.RemoteQPN = u32(r.RemoteQPN)
	case roce.AttrDREP:
		c.LocalCommID, c.RemoteCommID, private = cm.DREP.LocalCommID, u32(cm.DREP.RemoteCommID), cm.DREP.PrivateData[:]
	}
	c.PrivateDataLen = len(private)
	for i := len(private) - 1; i >= 0; i-- {
		if private[i] != 0 {
			c.PrivateDataUsed = i + 1
			break
		}
	}
	return c
}

// decodeIPCM decodes the rdma_cm header at the start of a REQ's private
// data; the destination port is the service ID's.
func decodeIPCM(ps roce.PortSpace, port uint16, private []byte) *decodedIPCM {
	d := &decodedIPCM{PortSpace: portSpaceName(ps)}
	var h roce.IPCMHeader
	if err := h.Decode(private); err != nil {
		d.Error = fmt.Errorf("IP-CM private data header: %w", err).Error()
		return d
	}
	d.Src = netip.AddrPortFrom(h.Src, h.SrcPort).String()
	d.Dst = netip.AddrPortFrom(h.Dst, port).String()
	return d
}

func portSpaceName(ps roce.PortSpace) string {
	switch ps {
	case roce.PortSpaceTCP:
		return "tcp"
	case roce.PortSpaceUDP:
		return "udp"
	case roce.PortSpaceIPoIB:
		return "ipoib"
	case roce.PortSpaceIB:
		return "ib"
	}
	return fmt.Sprintf("0x%04x", uint16(ps))
}

// cmMessageName names the message code of REJ.MessageRejected and
// MRA.MessageMRAed.
func cmMessageName(m uint8) string {
	switch m {
	case roce.CMMsgREQ:
		return "REQ"
	case roce.CMMsgREP:
		return "REP"
	case roce.CMMsgOther:
		return "other"
	}
	return fmt.Sprintf("reserved(%d)", m)
}

// roceText formats a decoded RoCEv2 packet for people: a line for the
// BTH, then one per extended header, the payload, the CM message and the
// ICRC verdict.
func roceText(d *decodedRoCE) string {
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
		cmText(&b, c)
	}
	fmt.Fprintf(&b, "  icrc: %s", d.ICRC.Status)
	switch {
	case d.ICRC.Status == icrcOK:
		fmt.Fprintf(&b, " (%s)", d.ICRC.Carried)
	case d.ICRC.Status == icrcBad:
		fmt.Fprintf(&b, " (carried %s, computed %s)", d.ICRC.Carried, d.ICRC.Computed)
	case d.ICRC.Reason != "":
		fmt.Fprintf(&b, " (%s)", d.ICRC.Reason)
	}
	b.WriteByte('\n')
	return b.String()
}

// aethText describes an AETH syndrome: "ACK credits=unlimited",
// "RNR NAK timer=1.28ms", "NAK code=2 (remote access error)".
func aethText(a *decodedAETH) string {
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

// cmText formats the CM line of a MAD sent to QP1.
func cmText(b *strings.Builder, c *decodedCM) {
	if c.Attribute == "" { // not even a MAD header
		fmt.Fprintf(b, "  cm: error: %s\n", c.Error)
		return
	}
	fmt.Fprintf(b, "  cm: %s tid=%s", c.Attribute, c.TID)
	switch {
	case c.Error != "":
		fmt.Fprintf(b, ": error: %s\n", c.Error)
		return
	case c.Note != "":
		fmt.Fprintf(b, ": %s\n", c.Note)
		return
	}
	fmt.Fprintf(b, " local_comm_id=0x%08x", c.LocalCommID)
	if c.RemoteCommID != nil {
		fmt.Fprintf(b, " remote_comm_id=0x%08x", *c.RemoteCommID)
	}
	if c.ServiceID != "" {
		fmt.Fprintf(b, " service_id=%s", c.ServiceID)
	}
	if c.QPN != nil {
		fmt.Fprintf(b, " qpn=0x%06x", *c.QPN)
	}
	if c.RemoteQPN != nil {
		fmt.Fprintf(b, " remote_qpn=0x%06x", *c.RemoteQPN)
	}
	if c.StartingPSN != nil {
		fmt.Fprintf(b, " starting_psn=%d", *c.StartingPSN)
	}
	if c.PathMTU != 0 {
		fmt.Fprintf(b, " mtu=%d", c.PathMTU)
	}
	if c.ResponderResources != nil {
		fmt.Fprintf(b, " responder_resources=%d initiator_depth=%d", *c.ResponderResources, *c.InitiatorDepth)
	}
	if c.Reason != "" {
		fmt.Fprintf(b, " reason=%d (%s) rejected=%s", c.ReasonCode, c.Reason, c.Message)
	} else if c.Message != "" {
		fmt.Fprintf(b, " mra_for=%s", c.Message)
	}
	fmt.Fprintf(b, " private_data=%d bytes (%d in use)\n", c.PrivateDataLen, c.PrivateDataUsed)
	if r := c.RDMACM; r != nil {
		if r.Error != "" {
			fmt.Fprintf(b, "  rdma_cm: %s: error: %s\n", r.PortSpace, r.Error)
		} else {
			fmt.Fprintf(b, "  rdma_cm: %s %s > %s\n", r.PortSpace, r.Src, r.Dst)
		}
	}
}

func bool01(v bool) int {
	if v {
		return 1
	}
	return 0
}
