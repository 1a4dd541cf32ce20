package decode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// This file reads pcap (libpcap's classic format) and pcapng captures with
// nothing but the standard library. Every length read from the file is
// bounded before use.

// MaxCaptureRecord bounds one packet record (and one pcapng block): a
// capture with a longer one is refused rather than allocated for.
const MaxCaptureRecord = 1 << 20

// Link types (LINKTYPE_* of tcpdump.org/linktypes.html) that FindUDP
// understands; Frame.LinkType holds one of them, or another value.
const (
	LinkNull     = 0   // BSD loopback: 4-byte address family, host order
	LinkEthernet = 1   // Ethernet II, with 802.1Q/802.1ad tags
	LinkRaw      = 101 // raw IPv4 or IPv6
	LinkRawAlt1  = 12  // raw IP on some BSDs (DLT_RAW)
	LinkRawAlt2  = 14  // raw IP on OpenBSD
	LinkLoop     = 108 // OpenBSD loopback: family in network order
	LinkSLL      = 113 // Linux cooked capture v1 (tcpdump -i any)
	LinkIPv4     = 228 // raw IPv4
	LinkIPv6     = 229 // raw IPv6
	LinkSLL2     = 276 // Linux cooked capture v2
)

// Frame is one captured frame, as ReadCapture hands it out.
type Frame struct {
	Time     time.Time // zero for a pcapng simple packet block, which has none
	LinkType uint32    // the frame's link type, one of the Link constants or another
	Data     []byte    // the captured bytes; valid only during the callback
	OrigLen  int       // the frame's length on the wire (more than len(Data) when the capture cut it)
}

// ErrNotCapture is ReadCapture's error for input that starts with neither
// magic number.
var ErrNotCapture = errors.New("not a pcap or pcapng capture (unknown magic number)")

// ReadCapture calls fn for every frame of a pcap or pcapng capture read
// from r, in file order, and stops at the first error fn returns (and
// returns it). Frames of any link type are handed out; errors say which
// record or block of the file is malformed.
func ReadCapture(r io.Reader, fn func(Frame) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil {
		return fmt.Errorf("reading the capture header: %w", err)
	}
	if binary.LittleEndian.Uint32(magic) == pcapngSHB {
		return readPcapng(br, fn)
	}
	return readPcap(br, fn)
}

// readPcap reads the classic format: a 24-byte file header, then records
// of a 16-byte header and the captured bytes.
func readPcap(r io.Reader, fn func(Frame) error) error {
	var hdr [24]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("reading the pcap header: %w", err)
	}
	var bo binary.ByteOrder
	var nano bool
	switch binary.LittleEndian.Uint32(hdr[:]) {
	case 0xa1b2c3d4:
		bo = binary.LittleEndian
	case 0xa1b23c4d:
		bo, nano = binary.LittleEndian, true
	case 0xd4c3b2a1:
		bo = binary.BigEndian
	case 0x4d3cb2a1:
		bo, nano = binary.BigEndian, true
	default:
		return ErrNotCapture
	}
	link := bo.Uint32(hdr[20:]) & 0x0fffffff // the top bits may carry FCS information
	buf := make([]byte, 0, 2048)
	var rec [16]byte
	for n := 1; ; n++ {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("record %d: %w", n, err)
		}
		sec, frac := bo.Uint32(rec[0:]), bo.Uint32(rec[4:])
		incl, orig := bo.Uint32(rec[8:]), bo.Uint32(rec[12:])
		if incl > MaxCaptureRecord {
			return fmt.Errorf("record %d: captured length %d exceeds %d", n, incl, MaxCaptureRecord)
		}
		if cap(buf) < int(incl) {
			buf = make([]byte, incl)
		}
		buf = buf[:incl]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		ns := int64(frac)
		if !nano {
			ns *= 1000
		}
		if err := fn(Frame{Time: time.Unix(int64(sec), ns), LinkType: link, Data: buf, OrigLen: int(orig)}); err != nil {
			return err
		}
	}
}

// pcapng block types.
const (
	pcapngSHB = 0x0a0d0d0a // section header
	pcapngIDB = 1          // interface description
	pcapngOPB = 2          // obsolete packet block
	pcapngSPB = 3          // simple packet block
	pcapngEPB = 6          // enhanced packet block
)

type pcapngIface struct {
	link  uint32
	snap  uint32
	tsres uint8 // if_tsresol: 10^-tsres seconds per unit, or 2^-(tsres&0x7f) when the top bit is set
}

// time converts a timestamp in the interface's units.
func (ifc *pcapngIface) time(units uint64) time.Time {
	if ifc.tsres&0x80 != 0 {
		sec := float64(units) / float64(uint64(1)<<min(ifc.tsres&0x7f, 63))
		return time.Unix(0, 0).Add(time.Duration(sec * 1e9))
	}
	e := int(ifc.tsres)
	per := uint64(1)
	for range min(e, 19) {
		per *= 10
	}
	// units / 10^e seconds, split to keep every nanosecond.
	sec, rem := units/per, units%per
	var ns uint64
	if e <= 9 {
		p9 := uint64(1)
		for range 9 - e {
			p9 *= 10
		}
		ns = rem * p9
	} else {
		ns = rem / (per / 1e9)
	}
	return time.Unix(int64(sec), int64(ns))
}

