package cli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// This file reads pcap (libpcap's classic format) and pcapng captures and
// digs out UDP datagrams, with nothing but the standard library. Every
// length read from the file is bounded before use.

// maxCaptureRecord bounds one packet record (and one pcapng block).
const maxCaptureRecord = 1 << 20

// Link types (LINKTYPE_* of tcpdump.org/linktypes.html).
const (
	linkNull     = 0   // BSD loopback: 4-byte address family, host order
	linkEthernet = 1   // Ethernet II
	linkRaw      = 101 // raw IPv4 or IPv6
	linkRawAlt1  = 12  // raw IP on some BSDs (DLT_RAW)
	linkRawAlt2  = 14  // raw IP on OpenBSD
	linkLoop     = 108 // OpenBSD loopback: family in network order
	linkSLL      = 113 // Linux cooked capture v1 (tcpdump -i any)
	linkIPv4     = 228
	linkIPv6     = 229
	linkSLL2     = 276 // Linux cooked capture v2
)

// capturePacket is one captured frame. data is valid only during the
// callback.
type capturePacket struct {
	time time.Time
	link uint32
	data []byte
	orig int // length on the wire
}

var errNotCapture = errors.New("not a pcap or pcapng capture (unknown magic number)")

// readCapture calls fn for every packet of a pcap or pcapng capture.
func readCapture(r io.Reader, fn func(capturePacket) error) error {
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
func readPcap(r io.Reader, fn func(capturePacket) error) error {
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
		return errNotCapture
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
		if incl > maxCaptureRecord {
			return fmt.Errorf("record %d: captured length %d exceeds %d", n, incl, maxCaptureRecord)
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
		if err := fn(capturePacket{time: time.Unix(int64(sec), ns), link: link, data: buf, orig: int(orig)}); err != nil {
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
func readPcapng(r io.Reader, fn func(capturePacket) error) error {
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
			if total < 28 || total%4 != 0 || total > maxCaptureRecord {
				return fmt.Errorf("block %d: section header length %d", n, total)
			}
			if _, err := io.CopyN(io.Discard, r, int64(total)-12); err != nil {
				return fmt.Errorf("block %d: %w", n, err)
			}
			ifaces = ifaces[:0] // interfaces are numbered per section
			continue
		}
		total := bo.Uint32(hdr[4:])
		if total < 12 || total%4 != 0 || total > maxCaptureRecord {
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
			if err := fn(capturePacket{time: t, link: ifaces[id].link, data: data, orig: int(orig)}); err != nil {
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
			if err := fn(capturePacket{link: ifaces[0].link, data: body[4 : 4+caplen], orig: int(orig)}); err != nil {
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

// captureDatagram is a UDP datagram found in a frame.
type captureDatagram struct {
	src, dst netip.AddrPort
	payload  []byte
	note     string // why the payload may be incomplete
	ip       []byte // the IP datagram from its header on, cut at the IP length when captured whole (for the RoCEv2 ICRC)
}

// captureUDP finds the UDP datagram in a frame of the given link type.
func captureUDP(link uint32, b []byte) (captureDatagram, bool) {
	var etype uint16
	switch link {
	case linkEthernet:
		if len(b) < 14 {
			return captureDatagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[12:]), b[14:]
		for (etype == 0x8100 || etype == 0x88a8 || etype == 0x9100) && len(b) >= 4 { // VLAN tags
			etype, b = binary.BigEndian.Uint16(b[2:]), b[4:]
		}
	case linkSLL:
		if len(b) < 16 {
			return captureDatagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[14:]), b[16:]
	case linkSLL2:
		if len(b) < 20 {
			return captureDatagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[0:]), b[20:]
	case linkNull, linkLoop:
		if len(b) < 4 {
			return captureDatagram{}, false
		}
		fam := binary.LittleEndian.Uint32(b)
		if link == linkLoop || fam > 0xffff {
			fam = binary.BigEndian.Uint32(b)
		}
		b = b[4:]
		switch fam {
		case 2:
			etype = 0x0800
		case 10, 24, 28, 30:
			etype = 0x86dd
		}
	case linkRaw, linkRawAlt1, linkRawAlt2, linkIPv4, linkIPv6:
		if len(b) == 0 {
			return captureDatagram{}, false
		}
		switch b[0] >> 4 {
		case 4:
			etype = 0x0800
		case 6:
			etype = 0x86dd
		}
	}
	switch etype {
	case 0x0800:
		return captureIPv4(b)
	case 0x86dd:
		return captureIPv6(b)
	}
	return captureDatagram{}, false
}

func captureIPv4(b []byte) (captureDatagram, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return captureDatagram{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	frag := binary.BigEndian.Uint16(b[6:])
	if ihl < 20 || len(b) < ihl || b[9] != 17 || frag&0x1fff != 0 {
		return captureDatagram{}, false // not UDP, or not the first fragment
	}
	if total >= ihl && total < len(b) {
		b = b[:total] // drop Ethernet padding
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	d, ok := captureUDPHeader(src, dst, b[ihl:])
	if ok && frag&0x2000 != 0 {
		d.note = "IP fragment: payload incomplete"
	}
	d.ip = b
	return d, ok
}

func captureIPv6(b []byte) (captureDatagram, bool) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return captureDatagram{}, false
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	next := b[6]
	src := netip.AddrFrom16([16]byte(b[8:24]))
	dst := netip.AddrFrom16([16]byte(b[24:40]))
	if 40+plen < len(b) {
		b = b[:40+plen] // drop Ethernet padding
	}
	ip := b
	b = b[40:]
	note := ""
	for range 8 { // extension headers, bounded
		switch next {
		case 17:
			d, ok := captureUDPHeader(src, dst, b)
			if ok && d.note == "" {
				d.note = note
			}
			d.ip = ip
			return d, ok
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(b) < 8 || len(b) < (int(b[1])+1)*8 {
				return captureDatagram{}, false
			}
			next, b = b[0], b[(int(b[1])+1)*8:]
		case 51: // authentication header
			if len(b) < 8 || len(b) < (int(b[1])+2)*4 {
				return captureDatagram{}, false
			}
			next, b = b[0], b[(int(b[1])+2)*4:]
		case 44: // fragment
			if len(b) < 8 || binary.BigEndian.Uint16(b[2:])&0xfff8 != 0 {
				return captureDatagram{}, false // not the first fragment
			}
			if b[3]&1 != 0 {
				note = "IP fragment: payload incomplete"
			}
			next, b = b[0], b[8:]
		default:
			return captureDatagram{}, false
		}
	}
	return captureDatagram{}, false
}

func captureUDPHeader(src, dst netip.Addr, b []byte) (captureDatagram, bool) {
	if len(b) < 8 {
		return captureDatagram{}, false
	}
	d := captureDatagram{
		src: netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:])),
		dst: netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
	}
	l := int(binary.BigEndian.Uint16(b[4:]))
	b = b[8:]
	switch {
	case l >= 8 && l-8 <= len(b):
		b = b[:l-8]
	case l >= 8:
		d.note = "capture truncated"
	}
	d.payload = b
	return d, true
}
