// Package partition decides which collector owns a key or an Append list when
// a deployment spreads its stores over several collectors. It is the one
// function that translators, DART reporters and query clients all call, so
// that a key is written where it is later looked up.
//
// The map is rendezvous (highest-random-weight) hashing over the members'
// names (a collector's address, "IP:PORT", is the usual name): each member
// scores every key with a hash of the key mixed with a seed derived from the
// member's name, and the key belongs to the member with the highest score; the
// next highest scores name its replicas, in preference order. Two properties
// follow, and tests pin both:
//
//   - The owners of a key depend only on the set of member names, not on the
//     order they are listed in: a translator and a client configured with the
//     same collectors in a different order agree.
//   - Adding or removing a member moves only the keys it gains or loses (about
//     1/N of them); every other key keeps its owner and its replicas' order.
//
// Keys are the bytes a DTA report carries on the wire (wire/dta's Report.Key:
// the 4 big-endian bytes of a compat key, or an extended report's key);
// Append lists are numbered by their 32-bit list id. The hashes are CRC-32C
// and CRC-32 (IEEE) of the key, mixed into 64 bits, pinned by golden vectors
// in the tests: changing them would silently re-home every key of a running
// deployment.
//
// The package uses only the standard library, allocates nothing per call and
// knows nothing of networks (beyond parsing "[NAME=]IP:PORT" lists into
// members, ParseMembers), stores or reports.
package partition

import (
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// MaxMembers bounds the members of a map.
const MaxMembers = 1024

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	ieee       = crc32.IEEETable
)

// Map assigns keys and Append lists to members. It is immutable and safe for
// concurrent use.
type Map struct {
	names []string // as given
	seeds []uint64 // seeds[i] is the seed of names[i]
}

// New returns the map over the named members. Names must be non-empty and
// distinct; their order does not matter.
func New(names []string) (*Map, error) {
	if len(names) == 0 {
		return nil, errors.New("partition: no members")
	}
	if len(names) > MaxMembers {
		return nil, fmt.Errorf("partition: %d members, at most %d", len(names), MaxMembers)
	}
	m := &Map{names: slices.Clone(names), seeds: make([]uint64, len(names))}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("partition: member %d has an empty name", i)
		}
		if seen[n] {
			return nil, fmt.Errorf("partition: member %q listed twice", n)
		}
		seen[n] = true
		m.seeds[i] = seed(n)
	}
	return m, nil
}

// Len returns the number of members.
func (m *Map) Len() int { return len(m.names) }

// Name returns the name of member i (0 ≤ i < Len()), as given to New.
func (m *Map) Name(i int) string { return m.names[i] }

// Names returns a copy of the members' names, in the order given to New.
func (m *Map) Names() []string { return slices.Clone(m.names) }

// Owner returns the index (into the names given to New) of the member that
// owns key.
func (m *Map) Owner(key []byte) int { return m.best(KeyHash(key)) }

// Owners appends to dst the indices of the r members that hold key, owner
// first, then its replicas in preference order, and returns the extended
// slice. r is clamped to [1, Len()]. It allocates only if dst lacks room.
func (m *Map) Owners(dst []int, key []byte, r int) []int {
	return m.ranked(dst, KeyHash(key), r)
}

// ListOwner returns the index of the member that owns Append list id list.
func (m *Map) ListOwner(list uint32) int { return m.best(ListHash(list)) }

// ListOwners is Owners for an Append list.
func (m *Map) ListOwners(dst []int, list uint32, r int) []int {
	return m.ranked(dst, ListHash(list), r)
}

// KeyHash is the 64-bit hash of key that every member's score starts from:
// CRC-32C of the key in the high half, CRC-32 (IEEE) in the low half.
func KeyHash(key []byte) uint64 {
	return uint64(crc32.Checksum(key, castagnoli))<<32 | uint64(crc32.ChecksumIEEE(key))
}

// ListHash is the 64-bit hash of an Append list id: KeyHash of the id's 4
// big-endian bytes, as a list id travels on the wire.
func ListHash(list uint32) uint64 {
	// The table loop keeps the 4 bytes on the stack (crc32.Checksum would
	// make them escape).
	c, i := ^uint32(0), ^uint32(0)
	for sh := 24; sh >= 0; sh -= 8 {
		b := byte(list >> sh)
		c = castagnoli[byte(c)^b] ^ c>>8
		i = ieee[byte(i)^b] ^ i>>8
	}
	return uint64(^c)<<32 | uint64(^i)
}

// Score is member i's score for a key hash h. Higher wins; ties (which need
// two 64-bit scores to be equal) go to the member with the smaller name.
func (m *Map) Score(i int, h uint64) uint64 { return fmix64(h ^ m.seeds[i]) }

func (m *Map) best(h uint64) int {
	best, bestScore := 0, m.Score(0, h)
	for i := 1; i < len(m.seeds); i++ {
		if s := m.Score(i, h); s > bestScore || s == bestScore && m.names[i] < m.names[best] {
			best, bestScore = i, s
		}
	}
	return best
}

// ranked appends the r best members for h, best first: a selection over the
// scores, O(Len × r), which for the few replicas used beats sorting.
func (m *Map) ranked(dst []int, h uint64, r int) []int {
	r = min(max(r, 1), len(m.seeds))
	start := len(dst)
	for range r {
		best, bestScore, found := -1, uint64(0), false
		for i := range m.seeds {
			if slices.Contains(dst[start:], i) {
				continue
			}
			s := m.Score(i, h)
			if !found || s > bestScore || s == bestScore && m.names[i] < m.names[best] {
				best, bestScore, found = i, s, true
			}
		}
		dst = append(dst, best)
	}
	return dst
}

// seed derives a member's 64-bit seed from its name.
func seed(name string) uint64 {
	b := []byte(name)
	return fmix64(uint64(crc32.Checksum(b, castagnoli))<<32 | uint64(crc32.ChecksumIEEE(b)) ^ 0x9e3779b97f4a7c15)
}

// fmix64 is the 64-bit finaliser of MurmurHash3: every input bit affects
// every output bit.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
