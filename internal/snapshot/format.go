package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dta-go/dta/internal/store"
)

// Checkpoint file format, version 1 (docs/PROTOCOL.md, "Checkpoint files").
// All integers are little-endian.
//
//	header (64 bytes):
//	  0  magic "DTACKPT\n"
//	  8  version u16 (1)
//	  10 kind u8 (1 full, 2 delta) | 11 zero u8
//	  12 table length u32 (≤ MaxTable)
//	  16 epoch u64 | 24 parent epoch u64 (0 for a full checkpoint)
//	  32 time i64 (Unix nanoseconds) | 40 base epoch u64 (the chain's full checkpoint)
//	  48 zero (12 bytes) | 60 CRC-32C of bytes 0..59
//	store table: the store advertisement encoding of the stores (VA and rkey 0,
//	  length the region size), then its CRC-32C u32
//	extents, each: store u16 | zero u16 | length u32 (1..MaxExtent) | offset u64 |
//	  CRC-32C u32 of the 16 bytes before it and the data | data
//	end record: store 0xFFFF | zero u16 | length 0 | extent count u64 | CRC-32C u32
//	and nothing after it.
const (
	Version = 1
	// MaxExtent bounds the bytes of one extent.
	MaxExtent = 4 << 20
	// MaxTable bounds the store table.
	MaxTable = 1 << 20

	magic          = "DTACKPT\n"
	headerLen      = 64
	extentHdrLen   = 20
	kindFull       = 1
	kindDelta      = 2
	endStore       = 0xFFFF
	fileExt        = ".dta"
	filePrefix     = "ckpt-"
	tempExt        = ".tmp"
	epochDigits    = 12
	corruptSuffix  = ".corrupt"
	maxFileStores  = store.MaxAdvertStores
	fileBufferSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error about a checkpoint file's contents:
// a bad magic, version, length, bound or checksum, or a file cut short.
var ErrCorrupt = errors.New("checkpoint file is corrupt")

// Header is what a checkpoint file says about itself.
type Header struct {
	Epoch  uint64    // this checkpoint's number, increasing
	Parent uint64    // the epoch this delta applies to; 0 for a full checkpoint
	Base   uint64    // the full checkpoint the chain starts from (Epoch itself for a full one)
	Time   time.Time // when the checkpoint began: every write before it is in it
	Stores []store.Descriptor
}

// Full reports whether the checkpoint holds every byte of every store.
func (h *Header) Full() bool { return h.Parent == 0 }

// fileName is the name of epoch's checkpoint file.
func fileName(epoch uint64) string {
	return fmt.Sprintf("%s%0*d%s", filePrefix, epochDigits, epoch, fileExt)
}

// parseFileName returns the epoch of a checkpoint file name.
func parseFileName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, fileExt)
	if !ok || len(s) != epochDigits {
		return 0, false
	}
	e, err := strconv.ParseUint(s, 10, 64)
	return e, err == nil && e > 0
}

func appendHeader(b []byte, h *Header, tableLen int) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	kind := byte(kindDelta)
	if h.Full() {
		kind = kindFull
	}
	b = append(b, kind, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(tableLen))
	b = binary.LittleEndian.AppendUint64(b, h.Epoch)
	b = binary.LittleEndian.AppendUint64(b, h.Parent)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Time.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, h.Base)
	b = append(b, make([]byte, 12)...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// encodeTable encodes the stores as the store advertisement does.
func encodeTable(descs []store.Descriptor) ([]byte, error) {
	adv := make([]store.Advertised, len(descs))
	for i, d := range descs {
		adv[i] = store.Advertised{Descriptor: d, Length: d.RegionSize()}
	}
	b, err := store.AppendAdvertisement(nil, adv)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTable {
		return nil, fmt.Errorf("store table of %d bytes exceeds %d", len(b), MaxTable)
	}
	return b, nil
}

// fileWriter writes one checkpoint file under a temporary name; finish makes
// it durable and gives it its name.
type fileWriter struct {
	dir, tmp, final string
	f               *os.File
	w               *bufio.Writer
	sizes           []uint64 // region size per store
	extents         uint64
	bytes           int64
	hdr             [extentHdrLen]byte
}

// createFile starts epoch h.Epoch's file in dir.
func createFile(dir string, h *Header) (*fileWriter, error) {
	table, err := encodeTable(h.Stores)
	if err != nil {
		return nil, err
	}
	fw := &fileWriter{dir: dir, final: filepath.Join(dir, fileName(h.Epoch))}
	fw.tmp = fw.final + tempExt
	fw.f, err = os.OpenFile(fw.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	fw.w = bufio.NewWriterSize(fw.f, fileBufferSize)
	for _, d := range h.Stores {
		fw.sizes = append(fw.sizes, d.RegionSize())
	}
	b := appendHeader(nil, h, len(table))
	b = append(b, table...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(table, castagnoli))
	if _, err := fw.w.Write(b); err != nil {
		fw.abort()
		return nil, err
	}
	fw.bytes = int64(len(b))
	return fw, nil
}

// extent appends data as the bytes of store s at off (len(data) ≤ MaxExtent).
// data is not retained.
func (fw *fileWriter) extent(s int, off uint64, data []byte) error {
	if len(data) == 0 || len(data) > MaxExtent || s >= len(fw.sizes) || off > fw.sizes[s] || uint64(len(data)) > fw.sizes[s]-off {
		return fmt.Errorf("snapshot: extent of store %d at %d, %d bytes, is out of bounds", s, off, len(data))
	}
	h := fw.hdr[:]
	binary.LittleEndian.PutUint16(h[0:], uint16(s))
	binary.LittleEndian.PutUint16(h[2:], 0)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(data)))
	binary.LittleEndian.PutUint64(h[8:], off)
	crc := crc32.Update(crc32.Checksum(h[:16], castagnoli), castagnoli, data)
	binary.LittleEndian.PutUint32(h[16:], crc)
	if _, err := fw.w.Write(h); err != nil {
		return err
	}
	if _, err := fw.w.Write(data); err != nil {
		return err
	}
	fw.extents++
	fw.bytes += int64(extentHdrLen + len(data))
	return nil
}

