package decode

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/dta-go/dta/wire/roce"
)

// CM is a MAD sent to QP1: its header and the key fields of the
// CM message it names. Fields a message does not carry are omitted.
type CM struct {
	Class              uint8   `json:"class"`
	Attribute          string  `json:"attribute"` // REQ, REP, RTU, REJ, MRA, DREQ, DREP, ...
	AttrID             uint16  `json:"attr_id"`
	TID                string  `json:"tid"` // hex, 0x-prefixed
	LocalCommID        uint32  `json:"local_comm_id"`
	RemoteCommID       *uint32 `json:"remote_comm_id,omitempty"` // all but REQ
	ServiceID          string  `json:"service_id,omitempty"`     // REQ
	QPN                *uint32 `json:"qpn,omitempty"`            // REQ, REP: the sender's QP
	RemoteQPN          *uint32 `json:"remote_qpn,omitempty"`     // DREQ: the receiver's QP
	StartingPSN        *uint32 `json:"starting_psn,omitempty"`
	PathMTU            int     `json:"path_mtu,omitempty"` // REQ, bytes
	ResponderResources *uint8  `json:"responder_resources,omitempty"`
	InitiatorDepth     *uint8  `json:"initiator_depth,omitempty"`
	Reason             string  `json:"reason,omitempty"`      // REJ
	ReasonCode         uint16  `json:"reason_code,omitempty"` // REJ
	Message            string  `json:"message,omitempty"`     // REJ: the message rejected; MRA: the message acknowledged
	PrivateDataLen     int     `json:"private_data_len"`      // the message's fixed-size field
	PrivateDataUsed    int     `json:"private_data_used"`     // up to its last non-zero byte
	RDMACM             *IPCM   `json:"rdma_cm,omitempty"`     // REQ of an IP-based service
	Note               string  `json:"note,omitempty"`        // why the message was not decoded
	Error              string  `json:"error,omitempty"`
}

// IPCM is the rdma_cm IP-CM header of a REQ's private data.
type IPCM struct {
	PortSpace string `json:"port_space"`
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	Error     string `json:"error,omitempty"`
}

// DecodeCM decodes mad, the payload of a UD SEND Only to QP1: a MAD, and
// the CM message it carries. It never fails: a MAD that is not CM, or a CM
// attribute wire/roce does not decode, has a Note; a MAD that does not
// decode has an Error.
func DecodeCM(mad []byte) *CM {
	c := &CM{}
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
func decodeIPCM(ps roce.PortSpace, port uint16, private []byte) *IPCM {
	d := &IPCM{PortSpace: portSpaceName(ps)}
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

// Text is the CM line of a MAD sent to QP1 as dta decode prints it under
// the packet (and the rdma_cm line of a REQ), each ending in a newline.
func (c *CM) Text() string {
	var b strings.Builder
	c.text(&b)
	return b.String()
}

func (c *CM) text(b *strings.Builder) {
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
