package roce

import (
	"encoding/binary"
	"io"
	"time"
)

// Classic pcap file constants.
const (
	PcapSnapLen       = 65535 // snapshot length written in the file header
	LinkTypeEthernet  = 1     // LINKTYPE_ETHERNET
	pcapMagicMicros   = 0xA1B2C3D4
	pcapFileHeaderLen = 24
	pcapRecordLen     = 16
)

// PcapWriter writes a classic (libpcap 2.4, microsecond, little-endian)
// capture file of Ethernet frames, readable by tshark and tcpdump, e.g.
// frames built with Envelope.AppendFrame. It does no buffering; wrap the
// destination in a bufio.Writer for many frames.
type PcapWriter struct {
	w   io.Writer
	hdr [pcapRecordLen]byte
}

// NewPcapWriter writes the pcap file header to w and returns a writer for
// the frames.
func NewPcapWriter(w io.Writer) (*PcapWriter, error) {
	pw := &PcapWriter{w: w}
	var h [pcapFileHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicMicros)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], PcapSnapLen)
	binary.LittleEndian.PutUint32(h[20:], LinkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, err
	}
	return pw, nil
}

// WriteFrame writes one frame captured at ts. Frames longer than
// PcapSnapLen are truncated in the file (their original length is kept).
func (pw *PcapWriter) WriteFrame(ts time.Time, frame []byte) error {
	n := min(len(frame), PcapSnapLen)
	binary.LittleEndian.PutUint32(pw.hdr[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(pw.hdr[4:], uint32(ts.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(pw.hdr[8:], uint32(n))
	binary.LittleEndian.PutUint32(pw.hdr[12:], uint32(len(frame)))
	if _, err := pw.w.Write(pw.hdr[:]); err != nil {
		return err
	}
	_, err := pw.w.Write(frame[:n])
	return err
}
