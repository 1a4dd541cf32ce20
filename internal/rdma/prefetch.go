package rdma

import (
	"encoding/binary"

	"github.com/dta-go/dta/wire/roce"
)

// prefetchMax is how many target words one Region.Prefetch call asks for.
const prefetchMax = 64

// prefetcher asks for the cache lines a received batch will write before
// any packet of it executes, so that the batch's cache misses overlap
// instead of each packet waiting for its own (in-order store commit makes
// a missed store hold back every store after it). It reads each packet's
// target address without checking the packet: it is a hint and changes
// nothing; execute checks everything again.
type prefetcher struct {
	offs  [prefetchMax]uint64
	n     int
	cur   *mr // the MR offs belong to
	key   uint32
	found *mr // the MR of key: one lookup per run of packets to one MR
}

// add notes the target of packet b (a WRITE's first packet or an atomic).
func (f *prefetcher) add(t *mrTable, b []byte) {
	if len(b) < roce.BTHLen+roce.RETHLen+roce.ICRCLen {
		return
	}
	switch roce.Opcode(b[0]) {
	case roce.OpWriteOnly, roce.OpWriteOnlyImm, roce.OpWriteFirst, roce.OpFetchAdd, roce.OpCompareSwap:
	default:
		return
	}
	// RETH and AtomicETH both start with the VA and the RKey.
	va := binary.BigEndian.Uint64(b[roce.BTHLen:])
	key := binary.BigEndian.Uint32(b[roce.BTHLen+8:])
	if f.found == nil || key != f.key {
		f.key, f.found = key, t.byKey[key]
		if f.found == nil {
			return
		}
	}
	m := f.found
	if !m.contains(va, 8) {
		return
	}
	if m != f.cur || f.n == prefetchMax {
		f.flush()
		f.cur = m
	}
	f.offs[f.n] = va - m.VA
	f.n++
}

// flush issues the prefetches noted.
func (f *prefetcher) flush() {
	if f.n > 0 {
		f.cur.r.Prefetch(f.offs[:f.n])
	}
	f.n, f.cur = 0, nil
}

// reset forgets the MR looked up last (the MR table may have changed).
func (f *prefetcher) reset() { f.flush(); f.found = nil }