// finish writes the end record, syncs the file, renames it to its final name
// and syncs the directory. It returns the file's size.
func (fw *fileWriter) finish() (int64, error) {
	h := fw.hdr[:]
	binary.LittleEndian.PutUint16(h[0:], endStore)
	binary.LittleEndian.PutUint16(h[2:], 0)
	binary.LittleEndian.PutUint32(h[4:], 0)
	binary.LittleEndian.PutUint64(h[8:], fw.extents)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], castagnoli))
	_, err := fw.w.Write(h)
	if err == nil {
		err = fw.w.Flush()
	}
	if err == nil {
		err = fw.f.Sync()
	}
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(fw.tmp, fw.final)
	}
	if err == nil {
		err = syncDir(fw.dir)
	}
	if err != nil {
		os.Remove(fw.tmp)
		return 0, fmt.Errorf("snapshot: write %s: %w", fw.final, err)
	}
	return fw.bytes + extentHdrLen, nil
}

// abort drops the unfinished file.
func (fw *fileWriter) abort() {
	fw.f.Close()
	os.Remove(fw.tmp)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Reader reads a checkpoint file: the header first (NewReader), then every
// extent (Next), checking each length against its bound and each CRC before
// anything is returned. It never allocates from a length it has not
// bounded: at most MaxTable for the table and MaxExtent for the data buffer.
type Reader struct {
	r       *bufio.Reader
	name    string // for errors
	pos     int64
	Header  Header
	sizes   []uint64
	buf     []byte
	extents uint64
	done    bool
}

// NewReader reads and checks the header and store table from r. name
// appears in errors (the file's path).
func NewReader(r io.Reader, name string) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, fileBufferSize), name: name}
	var hb [headerLen]byte
	if err := rd.full(hb[:], "header"); err != nil {
		return nil, err
	}
	if string(hb[:8]) != magic {
		return nil, rd.corrupt(0, "not a checkpoint file (bad magic)")
	}
	if got, want := binary.LittleEndian.Uint32(hb[60:]), crc32.Checksum(hb[:60], castagnoli); got != want {
		return nil, rd.corrupt(0, "header checksum %08x, want %08x", got, want)
	}
	if v := binary.LittleEndian.Uint16(hb[8:]); v != Version {
		return nil, rd.corrupt(8, "version %d; this build reads version %d", v, Version)
	}
	kind := hb[10]
	tableLen := binary.LittleEndian.Uint32(hb[12:])
	h := &rd.Header
	h.Epoch = binary.LittleEndian.Uint64(hb[16:])
	h.Parent = binary.LittleEndian.Uint64(hb[24:])
	h.Time = time.Unix(0, int64(binary.LittleEndian.Uint64(hb[32:])))
	h.Base = binary.LittleEndian.Uint64(hb[40:])
	switch {
	case kind != kindFull && kind != kindDelta:
		return nil, rd.corrupt(10, "kind %d", kind)
	case h.Epoch == 0:
		return nil, rd.corrupt(16, "epoch 0")
	case kind == kindFull && (h.Parent != 0 || h.Base != h.Epoch):
		return nil, rd.corrupt(24, "full checkpoint %d with parent %d, base %d", h.Epoch, h.Parent, h.Base)
	case kind == kindDelta && (h.Parent == 0 || h.Parent >= h.Epoch || h.Base == 0 || h.Base > h.Parent):
		return nil, rd.corrupt(24, "delta %d with parent %d, base %d", h.Epoch, h.Parent, h.Base)
	case tableLen == 0 || tableLen > MaxTable:
		return nil, rd.corrupt(12, "store table of %d bytes (at most %d)", tableLen, MaxTable)
	}
	table := make([]byte, tableLen+4)
	if err := rd.full(table, "store table"); err != nil {
		return nil, err
	}
	if got, want := binary.LittleEndian.Uint32(table[tableLen:]), crc32.Checksum(table[:tableLen], castagnoli); got != want {
		return nil, rd.corrupt(headerLen, "store table checksum %08x, want %08x", got, want)
	}
	adv, err := store.ParseAdvertisement(table[:tableLen])
	if err != nil {
		return nil, rd.corrupt(headerLen, "store table: %v", err)
	}
	for _, a := range adv {
		if a.Length != a.RegionSize() {
			return nil, rd.corrupt(headerLen, "store %s: %d bytes, its geometry needs %d", a.Name, a.Length, a.RegionSize())
		}
		h.Stores = append(h.Stores, a.Descriptor)
		rd.sizes = append(rd.sizes, a.Length)
	}
	return rd, nil
}