// readPcapng reads the pcapng block format (sections, interfaces, packet
// blocks; every other block is skipped).
func readPcapng(r io.Reader, fn func(Frame) error) error {
	var bo binary.ByteOrder = binary.LittleEndian
	var ifaces []pcapngIface
	var hdr [8]byte
	body := make([]byte, 0, 2048)
	for n := 1; ; n++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("block %d: %w", n, err)
		}
		typ := bo.Uint32(hdr[0:])
		if binary.LittleEndian.Uint32(hdr[0:]) == pcapngSHB {
			// The byte order of a section is given by its first block's
			// byte-order magic, which follows the (byte-order-dependent)
			// length: read it first.
			var m [4]byte
			if _, err := io.ReadFull(r, m[:]); err != nil {
				return fmt.Errorf("block %d: %w", n, err)
			}
			switch binary.LittleEndian.Uint32(m[:]) {
			case 0x1a2b3c4d:
				bo = binary.LittleEndian
			case 0x4d3c2b1a:
				bo = binary.BigEndian
			default:
				return fmt.Errorf("block %d: bad pcapng byte-order magic % x", n, m)
			}
			total := bo.Uint32(hdr[4:])
			if total < 28 || total%4 != 0 || total > MaxCaptureRecord {
				return fmt.Errorf("block %d: section header length %d", n, total)
			}
			if _, err := io.CopyN(io.Discard, r, int64(total)-12); err != nil {
				return fmt.Errorf("block %d: %w", n, err)
			}
			ifaces = ifaces[:0] // interfaces are numbered per section
			continue
		}
		total := bo.Uint32(hdr[4:])
		if total < 12 || total%4 != 0 || total > MaxCaptureRecord {
			return fmt.Errorf("block %d: block length %d", n, total)
		}
		body = body[:0]
		if cap(body) < int(total)-8 {
			body = make([]byte, 0, total-8)
		}
		body = body[:total-8]
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("block %d: %w", n, err)
		}
		body = body[:len(body)-4] // trailing copy of the length
		switch typ {
		case pcapngIDB:
			if len(body) < 8 {
				return fmt.Errorf("block %d: interface description of %d bytes", n, len(body))
			}
			ifc := pcapngIface{link: uint32(bo.Uint16(body[0:])), snap: bo.Uint32(body[4:]), tsres: 6}
			pcapngOptions(body[8:], bo, func(code uint16, v []byte) {
				if code == 9 && len(v) >= 1 && (v[0]&0x80 != 0 || v[0] <= 19) { // if_tsresol
					ifc.tsres = v[0]
				}
			})
			ifaces = append(ifaces, ifc)
		case pcapngEPB, pcapngOPB:
			var id, hi, lo, caplen, orig uint32
			var data []byte
			if len(body) < 20 {
				return fmt.Errorf("block %d: packet block of %d bytes", n, len(body))
			}
			if typ == pcapngEPB {
				id = bo.Uint32(body[0:])
			} else {
				id = uint32(bo.Uint16(body[0:]))
			}
			hi, lo, caplen, orig = bo.Uint32(body[4:]), bo.Uint32(body[8:]), bo.Uint32(body[12:]), bo.Uint32(body[16:])
			if int(caplen) > len(body)-20 {
				return fmt.Errorf("block %d: captured length %d exceeds the block", n, caplen)
			}
			data = body[20 : 20+caplen]
			if int(id) >= len(ifaces) {
				return fmt.Errorf("block %d: packet on undeclared interface %d", n, id)
			}
			t := ifaces[id].time(uint64(hi)<<32 | uint64(lo))
			if err := fn(Frame{Time: t, LinkType: ifaces[id].link, Data: data, OrigLen: int(orig)}); err != nil {
				return err
			}
		case pcapngSPB:
			if len(body) < 4 || len(ifaces) == 0 {
				return fmt.Errorf("block %d: simple packet block without an interface", n)
			}
			orig := bo.Uint32(body[0:])
			caplen := min(int(orig), len(body)-4)
			if s := ifaces[0].snap; s != 0 && int(s) < caplen {
				caplen = int(s)
			}
			if err := fn(Frame{LinkType: ifaces[0].link, Data: body[4 : 4+caplen], OrigLen: int(orig)}); err != nil {
				return err
			}
		}
	}
}

// pcapngOptions calls fn for each option of a block's option list.
func pcapngOptions(b []byte, bo binary.ByteOrder, fn func(code uint16, v []byte)) {
	for len(b) >= 4 {
		code, l := bo.Uint16(b), int(bo.Uint16(b[2:]))
		if code == 0 || 4+l > len(b) {
			return
		}
		fn(code, b[4:4+l])
		b = b[min(4+(l+3)&^3, len(b)):]
	}
}
