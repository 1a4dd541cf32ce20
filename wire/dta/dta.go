package dta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Well-known UDP ports.
const (
	Port    = 40040 // reports, reporter → translator
	AckPort = 40044 // ACK/NACK, translator → reporter
)

// Bounds on fields read from the wire. Every length is checked against these
// before it is used.
const (
	MaxKeyLen     = 64   // bytes of an extended key
	MaxValueLen   = 1024 // bytes of an extended value (Key-Write value, Append entry)
	MaxHopValue   = 8    // bytes of an extended Postcarding hop value
	MaxRedundancy = 8    // copies N of a Key-Write or Key-Increment report
	MaxHops       = 8    // hops B of a Postcarding path
	MaxBatch      = 255  // reports in one batch datagram
	MaxSketchRun  = 512  // counters in one Sketch-Merge report
)

// Opcode identifies a report format.
type Opcode uint8

// Report opcodes. 1-4 are the prototype's; 0x11-0x14 are the extended forms of
// the same primitives; 0x15 is Sketch-Merge (extended form only); 0x20 carries
// several reports.
const (
	OpKeyWrite     Opcode = 0x01
	OpAppend       Opcode = 0x02
	OpKeyIncrement Opcode = 0x03
	OpPostcard     Opcode = 0x04

	OpKeyWriteExt     Opcode = 0x11
	OpAppendExt       Opcode = 0x12
	OpKeyIncrementExt Opcode = 0x13
	OpPostcardExt     Opcode = 0x14
	OpSketchExt       Opcode = 0x15

	OpBatch Opcode = 0x20
)

// Primitive is the DTA primitive a report feeds. Its values equal the compat
// opcodes.
type Primitive uint8

// The five primitives.
const (
	KeyWrite     Primitive = 1
	Append       Primitive = 2
	KeyIncrement Primitive = 3
	Postcard     Primitive = 4
	SketchMerge  Primitive = 5
)

// TeaTable is a store kind that no report feeds: a TEA-TABLE (Kim et al.,
// SIGCOMM 2020) that the collector hosts and advertises like any store,
// written by a control plane and read by lookups over RDMA. No opcode
// maps to it, so a report naming such a store is dropped as of the wrong
// primitive; it is not in Primitives.
const TeaTable Primitive = 6

// NumPrimitives bounds arrays indexed by Primitive or store kind (index 0
// unused).
const NumPrimitives = 7

// Primitives lists the primitives reports feed, in opcode order.
var Primitives = [...]Primitive{KeyWrite, Append, KeyIncrement, Postcard, SketchMerge}

// String returns the primitive's command-line name.
func (p Primitive) String() string {
	switch p {
	case KeyWrite:
		return "keywrite"
	case Append:
		return "append"
	case KeyIncrement:
		return "keyincrement"
	case Postcard:
		return "postcard"
	case SketchMerge:
		return "sketchmerge"
	case TeaTable:
		return "teatable"
	}
	return fmt.Sprintf("primitive(%d)", uint8(p))
}

// ParsePrimitive maps a command-line or configuration name to a Primitive.
func ParsePrimitive(s string) (Primitive, error) {
	switch s {
	case "keywrite", "key-write":
		return KeyWrite, nil
	case "append":
		return Append, nil
	case "keyincrement", "key-increment":
		return KeyIncrement, nil
	case "postcard", "postcarding":
		return Postcard, nil
	case "sketchmerge", "sketch-merge":
		return SketchMerge, nil
	case "teatable", "tea-table":
		return TeaTable, nil
	}
	return 0, fmt.Errorf("unknown primitive %q (want keywrite, keyincrement, postcard, append, sketchmerge or the store kind teatable)", s)
}

// Primitive returns the primitive an opcode feeds, or 0 for OpBatch and
// unknown opcodes.
func (o Opcode) Primitive() Primitive {
	switch o {
	case OpKeyWrite, OpKeyWriteExt:
		return KeyWrite
	case OpAppend, OpAppendExt:
		return Append
	case OpKeyIncrement, OpKeyIncrementExt:
		return KeyIncrement
	case OpPostcard, OpPostcardExt:
		return Postcard
	case OpSketchExt:
		return SketchMerge
	}
	return 0
}

// Extended reports whether o is an extended report format.
func (o Opcode) Extended() bool { return o >= OpKeyWriteExt && o <= OpSketchExt }

// Flags are the base header's flag bits.
type Flags uint8