// Next returns the next extent: the store's index in Header.Stores, the
// offset in its region and the bytes, which are valid until the next call.
// It returns io.EOF after the end record.
func (rd *Reader) Next() (s int, off uint64, data []byte, err error) {
	if rd.done {
		return 0, 0, nil, io.EOF
	}
	at := rd.pos
	var h [extentHdrLen]byte
	if err := rd.full(h[:], "extent header"); err != nil {
		return 0, 0, nil, err
	}
	s = int(binary.LittleEndian.Uint16(h[0:]))
	n := binary.LittleEndian.Uint32(h[4:])
	off = binary.LittleEndian.Uint64(h[8:])
	crc := binary.LittleEndian.Uint32(h[16:])
	if binary.LittleEndian.Uint16(h[2:]) != 0 {
		return 0, 0, nil, rd.corrupt(at, "extent flags %#x", binary.LittleEndian.Uint16(h[2:]))
	}
	if s == endStore {
		if want := crc32.Checksum(h[:16], castagnoli); crc != want {
			return 0, 0, nil, rd.corrupt(at, "end record checksum %08x, want %08x", crc, want)
		}
		if n != 0 || off != rd.extents {
			return 0, 0, nil, rd.corrupt(at, "end record says %d extents, the file holds %d", off, rd.extents)
		}
		var one [1]byte
		if m, _ := io.ReadFull(rd.r, one[:]); m != 0 {
			return 0, 0, nil, rd.corrupt(rd.pos, "bytes after the end record")
		}
		rd.done = true
		return 0, 0, nil, io.EOF
	}
	if s >= len(rd.sizes) {
		return 0, 0, nil, rd.corrupt(at, "extent of store %d; the table has %d", s, len(rd.sizes))
	}
	if n == 0 || n > MaxExtent || off > rd.sizes[s] || uint64(n) > rd.sizes[s]-off {
		return 0, 0, nil, rd.corrupt(at, "extent of %d bytes at %d outside store %s (%d bytes)", n, off, rd.Header.Stores[s].Name, rd.sizes[s])
	}
	if cap(rd.buf) < int(n) {
		rd.buf = make([]byte, n)
	}
	data = rd.buf[:n]
	if err := rd.full(data, "extent data"); err != nil {
		return 0, 0, nil, err
	}
	if want := crc32.Update(crc32.Checksum(h[:16], castagnoli), castagnoli, data); crc != want {
		return 0, 0, nil, rd.corrupt(at, "extent checksum %08x, want %08x (store %s, offset %d)", crc, want, rd.Header.Stores[s].Name, off)
	}
	rd.extents++
	return s, off, data, nil
}

func (rd *Reader) full(b []byte, what string) error {
	n, err := io.ReadFull(rd.r, b)
	rd.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return rd.corrupt(rd.pos, "cut short in the %s", what)
		}
		return fmt.Errorf("snapshot: read %s: %w", rd.name, err)
	}
	return nil
}

func (rd *Reader) corrupt(at int64, format string, a ...any) error {
	return fmt.Errorf("%w: %s at byte %d: %s", ErrCorrupt, rd.name, at, fmt.Sprintf(format, a...))
}

// readHeader opens path and reads its header and table.
func readHeader(path string) (*Reader, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	rd, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return rd, f, nil
}
