package translator

import (
	"encoding/binary"
	"net/netip"
	"sync"
)

// verdict is what sequence tracking decides for a retransmittable datagram.
type verdict uint8

const (
	seqAccept    verdict = iota // in order (or the reporter's first): apply, ACK seq
	seqDuplicate                // already applied: do not apply, ACK the last accepted
	seqGap                      // a datagram is missing before it: drop, NACK the last accepted
)

const seqShards = 64

// seqTracker keeps the last accepted 8-bit sequence number per reporter
// (source address and port). It is bounded: when a shard is full an arbitrary
// reporter is forgotten (its next datagram is accepted as a new start).
type seqTracker struct {
	perShard int
	shards   [seqShards]seqShard
}

type seqShard struct {
	mu   sync.Mutex
	last map[netip.AddrPort]uint8
	_    [40]byte // keep shards on separate cache lines
}

func newSeqTracker(limit int) *seqTracker {
	t := &seqTracker{perShard: max(limit/seqShards, 1)}
	for i := range t.shards {
		t.shards[i].last = make(map[netip.AddrPort]uint8)
	}
	return t
}

func (t *seqTracker) shard(from netip.AddrPort) *seqShard {
	a := from.Addr().As16()
	h := (binary.LittleEndian.Uint64(a[8:]) ^ binary.LittleEndian.Uint64(a[:8]) ^ uint64(from.Port())) * 0x9E3779B97F4A7C15
	return &t.shards[h>>(64-6)]
}

// check applies the go-back-N rule to seq from a reporter and returns the
// verdict and the sequence number the ACK/NACK should carry.
func (t *seqTracker) check(from netip.AddrPort, seq uint8) (verdict, uint8) {
	s := t.shard(from)
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[from]
	switch {
	case !ok:
		if len(s.last) >= t.perShard {
			for k := range s.last {
				delete(s.last, k)
				break
			}
		}
	case seq == last+1:
	case last-seq < 128:
		return seqDuplicate, last
	default:
		return seqGap, last
	}
	s.last[from] = seq
	return seqAccept, seq
}