// Flag bits (byte 2 of the base header; byte 1 in the legacy header).
const (
	FlagImmediate  Flags = 0x80 // the collector CPU should be told of this report at once
	FlagRetransmit Flags = 0x40 // the reporter wants ACK/NACK and will retransmit
)

// Errors returned by decoding. They are sentinels so that callers can count
// drops per reason with errors.Is.
var (
	ErrTruncated     = errors.New("dta: truncated")
	ErrUnknownOpcode = errors.New("dta: unknown opcode")
	ErrLength        = errors.New("dta: length field exceeds the datagram")
	ErrTrailing      = errors.New("dta: trailing bytes after the report")
	ErrRedundancy    = errors.New("dta: redundancy out of range")
	ErrHop           = errors.New("dta: hop out of range")
	ErrKeyLen        = errors.New("dta: key length out of range")
	ErrValueLen      = errors.New("dta: value length out of range")
	ErrBatch         = errors.New("dta: malformed batch")
)

// Header is the DTA base header.
type Header struct {
	Opcode Opcode
	Seq    uint8 // sequence number (always 0 in the legacy header)
	Flags  Flags
}

// Base header lengths.
const (
	HeaderLen       = 3 // opcode, seqnum, flags
	LegacyHeaderLen = 2 // opcode, flags (the prototype built without NACK tracking)
)

// Immediate reports whether the immediate flag is set.
func (h Header) Immediate() bool { return h.Flags&FlagImmediate != 0 }

// Retransmit reports whether the retransmittable flag is set.
func (h Header) Retransmit() bool { return h.Flags&FlagRetransmit != 0 }

// AppendTo appends the 3-byte base header to b.
func (h Header) AppendTo(b []byte) []byte { return append(b, byte(h.Opcode), h.Seq, byte(h.Flags)) }

// AppendLegacyTo appends the 2-byte legacy base header (no seqnum) to b.
func (h Header) AppendLegacyTo(b []byte) []byte {
	return append(b, byte(h.Opcode), byte(h.Flags&FlagImmediate))
}

// Report is one decoded report. Which fields are meaningful depends on the
// primitive; see docs/PROTOCOL.md. Key and Value alias the datagram; their
// capacity ends with them, so appending to one copies it instead of
// overwriting the datagram. The encoders ignore fields the opcode's format
// does not carry, except Store (and a compat Postcard's PathLen): a compat
// report with a non-zero one is refused, not sent to the default store.
type Report struct {
	Opcode     Opcode // the format it came in (or goes out in)
	Store      uint16 // extended formats: target store id; 0 = the primitive's default store
	Redundancy uint8  // Key-Write, Key-Increment: copies N, 1..MaxRedundancy
	Key        []byte // compat: the 4 key bytes as on the wire (big-endian); extended: the key
	Value      []byte // Key-Write data, Append entry, Postcarding hop value
	Delta      uint64 // Key-Increment: the counter increment
	List       uint32 // Append: list id
	Hop        uint8  // Postcarding: hop number, 1..MaxHops
	PathLen    uint8  // Postcarding: path length, 0 = unknown (compat reports)
	// Sketch-Merge: counters Column.. of row Row of epoch Epoch, in Value as
	// big-endian two's-complement int64s (1..MaxSketchRun of them).
	Epoch  uint32
	Row    uint8
	Column uint32
}

// Primitive returns the primitive the report feeds.
func (r *Report) Primitive() Primitive { return r.Opcode.Primitive() }

// Key32 returns the 32-bit key of a compat report.
func (r *Report) Key32() uint32 {
	if len(r.Key) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(r.Key)
}

// Fixed sub-header lengths.
const (
	keyWriteLen      = 1 + 4 + 4 // N, key, data
	keyIncrementLen  = 1 + 4 + 8 // N, key, counter
	appendLen        = 4 + 4     // list, data
	postcardLen      = 4 + 1 + 4 // key, hop, data
	keyWriteExtLen   = 2 + 1 + 1 + 2
	keyIncrExtLen    = 2 + 1 + 1 + 8
	appendExtLen     = 2 + 4 + 2
	postcardExtLen   = 2 + 1 + 1 + 1 + 1
	sketchExtLen     = 2 + 4 + 1 + 2 + 4 // store, epoch, row, count, column
	batchRecordHdr   = 1 + 2             // opcode, length
	batchCountHdrLen = 1                 // number of records
)

