package rdma

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/dta-go/dta/internal/region"
)

// Access is a set of remote access rights of a memory region.
type Access uint8

// Remote access rights.
const (
	// AccessRemoteWrite allows RDMA WRITE and WRITE with immediate.
	AccessRemoteWrite Access = 1 << iota
	// AccessRemoteAtomic allows FETCH_ADD and COMPARE_SWAP.
	AccessRemoteAtomic
	// AccessRemoteRead allows RDMA READ.
	AccessRemoteRead

	accessAll = AccessRemoteWrite | AccessRemoteAtomic | AccessRemoteRead
)

// String returns the rights joined by "|", as in "write|atomic|read".
func (a Access) String() string {
	var s []string
	if a&AccessRemoteWrite != 0 {
		s = append(s, "write")
	}
	if a&AccessRemoteAtomic != 0 {
		s = append(s, "atomic")
	}
	if a&AccessRemoteRead != 0 {
		s = append(s, "read")
	}
	if a&^accessAll != 0 || len(s) == 0 {
		s = append(s, fmt.Sprintf("0x%x", uint8(a)))
	}
	return strings.Join(s, "|")
}

// MR describes a registered memory region as a requester addresses it:
// RDMA operations name VA..VA+Length-1 and carry RKey.
type MR struct {
	Name   string // as registered
	VA     uint64 // synthetic virtual address of the first byte: non-zero, page aligned, distinct per MR
	RKey   uint32 // remote key: random, never 0
	Length uint64 // bytes, the region's size
	Access Access // the remote rights granted
}

// mr is a registered region as the responder's data path sees it.
type mr struct {
	MR
	r *region.Region
}

// contains reports whether [va, va+n) lies inside the MR, without overflow.
func (m *mr) contains(va, n uint64) bool {
	if va < m.VA {
		return false
	}
	off := va - m.VA
	return off <= m.Length && n <= m.Length-off
}

// mrTable is an immutable snapshot of the registered MRs; registration
// copies it, so the data path reads it without locking.
type mrTable struct {
	byKey  map[uint32]*mr
	byName map[string]*mr
	nextVA uint64
}

const (
	pageSize = 4096
	// vaGap separates MRs in the synthetic address space (and rounds their
	// starts up to it), so an address just past one MR is in none.
	vaGap = 1 << 21
)

var (
	errMRExists = errors.New("rdma: an MR of that name is registered")
	errNoMR     = errors.New("rdma: no MR of that name")
)

// newVABase returns a random page-aligned base for the synthetic VAs, in
// [2^44, 2^45): non-zero, far from small integers, and different per
// responder so that a VA from a previous incarnation is unlikely to hit.
func newVABase() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return 1<<44 | binary.LittleEndian.Uint64(b[:])&(1<<44-1)&^(vaGap-1)
}

// randomU32 returns a random non-zero 32-bit value.
func randomU32() uint32 {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		if v := binary.LittleEndian.Uint32(b[:]); v != 0 {
			return v
		}
	}
}

// randomU64 returns a random 64-bit value.
func randomU64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// register returns a copy of t with a new MR.
func (t *mrTable) register(name string, r *region.Region, access Access) (*mrTable, MR, error) {
	if _, ok := t.byName[name]; ok {
		return nil, MR{}, fmt.Errorf("%w: %q", errMRExists, name)
	}
	n := &mrTable{
		byKey:  make(map[uint32]*mr, len(t.byKey)+1),
		byName: make(map[string]*mr, len(t.byName)+1),
		nextVA: t.nextVA,
	}
	for k, v := range t.byKey {
		n.byKey[k] = v
	}
	for k, v := range t.byName {
		n.byName[k] = v
	}
	key := randomU32()
	for n.byKey[key] != nil {
		key = randomU32()
	}
	m := &mr{MR: MR{Name: name, VA: n.nextVA, RKey: key, Length: r.Size(), Access: access}, r: r}
	n.nextVA += (r.Size()+vaGap-1)&^(vaGap-1) + vaGap
	n.byKey[key] = m
	n.byName[name] = m
	return n, m.MR, nil
}

// deregister returns a copy of t without the MR called name.
func (t *mrTable) deregister(name string) (*mrTable, error) {
	m, ok := t.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", errNoMR, name)
	}
	n := &mrTable{
		byKey:  make(map[uint32]*mr, len(t.byKey)),
		byName: make(map[string]*mr, len(t.byName)),
		nextVA: t.nextVA,
	}
	for k, v := range t.byKey {
		if v != m {
			n.byKey[k] = v
		}
	}
	for k, v := range t.byName {
		if v != m {
			n.byName[k] = v
		}
	}
	return n, nil
}
