package tea

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The table file holds a table's buckets (originals only: shadows are
// rebuilt on restore) and its stash, so that dta tea load and dta tea
// lookup can share a table without a server. Layout, big-endian:
//
//	[0:6]    magic "DTATEA"
//	[6:8]    version, 1
//	[8:16]   buckets
//	[16:18]  cells per bucket
//	[18:20]  key size
//	[20:22]  value size
//	[22:24]  scratchpad
//	[24]     hash
//	[25:32]  zero
//	[32:40]  stash entries
//	[40:44]  CRC-32C of bytes [0:40]
//	[44:48]  zero
//	then     buckets × BucketSize bytes: bucket 0, 1, … (the cell format)
//	then     stash entries × (key ‖ value), keys in increasing byte order
//	then     CRC-32C of everything after the header (4 bytes)
const (
	fileMagic     = "DTATEA"
	fileVersion   = 1
	fileHeaderLen = 48
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFileFormat reports a table file that is not one, or is damaged.
var ErrFileFormat = errors.New("tea: not a valid table file")

// File is a decoded table file; its buckets and stash alias the decoded
// bytes.
type File struct {
	Spec    Spec
	buckets []byte
	stash   []byte
}

// StashLen returns the number of stash entries.
func (f *File) StashLen() int {
	return len(f.stash) / (f.Spec.KeySize + f.Spec.ValueSize)
}

func fileErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFileFormat, fmt.Sprintf(format, a...))
}

// DecodeFile decodes a table file. It checks everything before it trusts
// it: magic, version, checksums, the Spec, the exact length, every cell's
// flags, every entry's bucket (its key's home or the next one) and that no
// stash key repeats. It never panics and allocates only for the stash
// check.
func DecodeFile(b []byte) (*File, error) {
	if len(b) < fileHeaderLen {
		return nil, fileErr("%d bytes, shorter than the %d-byte header", len(b), fileHeaderLen)
	}
	h := b[:fileHeaderLen]
	if string(h[:6]) != fileMagic {
		return nil, fileErr("bad magic % X", h[:6])
	}
	if v := binary.BigEndian.Uint16(h[6:]); v != fileVersion {
		return nil, fileErr("version %d, want %d", v, fileVersion)
	}
	if got, want := binary.BigEndian.Uint32(h[40:]), crc32.Checksum(h[:40], castagnoli); got != want {
		return nil, fileErr("header checksum %08x, want %08x", got, want)
	}
	for _, z := range append(h[25:32:32], h[44:48]...) {
		if z != 0 {
			return nil, fileErr("reserved header bytes not zero")
		}
	}
	spec := Spec{
		Buckets:    binary.BigEndian.Uint64(h[8:]),
		Cells:      int(binary.BigEndian.Uint16(h[16:])),
		KeySize:    int(binary.BigEndian.Uint16(h[18:])),
		ValueSize:  int(binary.BigEndian.Uint16(h[20:])),
		Scratchpad: int(binary.BigEndian.Uint16(h[22:])),
		Hash:       Hash(h[24]),
	}
	if err := spec.Validate(); err != nil {
		return nil, fileErr("%v", err)
	}
	entries := binary.BigEndian.Uint64(h[32:])
	rest := uint64(len(b) - fileHeaderLen)
	body := spec.Buckets * spec.BucketSize() // < 2^57: no overflow
	es := uint64(spec.KeySize + spec.ValueSize)
	if body > rest || entries > (rest-body)/es || body+entries*es+4 != rest {
		return nil, fileErr("%d bytes after the header, want %d buckets of %d and %d stash entries of %d and a checksum",
			rest, spec.Buckets, spec.BucketSize(), entries, es)
	}
	tail := b[fileHeaderLen : len(b)-4]
	if got, want := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(tail, castagnoli); got != want {
		return nil, fileErr("checksum %08x, want %08x", got, want)
	}
	f := &File{Spec: spec, buckets: tail[:body], stash: tail[body:]}
	cs := spec.CellSize()
	for i := range spec.Buckets {
		bucket := f.buckets[i*spec.BucketSize() : (i+1)*spec.BucketSize()]
		for c := range spec.Cells {
			cell, err := spec.DecodeCell(bucket[uint64(c)*cs:])
			if err != nil {
				return nil, fileErr("bucket %d cell %d: %v", i, c, err)
			}
			if !cell.Valid {
				continue
			}
			if home := spec.HomeOf(cell.Key); home != i && spec.Next(home) != i {
				return nil, fileErr("bucket %d cell %d: key %x belongs in bucket %d or the next", i, c, cell.Key, home)
			}
		}
	}
	seen := make(map[string]struct{}, entries)
	for i := range entries {
		k := string(f.stash[i*es : i*es+uint64(spec.KeySize)])
		if _, dup := seen[k]; dup {
			return nil, fileErr("stash entry %d: key %x repeats", i, k)
		}
		seen[k] = struct{}{}
	}
	return f, nil
}