// decodeBody decodes the sub-header of one report with opcode op from b,
// which must hold exactly that report.
func decodeBody(op Opcode, b []byte, r *Report) error {
	// The compat formats, which carry most reports, fill the report in one
	// assignment and check it on the spot.
	switch op {
	case OpKeyWrite:
		if len(b) < keyWriteLen {
			*r = Report{Opcode: op}
			return ErrTruncated
		}
		*r = Report{Opcode: op, Redundancy: b[0], Key: b[1:5:5], Value: b[5:9:9]}
		return compatDone(len(b), keyWriteLen, r.Redundancy)
	case OpKeyIncrement:
		if len(b) < keyIncrementLen {
			*r = Report{Opcode: op}
			return ErrTruncated
		}
		*r = Report{Opcode: op, Redundancy: b[0], Key: b[1:5:5], Delta: binary.BigEndian.Uint64(b[5:13])}
		return compatDone(len(b), keyIncrementLen, r.Redundancy)
	case OpAppend:
		if len(b) < appendLen {
			*r = Report{Opcode: op}
			return ErrTruncated
		}
		*r = Report{Opcode: op, List: binary.BigEndian.Uint32(b), Value: b[4:8:8]}
		if len(b) != appendLen {
			return ErrTrailing
		}
		return nil
	}
	*r = Report{Opcode: op}
	var need int
	switch op {
	case OpPostcard:
		if len(b) < postcardLen {
			return ErrTruncated
		}
		r.Key, r.Hop, r.Value = b[0:4:4], b[4], b[5:9:9]
		need = postcardLen
	case OpKeyWriteExt:
		if len(b) < keyWriteExtLen {
			return ErrTruncated
		}
		r.Store, r.Redundancy = binary.BigEndian.Uint16(b), b[2]
		kl, vl := int(b[3]), int(binary.BigEndian.Uint16(b[4:]))
		if kl == 0 || kl > MaxKeyLen {
			return ErrKeyLen
		}
		if vl == 0 || vl > MaxValueLen {
			return ErrValueLen
		}
		need = keyWriteExtLen + kl + vl
		if len(b) < need {
			return ErrLength
		}
		r.Key = b[keyWriteExtLen : keyWriteExtLen+kl : keyWriteExtLen+kl]
		r.Value = b[keyWriteExtLen+kl : need : need]
	case OpKeyIncrementExt:
		if len(b) < keyIncrExtLen {
			return ErrTruncated
		}
		r.Store, r.Redundancy = binary.BigEndian.Uint16(b), b[2]
		kl := int(b[3])
		r.Delta = binary.BigEndian.Uint64(b[4:])
		if kl == 0 || kl > MaxKeyLen {
			return ErrKeyLen
		}
		need = keyIncrExtLen + kl
		if len(b) < need {
			return ErrLength
		}
		r.Key = b[keyIncrExtLen:need:need]
	case OpAppendExt:
		if len(b) < appendExtLen {
			return ErrTruncated
		}
		r.Store, r.List = binary.BigEndian.Uint16(b), binary.BigEndian.Uint32(b[2:])
		vl := int(binary.BigEndian.Uint16(b[6:]))
		if vl == 0 || vl > MaxValueLen {
			return ErrValueLen
		}
		need = appendExtLen + vl
		if len(b) < need {
			return ErrLength
		}
		r.Value = b[appendExtLen:need:need]
	case OpPostcardExt:
		if len(b) < postcardExtLen {
			return ErrTruncated
		}
		r.Store, r.Hop, r.PathLen = binary.BigEndian.Uint16(b), b[2], b[3]
		kl, vl := int(b[4]), int(b[5])
		if kl == 0 || kl > MaxKeyLen {
			return ErrKeyLen
		}
		if vl == 0 || vl > MaxHopValue {
			return ErrValueLen
		}
		need = postcardExtLen + kl + vl
		if len(b) < need {
			return ErrLength
		}
		r.Key = b[postcardExtLen : postcardExtLen+kl : postcardExtLen+kl]
		r.Value = b[postcardExtLen+kl : need : need]
	case OpSketchExt:
		if len(b) < sketchExtLen {
			return ErrTruncated
		}
		r.Store, r.Epoch, r.Row = binary.BigEndian.Uint16(b), binary.BigEndian.Uint32(b[2:]), b[6]
		n := int(binary.BigEndian.Uint16(b[7:]))
		r.Column = binary.BigEndian.Uint32(b[9:])
		if n == 0 || n > MaxSketchRun {
			return ErrValueLen
		}
		need = sketchExtLen + 8*n
		if len(b) < need {
			return ErrLength
		}
		r.Value = b[sketchExtLen:need:need]
	default:
		return ErrUnknownOpcode
	}
	if len(b) != need {
		return ErrTrailing
	}
	return r.check()
}

