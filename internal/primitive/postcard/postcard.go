// Package postcard is the Postcarding primitive (the paper's design, not the
// prototype's broken one). Per-hop postcards of a flow are cached at the
// translator and written as one chunk of B hop slots once the path is complete,
// early when another flow takes the cache entry, or when the entry ages out.
// Each hop slot holds checksum(flow, hop) XOR g(value); hops that did not
// report hold checksum(flow, hop) XOR g(⊔). A query decodes the flow's chunk(s)
// with the value set and returns the hop list, or not-found.
//
// Memory layout (docs/PROTOCOL.md): Chunks chunks of Hops 4-byte slots; slot i
// of a flow's chunk holds HopChecksum(i+1, key) XOR v as a big-endian word,
// where v is the hop's value (g is the identity on the value set [MinValue,
// MaxValue]), Blank (the hop did not report) or End (beyond the path's known
// end). With redundancy N the same chunk is written at N
// hash-chosen chunk indices.
//
// For a 32-bit compat key the hashed key bytes are its big-endian wire bytes,
// as the prototype hashes Postcarding keys. The package does no I/O; the
// translator-side Cache is its only state.
package postcard

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/dta"
)

// SlotSize is the size of one hop slot (b = 32-bit encodings).
const SlotSize = 4

// The two reserved encodings, never members of the value set:
//
//   - Blank is g(⊔), stored for a hop of the path that did not report;
//   - End is stored for the slots beyond the path's end when the end is known
//     (the path length arrived with a postcard), so that a query can tell a
//     short complete path from one written early with its last hops missing.
const (
	Blank uint32 = 0xFFFFFFFF
	End   uint32 = 0xFFFFFFFE
)

// MaxChunks is the largest chunk count (chunk hashes are 32-bit).
const MaxChunks = 1 << 32

// Spec is the geometry of one Postcarding store.
type Spec struct {
	Chunks     uint64            // number of chunks; a power of two for Hash CRC32
	Hops       int               // slots per chunk B, the longest path, 1..8
	Redundancy int               // chunks written per path N, 1..8
	MinValue   uint32            // the value set V is [MinValue, MaxValue]
	MaxValue   uint32            // must be below End
	Hash       hashing.Algorithm // chunk index family
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Chunks < 2 || s.Chunks > MaxChunks:
		return fmt.Errorf("chunks: %d out of range [2, 2^32]", s.Chunks)
	case !s.Hash.Valid():
		return fmt.Errorf("hash: %v is not a known hash", s.Hash)
	case s.Hash == hashing.CRC32 && s.Chunks&(s.Chunks-1) != 0:
		return fmt.Errorf("chunks: %d is not a power of two, which hash crc32 needs", s.Chunks)
	case s.Hops < 1 || s.Hops > hashing.MaxHops:
		return fmt.Errorf("hops: %d out of range [1, %d]", s.Hops, hashing.MaxHops)
	case s.Redundancy < 1 || s.Redundancy > dta.MaxRedundancy:
		return fmt.Errorf("redundancy: %d out of range [1, %d]", s.Redundancy, dta.MaxRedundancy)
	case s.MaxValue >= End:
		return fmt.Errorf("max_value: %#x must be below the reserved encodings %#x and %#x", s.MaxValue, End, Blank)
	case s.MinValue > s.MaxValue:
		return fmt.Errorf("min_value: %d above max_value %d", s.MinValue, s.MaxValue)
	}
	return nil
}

// ChunkSize is the bytes of one chunk.
func (s Spec) ChunkSize() uint64 { return uint64(s.Hops) * SlotSize }

// RegionSize is the bytes of memory the store needs.
func (s Spec) RegionSize() uint64 { return s.Chunks * s.ChunkSize() }

// ChunksFor returns how many chunks fit in memory bytes, rounded down to a
// power of two when the hash needs it.
func (s Spec) ChunksFor(memory uint64) uint64 {
	n := min(memory/s.ChunkSize(), MaxChunks)
	if s.Hash == hashing.CRC32 && n > 0 {
		for n&(n-1) != 0 {
			n &= n - 1
		}
	}
	return n
}

// ValueSetSize is |V|.
func (s Spec) ValueSetSize() uint64 { return uint64(s.MaxValue-s.MinValue) + 1 }

// Offset returns the byte offset of chunk copy n of a key hashed as k.
func (s Spec) Offset(k hashing.Keyed, n int) uint64 {
	return hashing.Reduce(k.Slot(n), s.Chunks) * s.ChunkSize()
}

// CompatKey returns the key bytes hashed for a 32-bit compat key: its
// big-endian wire bytes.
func CompatKey(key32 uint32) [4]byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], key32)
	return b
}

// Translation errors; each is a reason a postcard is dropped.
var (
	ErrHop     = errors.New("hop beyond the store's path length")
	ErrValue   = errors.New("hop value outside the store's value set")
	ErrPathLen = errors.New("path length beyond the store's hops")
)

// ParseValue interprets a hop value of 1..8 bytes (the wire's MaxHopValue)
// as a big-endian number. A number that does not fit the 4 bytes a chunk
// holds per hop is outside every value set: ErrValue.
func ParseValue(b []byte) (uint32, error) {
	if len(b) < 1 || len(b) > 8 {
		return 0, ErrValue
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	if v > 1<<32-1 {
		return 0, ErrValue
	}
	return uint32(v), nil
}

// encodeChunk fills dst (ChunkSize bytes) with the encoded chunk of a path:
// vals[i] for hops whose bit is set in present, End for hops at or beyond a
// known path length pathLen (0: unknown), Blank for the others.
func (s *Spec) encodeChunk(dst []byte, key []byte, vals *[hashing.MaxHops]uint32, present uint8, pathLen int) {
	for i := range s.Hops {
		v := Blank
		switch {
		case present&(1<<i) != 0:
			v = vals[i]
		case pathLen != 0 && i >= pathLen:
			v = End
		}
		binary.BigEndian.PutUint32(dst[i*SlotSize:], hashing.HopChecksum(i+1, key)^v)
	}
}