// WriteFile writes t as a table file to w.
func WriteFile(w io.Writer, t *Table) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	spec := t.spec
	keys := t.stash.Keys()
	h := make([]byte, fileHeaderLen)
	copy(h, fileMagic)
	binary.BigEndian.PutUint16(h[6:], fileVersion)
	binary.BigEndian.PutUint64(h[8:], spec.Buckets)
	binary.BigEndian.PutUint16(h[16:], uint16(spec.Cells))
	binary.BigEndian.PutUint16(h[18:], uint16(spec.KeySize))
	binary.BigEndian.PutUint16(h[20:], uint16(spec.ValueSize))
	binary.BigEndian.PutUint16(h[22:], uint16(spec.Scratchpad))
	h[24] = byte(spec.Hash)
	binary.BigEndian.PutUint64(h[32:], uint64(len(keys)))
	binary.BigEndian.PutUint32(h[40:], crc32.Checksum(h[:40], castagnoli))
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(h); err != nil {
		return err
	}
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	bucket := make([]byte, spec.BucketSize())
	for i := range spec.Buckets {
		if err := t.mem.Read(spec.BucketOffset(i), bucket); err != nil {
			return fmt.Errorf("tea: read bucket %d: %w", i, err)
		}
		if _, err := out.Write(bucket); err != nil {
			return err
		}
	}
	for _, k := range keys {
		v, _ := t.stash.Get(k, nil)
		if _, err := out.Write(k); err != nil {
			return err
		}
		if _, err := out.Write(v); err != nil {
			return err
		}
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return err
	}
	return bw.Flush()
}

// Restore writes f's buckets (originals and shadows) into mem, which must
// hold f.Spec's table, and returns its control plane with f's stash.
func Restore(f *File, mem Memory, cfg TableConfig) (*Table, error) {
	t, err := NewTable(f.Spec, mem, cfg)
	if err != nil {
		return nil, err
	}
	spec, bs, cs := f.Spec, f.Spec.BucketSize(), f.Spec.CellSize()
	for i := range spec.Buckets {
		bucket := f.buckets[i*bs : (i+1)*bs]
		if err := t.write(spec.BucketOffset(i), bucket); err != nil {
			return nil, err
		}
		if err := t.write(spec.ShadowOffset(i), bucket); err != nil {
			return nil, err
		}
		for c := range uint64(spec.Cells) {
			if bucket[c*cs] == FlagValid {
				t.entries++
			}
		}
	}
	es := spec.KeySize + spec.ValueSize
	for i := range f.StashLen() {
		e := f.stash[i*es : (i+1)*es]
		if _, _, ok, err := t.locate(e[:spec.KeySize]); err != nil {
			return nil, err
		} else if ok {
			return nil, fileErr("stash entry %d: key %x is also in the table", i, e[:spec.KeySize])
		}
		t.stash.put(e[:spec.KeySize], e[spec.KeySize:])
	}
	return t, nil
}