// compatDone finishes a compat Key-Write or Key-Increment report of n bytes
// whose format has need: the checks decodeBody's tail and check would make.
func compatDone(n, need int, redundancy uint8) error {
	switch {
	case n != need:
		return ErrTrailing
	case redundancy == 0 || redundancy > MaxRedundancy:
		return ErrRedundancy
	}
	return nil
}

// check validates the semantic ranges every primitive shares.
func (r *Report) check() error {
	switch r.Opcode.Primitive() {
	case KeyWrite, KeyIncrement:
		if r.Redundancy == 0 || r.Redundancy > MaxRedundancy {
			return ErrRedundancy
		}
	case Postcard:
		if r.PathLen > MaxHops {
			return ErrHop
		}
		if r.Hop == 0 || r.Hop > MaxHops || (r.PathLen != 0 && r.Hop > r.PathLen) {
			return ErrHop
		}
	case 0:
		return ErrUnknownOpcode
	}
	return nil
}

// Decoder decodes datagrams. Its zero value decodes the 3-byte base header.
type Decoder struct {
	// Legacy selects the prototype's 2-byte base header {opcode, flags}.
	Legacy bool
}

// Datagram iterates over the reports of one datagram without allocating.
// Obtain it from Decoder.Decode; the zero value holds no report.
type Datagram struct {
	Header Header
	rest   []byte
	left   int  // records left in a batch
	batch  bool // the datagram is an OpBatch
	done   bool
}

// Decode parses the base header of b and prepares iteration over its
// reports. The Datagram aliases b.
func (d Decoder) Decode(b []byte, dg *Datagram) error {
	*dg = Datagram{}
	if d.Legacy {
		if len(b) < LegacyHeaderLen {
			dg.done = true
			return ErrTruncated
		}
		dg.Header = Header{Opcode: Opcode(b[0]), Flags: Flags(b[1]) & FlagImmediate}
		dg.rest = b[LegacyHeaderLen:]
	} else {
		if len(b) < HeaderLen {
			dg.done = true
			return ErrTruncated
		}
		dg.Header = Header{Opcode: Opcode(b[0]), Seq: b[1], Flags: Flags(b[2])}
		dg.rest = b[HeaderLen:]
	}
	if dg.Header.Opcode == OpBatch {
		if len(dg.rest) < batchCountHdrLen {
			dg.done = true
			return ErrTruncated
		}
		dg.batch, dg.left, dg.rest = true, int(dg.rest[0]), dg.rest[1:]
		if dg.left == 0 {
			dg.done = true
			return ErrBatch
		}
		return nil
	}
	if dg.Header.Opcode.Primitive() == 0 {
		dg.done = true
		return ErrUnknownOpcode
	}
	dg.left = 1
	return nil
}

// Batch reports whether the datagram is a multi-report batch.
func (dg *Datagram) Batch() bool { return dg.batch }

// Next decodes the next report into r. It returns io.EOF when no report is
// left. Any other error describes the report it could not decode; if Done then
// reports true, the rest of the datagram is unreadable, otherwise the caller may
// call Next again for the following report.
func (dg *Datagram) Next(r *Report) error {
	if dg.done || dg.left == 0 {
		if !dg.done && len(dg.rest) != 0 {
			dg.done = true
			return ErrTrailing
		}
		dg.done = true
		return io.EOF
	}
	dg.left--
	if !dg.batch {
		dg.done = true
		return decodeBody(dg.Header.Opcode, dg.rest, r)
	}
	if len(dg.rest) < batchRecordHdr {
		dg.done = true
		return ErrTruncated
	}
	op := Opcode(dg.rest[0])
	n := int(binary.BigEndian.Uint16(dg.rest[1:]))
	if n > len(dg.rest)-batchRecordHdr {
		dg.done = true
		return ErrLength
	}
	body := dg.rest[batchRecordHdr : batchRecordHdr+n]
	dg.rest = dg.rest[batchRecordHdr+n:]
	if op == OpBatch {
		return ErrBatch
	}
	return decodeBody(op, body, r)
}

