package bench

import (
	"encoding/binary"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// MTU is the largest datagram the senders build: a 1500-byte Ethernet MTU
// minus the IPv4 and UDP headers.
const MTU = 1472

// The workload's fixed parameters: the paper's microbenchmark settings
// (Fig. 8: N = 2, 5 hops, Append batches of 16; 4-byte keys and values).
const (
	Redundancy    = 2  // Key-Write and Key-Increment copies N
	Hops          = 5  // Postcarding path length
	AppendLists   = 16 // Append lists
	AppendBatch   = 16 // Append entries per write
	postcardFlows = 8  // postcard paths interleaved in the stream
	maxValue      = 1<<20 - 1
)

// Descriptor returns the store a run of primitive p writes to: the default
// (compat) store of p, sized to memory bytes, hashed with h.
func Descriptor(p dta.Primitive, memory uint64, h hashing.Algorithm) (store.Descriptor, error) {
	d := store.Descriptor{Name: p.String(), ID: uint16(p), Primitive: p, Default: true}
	switch p {
	case dta.KeyWrite:
		d.KeyWrite = keywrite.Spec{ValueSize: 4, MaxRedundancy: 4, Hash: h}
		d.KeyWrite.Slots = d.KeyWrite.SlotsFor(memory)
	case dta.KeyIncrement:
		d.KeyIncrement = keyincrement.Spec{Redundancy: Redundancy, Hash: h}
		d.KeyIncrement.Slots = d.KeyIncrement.SlotsFor(memory)
	case dta.Postcard:
		d.Postcard = postcard.Spec{Hops: Hops, Redundancy: Redundancy, MaxValue: maxValue, Hash: h}
		d.Postcard.Chunks = d.Postcard.ChunksFor(memory)
	case dta.Append:
		d.Append = appendlist.Spec{Lists: AppendLists, EntrySize: 4, Batch: AppendBatch}
		d.Append.Capacity = d.Append.CapacityFor(memory)
	default:
		return d, fmt.Errorf("bench: unknown primitive %v", p)
	}
	if err := d.Validate(); err != nil {
		return d, fmt.Errorf("bench: %v store of %d bytes: %w", p, memory, err)
	}
	return d, nil
}

// Workload is a pool of encoded datagrams, all holding the same number of
// reports of one primitive, that senders send round and round.
type Workload struct {
	Primitive  dta.Primitive
	PerDgram   int      // reports per datagram
	Keys       int      // distinct keys (flows) in the stream
	buf        []byte   // the datagrams, back to back
	offs       []uint32 // datagram i is buf[offs[i]:offs[i+1]]
	reports    int
	reportSize int // bytes of one record in a batch (or of the body alone)
}

// Datagrams is the number of datagrams in the pool.
func (w *Workload) Datagrams() int { return len(w.offs) - 1 }

// Datagram returns datagram i of the pool.
func (w *Workload) Datagram(i int) []byte { return w.buf[w.offs[i]:w.offs[i+1]] }

// Bytes is the memory the pool holds.
func (w *Workload) Bytes() int { return cap(w.buf) + 4*cap(w.offs) }

// MaxPerDatagram is the largest number of reports of primitive p that fit
// in one MTU-sized batch datagram.
func MaxPerDatagram(p dta.Primitive) int {
	var g generator
	r := g.report(p, 0)
	size, _ := dta.RecordSize(&r)
	return min((MTU-dta.HeaderLen-1)/size, dta.MaxBatch)
}

// NewWorkload builds a pool of about reports reports of primitive p, perDgram
// per datagram (1: single-report datagrams; more: OpBatch datagrams, at most
// MaxPerDatagram(p)), over keys distinct keys drawn at random (a fixed seed:
// every run sends the same stream).
func NewWorkload(p dta.Primitive, perDgram, keys, reports int) (*Workload, error) {
	if p < dta.KeyWrite || p > dta.Postcard {
		return nil, fmt.Errorf("bench: unknown primitive %v", p)
	}
	if m := MaxPerDatagram(p); perDgram < 1 || perDgram > m {
		return nil, fmt.Errorf("bench: %d %v reports per datagram, want 1 to %d", perDgram, p, m)
	}
	if keys < 1 || keys > 1<<30 {
		return nil, fmt.Errorf("bench: %d keys, want 1 to 2^30", keys)
	}
	n := max(reports/perDgram, 1)
	g := generator{keys: uint32(keys), x: 0x9E3779B97F4A7C15}
	w := &Workload{Primitive: p, PerDgram: perDgram, Keys: keys, reports: n * perDgram}
	r := g.report(p, 0)
	size, _ := dta.RecordSize(&r)
	w.reportSize = size
	dgSize := dta.HeaderLen + size - 3 // single: header + body
	if perDgram > 1 {
		dgSize = dta.HeaderLen + 1 + perDgram*size
	}
	w.buf = make([]byte, 0, n*dgSize)
	w.offs = make([]uint32, 0, n+1)
	var bw dta.BatchWriter
	scratch := make([]byte, 0, MTU)
	var err error
	for i := range n {
		w.offs = append(w.offs, uint32(len(w.buf)))
		if perDgram == 1 {
			r := g.next(p)
			w.buf, err = dta.AppendDatagram(w.buf, dta.Header{Seq: uint8(i)}, &r)
			if err != nil {
				return nil, err
			}
			continue
		}
		bw.Reset(scratch, dta.Header{Seq: uint8(i)})
		for range perDgram {
			r := g.next(p)
			if err := bw.Add(&r); err != nil {
				return nil, err
			}
		}
		w.buf = append(w.buf, bw.Bytes()...)
	}
	w.offs = append(w.offs, uint32(len(w.buf)))
	return w, nil
}

// generator draws the reports of a stream.
type generator struct {
	keys uint32
	x    uint64
	kb   [4]byte
	vb   [4]byte
	seq  uint32 // reports drawn
	// postcards: the flows whose paths are being reported, and their next hop
	flows [postcardFlows]uint32
	hop   [postcardFlows]uint8
}

func (g *generator) rand() uint32 {
	g.x ^= g.x << 13
	g.x ^= g.x >> 7
	g.x ^= g.x << 17
	return uint32(g.x >> 32)
}

// key returns a random key among g.keys, spread over the 32-bit space.
func (g *generator) key() uint32 { return (g.rand() % g.keys) * 0x9E3779B1 }

// next draws the next report of primitive p. Its Key and Value alias g.
func (g *generator) next(p dta.Primitive) dta.Report {
	g.seq++
	switch p {
	case dta.Postcard:
		i := g.seq % postcardFlows
		if g.hop[i] == 0 || g.hop[i] > Hops {
			g.flows[i], g.hop[i] = g.key(), 1
		}
		r := g.report(p, g.flows[i])
		r.Hop = g.hop[i]
		binary.BigEndian.PutUint32(g.vb[:], uint32(g.hop[i])<<16|g.rand()&0xFFFF)
		g.hop[i]++
		return r
	case dta.Append:
		r := g.report(p, 0)
		r.List = g.seq / 64 % AppendLists
		binary.BigEndian.PutUint32(g.vb[:], g.rand())
		return r
	}
	r := g.report(p, g.key())
	binary.BigEndian.PutUint32(g.vb[:], g.rand())
	r.Delta = uint64(g.rand()%1500 + 1)
	return r
}

// report returns a compat report of primitive p with key k, aliasing g's
// key and value buffers.
func (g *generator) report(p dta.Primitive, k uint32) dta.Report {
	binary.BigEndian.PutUint32(g.kb[:], k)
	switch p {
	case dta.KeyWrite:
		return dta.Report{Opcode: dta.OpKeyWrite, Redundancy: Redundancy, Key: g.kb[:], Value: g.vb[:]}
	case dta.KeyIncrement:
		return dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: Redundancy, Key: g.kb[:], Delta: 1}
	case dta.Postcard:
		return dta.Report{Opcode: dta.OpPostcard, Key: g.kb[:], Hop: 1, Value: g.vb[:]}
	}
	return dta.Report{Opcode: dta.OpAppend, Value: g.vb[:]}
}