// Done reports whether iteration is over (normally or because the rest of
// the datagram could not be framed).
func (dg *Datagram) Done() bool { return dg.done }

// ErrEncode is wrapped by encoding errors: the report would not decode.
var ErrEncode = errors.New("dta: cannot encode")

// bodyLen returns the encoded length of r's sub-header, or an error if r would
// not decode.
func (r *Report) bodyLen() (int, error) {
	var n int
	switch r.Opcode {
	case OpKeyWrite:
		if len(r.Key) != 4 || len(r.Value) != 4 {
			return 0, fmt.Errorf("%w: compat key-write needs a 4-byte key and value", ErrEncode)
		}
		n = keyWriteLen
	case OpKeyIncrement:
		if len(r.Key) != 4 {
			return 0, fmt.Errorf("%w: compat key-increment needs a 4-byte key", ErrEncode)
		}
		n = keyIncrementLen
	case OpAppend:
		if len(r.Value) != 4 {
			return 0, fmt.Errorf("%w: compat append needs a 4-byte entry", ErrEncode)
		}
		n = appendLen
	case OpPostcard:
		if len(r.Key) != 4 || len(r.Value) != 4 {
			return 0, fmt.Errorf("%w: compat postcard needs a 4-byte key and value", ErrEncode)
		}
		n = postcardLen
	case OpSketchExt:
		if len(r.Value) == 0 || len(r.Value)%8 != 0 || len(r.Value) > 8*MaxSketchRun {
			return 0, fmt.Errorf("%w: sketch run of %d bytes (1..%d whole 8-byte counters)", ErrEncode, len(r.Value), MaxSketchRun)
		}
		n = sketchExtLen + len(r.Value)
	case OpKeyWriteExt, OpKeyIncrementExt, OpAppendExt, OpPostcardExt:
		if r.Opcode != OpAppendExt && (len(r.Key) == 0 || len(r.Key) > MaxKeyLen) {
			return 0, fmt.Errorf("%w: key of %d bytes (1..%d)", ErrEncode, len(r.Key), MaxKeyLen)
		}
		maxV := MaxValueLen
		if r.Opcode == OpPostcardExt {
			maxV = MaxHopValue
		}
		if r.Opcode != OpKeyIncrementExt && (len(r.Value) == 0 || len(r.Value) > maxV) {
			return 0, fmt.Errorf("%w: value of %d bytes (1..%d)", ErrEncode, len(r.Value), maxV)
		}
		switch r.Opcode {
		case OpKeyWriteExt:
			n = keyWriteExtLen + len(r.Key) + len(r.Value)
		case OpKeyIncrementExt:
			n = keyIncrExtLen + len(r.Key)
		case OpAppendExt:
			n = appendExtLen + len(r.Value)
		case OpPostcardExt:
			n = postcardExtLen + len(r.Key) + len(r.Value)
		}
	default:
		return 0, fmt.Errorf("%w: opcode %#x", ErrEncode, uint8(r.Opcode))
	}
	// The compat formats have no field for these; dropping them would send the
	// report to another store or lose the path length.
	if !r.Opcode.Extended() && r.Store != 0 {
		return 0, fmt.Errorf("%w: compat opcode %#x carries no store id (store %d)", ErrEncode, uint8(r.Opcode), r.Store)
	}
	if r.Opcode == OpPostcard && r.PathLen != 0 {
		return 0, fmt.Errorf("%w: compat postcard carries no path length", ErrEncode)
	}
	if err := r.check(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return n, nil
}

// AppendTo appends r's sub-header (without base header) to b.
func (r *Report) AppendTo(b []byte) ([]byte, error) {
	if _, err := r.bodyLen(); err != nil {
		return b, err
	}
	return r.appendBody(b), nil
}

func (r *Report) appendBody(b []byte) []byte {
	switch r.Opcode {
	case OpKeyWrite:
		b = append(b, r.Redundancy)
		b = append(b, r.Key...)
		b = append(b, r.Value...)
	case OpKeyIncrement:
		b = append(b, r.Redundancy)
		b = append(b, r.Key...)
		b = binary.BigEndian.AppendUint64(b, r.Delta)
	case OpAppend:
		b = binary.BigEndian.AppendUint32(b, r.List)
		b = append(b, r.Value...)
	case OpPostcard:
		b = append(b, r.Key...)
		b = append(b, r.Hop)
		b = append(b, r.Value...)
	case OpKeyWriteExt:
		b = binary.BigEndian.AppendUint16(b, r.Store)
		b = append(b, r.Redundancy, byte(len(r.Key)))
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Value)))
		b = append(b, r.Key...)
		b = append(b, r.Value...)
	case OpKeyIncrementExt:
		b = binary.BigEndian.AppendUint16(b, r.Store)
		b = append(b, r.Redundancy, byte(len(r.Key)))
		b = binary.BigEndian.AppendUint64(b, r.Delta)
		b = append(b, r.Key...)
	case OpAppendExt:
		b = binary.BigEndian.AppendUint16(b, r.Store)
		b = binary.BigEndian.AppendUint32(b, r.List)
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Value)))
		b = append(b, r.Value...)
	case OpPostcardExt:
		b = binary.BigEndian.AppendUint16(b, r.Store)
		b = append(b, r.Hop, r.PathLen, byte(len(r.Key)), byte(len(r.Value)))
		b = append(b, r.Key...)
		b = append(b, r.Value...)
	case OpSketchExt:
		b = binary.BigEndian.AppendUint16(b, r.Store)
		b = binary.BigEndian.AppendUint32(b, r.Epoch)
		b = append(b, r.Row)
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Value)/8))
		b = binary.BigEndian.AppendUint32(b, r.Column)
		b = append(b, r.Value...)
	}
	return b
}

// AppendDatagram appends a complete single-report datagram (base header with
// h.Opcode replaced by r.Opcode, then r's sub-header) to b.
func AppendDatagram(b []byte, h Header, r *Report) ([]byte, error) {
	if _, err := r.bodyLen(); err != nil {
		return b, err
	}
	h.Opcode = r.Opcode
	return r.appendBody(h.AppendTo(b)), nil
}

// BatchWriter builds a multi-report datagram in a caller-owned buffer.
type BatchWriter struct {
	buf   []byte
	start int // offset of the record count byte
	n     int
}

// Reset starts a new batch datagram with header h (its opcode is set to
// OpBatch) in buf[:0].
func (w *BatchWriter) Reset(buf []byte, h Header) {
	h.Opcode = OpBatch
	w.buf = h.AppendTo(buf[:0])
	w.start = len(w.buf)
	w.buf = append(w.buf, 0)
	w.n = 0
}

// Add appends r as one record. It fails if r would not decode or the batch
// already holds MaxBatch reports.
func (w *BatchWriter) Add(r *Report) error {
	if w.n >= MaxBatch {
		return fmt.Errorf("%w: batch is full (%d reports)", ErrEncode, MaxBatch)
	}
	n, err := r.bodyLen()
	if err != nil {
		return err
	}
	w.buf = append(w.buf, byte(r.Opcode))
	w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(n))
	w.buf = r.appendBody(w.buf)
	w.n++
	w.buf[w.start] = byte(w.n)
	return nil
}

// Len is the number of reports added since Reset.
func (w *BatchWriter) Len() int { return w.n }

// Size is the datagram's length so far in bytes.
func (w *BatchWriter) Size() int { return len(w.buf) }

// RecordSize returns how many bytes Add(r) would add, or an error if r would
// not decode.
func RecordSize(r *Report) (int, error) {
	n, err := r.bodyLen()
	return batchRecordHdr + n, err
}

// Bytes returns the datagram built so far. It aliases the buffer given to
// Reset as long as that buffer's capacity sufficed (Add appends to it). Before
// the first Add it is a batch of 0 records, which decoders reject.
func (w *BatchWriter) Bytes() []byte { return w.buf }

// Ack is the ACK/NACK datagram (UDP 40044): {seqnum, flags}, bit 7 of flags =
// NACK. Seq is the last sequence number accepted in order.
type Ack struct {
	Seq  uint8
	NACK bool
}

// AckLen is the length of an ACK/NACK datagram.
const AckLen = 2

// Decode parses an ACK/NACK datagram.
func (a *Ack) Decode(b []byte) error {
	if len(b) < AckLen {
		return ErrTruncated
	}
	if len(b) > AckLen {
		return ErrTrailing
	}
	a.Seq, a.NACK = b[0], b[1]&0x80 != 0
	return nil
}

// AppendTo appends the 2-byte ACK/NACK to b.
func (a Ack) AppendTo(b []byte) []byte {
	var f byte
	if a.NACK {
		f = 0x80
	}
	return append(b, a.Seq, f)
}
