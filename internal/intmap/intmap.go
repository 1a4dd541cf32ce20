// Package intmap maps P4.org INT telemetry reports (decoded by
// wire/intreport) onto DTA's primitives: INT is an input format, DTA stays
// the memory format. From each Individual Report it derives DTA reports for
// the translator, into stores named by its Config:
//
//   - the flow's path (the node ids of an INT-MD metadata stack, in hop
//     order, then the reporting node's if it added its own metadata) as a
//     Key-Write value keyed by the flow's 5-tuple (PathStore);
//   - a per-hop postcard (INT-XD/MX: a node reporting its own metadata for
//     a packet without a stack) into Postcarding, the node id as the hop's
//     value and the hop number derived from the packet's TTL (PostcardStore);
//   - hop latency and queue occupancy as Key-Increment counters per (node,
//     queue) and per flow: sums and counts, from which means follow
//     (CounterStore; key layout in CounterKey);
//   - drop reports (D flag or drop reason metadata) as Append entries
//     (DropStore; layout in DropEntry).
//
// It does no I/O and keeps no state between packets; a Worker owns the
// buffers of one reader and allocates nothing per report.
package intmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/intreport"
)

// Config names the stores INT is mapped into ("" leaves that part out) and
// how INT is recognised in truncated packets.
type Config struct {
	PathStore     string // Key-Write, value_size a multiple of 4 (node ids of up to value_size/4 hops)
	PostcardStore string // Postcarding, with max_value ≥ the node ids used
	CounterStore  string // Key-Increment
	DropStore     string // Append, entry_size DropEntrySize
	// Detect says how INT is marked in a truncated packet (UDP ports,
	// DSCP); zero: any well-formed INT shim after TCP/UDP.
	Detect intreport.Detect
	// InitialTTLs are the TTLs (IPv6 hop limits) hosts send with; the hop
	// number of a postcard is the smallest of them at or above the packet's
	// TTL minus the TTL, plus 1. Default 64, 128, 255.
	InitialTTLs []uint8
}

// DefaultConfig maps into the stores of the embedded default configuration.
func DefaultConfig() Config {
	return Config{PathStore: "int-paths", PostcardStore: "int-postcards", CounterStore: "int-counters",
		DropStore: "int-drops", InitialTTLs: []uint8{64, 128, 255}}
}

// Counter key kinds (the first byte of a CounterStore key).
const (
	KindQueueLatency   = 1 // (node, queue): sum of hop latencies
	KindQueueCount     = 2 // (node, queue): hops counted
	KindQueueOccupancy = 3 // (node, queue): sum of queue occupancies
	KindFlowLatency    = 4 // flow: sum of its hops' latencies over its reports
	KindFlowCount      = 5 // flow: reports counted
)

// QueueKey is the counter key of a (node, queue) pair: kind, node id
// (big-endian), queue id.
func QueueKey(kind byte, node uint32, queue uint8) [6]byte {
	var k [6]byte
	k[0] = kind
	binary.BigEndian.PutUint32(k[1:], node)
	k[5] = queue
	return k
}

// FlowKey appends the counter key of a flow: kind, then the flow's 13- or
// 37-byte 5-tuple (wire/dta's form).
func FlowKey(b []byte, kind byte, f dta.FiveTuple) []byte {
	return f.AppendTo(append(b, kind))
}

// DropEntrySize is the size of a drop entry (DropEntry).
const DropEntrySize = 48

// DropEntry is one drop report as an Append entry (48 bytes, big-endian):
//
//	0  node id u32 | 4 queue id u8 | 5 drop reason u8 | 6 flags u8 (D 0x80,
//	Q 0x40, F 0x20, I 0x10, IPv6 0x01) | 7 protocol u8 | 8 source address
//	[16] (IPv4 as its 4 bytes then zeros) | 24 destination address [16] |
//	40 source port u16 | 42 destination port u16 | 44 arrival time u32 (Unix
//	seconds at the translator)
type DropEntry struct {
	Node    uint32
	Queue   uint8
	Reason  uint8
	Flags   uint8
	Flow    dta.FiveTuple
	Arrival uint32
}

// Drop entry flags.
const (
	FlagDropped      = 0x80
	FlagCongested    = 0x40
	FlagTracked      = 0x20
	FlagIntermediate = 0x10
	FlagIPv6         = 0x01
)

// AppendTo appends the 48-byte entry.
func (e DropEntry) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, e.Node)
	flags := e.Flags &^ FlagIPv6
	if e.Flow.Src.Is6() && !e.Flow.Src.Is4In6() {
		flags |= FlagIPv6
	}
	b = append(b, e.Queue, e.Reason, flags, e.Flow.Proto)
	b = appendAddr(b, e.Flow.Src)
	b = appendAddr(b, e.Flow.Dst)
	b = binary.BigEndian.AppendUint16(b, e.Flow.SrcPort)
	b = binary.BigEndian.AppendUint16(b, e.Flow.DstPort)
	return binary.BigEndian.AppendUint32(b, e.Arrival)
}

func appendAddr(b []byte, a netip.Addr) []byte {
	var x [16]byte
	if a.Is4() {
		a4 := a.As4()
		copy(x[:], a4[:])
	} else if a.IsValid() {
		x = a.As16()
	}
	return append(b, x[:]...)
}

// ParseDropEntry decodes a 48-byte drop entry.
func ParseDropEntry(b []byte) (DropEntry, error) {
	if len(b) != DropEntrySize {
		return DropEntry{}, fmt.Errorf("intmap: drop entry of %d bytes, want %d", len(b), DropEntrySize)
	}
	e := DropEntry{Node: binary.BigEndian.Uint32(b), Queue: b[4], Reason: b[5], Flags: b[6],
		Arrival: binary.BigEndian.Uint32(b[44:])}
	e.Flow.Proto = b[7]
	if e.Flags&FlagIPv6 != 0 {
		e.Flow.Src, e.Flow.Dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
	} else {
		e.Flow.Src, e.Flow.Dst = netip.AddrFrom4([4]byte(b[8:12])), netip.AddrFrom4([4]byte(b[24:28]))
	}
	e.Flow.SrcPort, e.Flow.DstPort = binary.BigEndian.Uint16(b[40:]), binary.BigEndian.Uint16(b[42:])
	return e, nil
}

// Errors of New.
var ErrStore = errors.New("intmap: store")

// target is a store the mapper writes to.
type target struct {
	id   uint16
	desc store.Descriptor
	ok   bool
}

// Mapper holds the resolved stores. It is immutable and safe for
// concurrent use; each reader uses its own Worker.
type Mapper struct {
	cfg                              Config
	path, postcard, counter, dropped target
	stats                            Stats
}

// New resolves cfg's stores among descs (the translator's stores) and
// checks each is of the primitive and geometry its part needs.
func New(cfg Config, descs []store.Descriptor) (*Mapper, error) {
	m := &Mapper{cfg: cfg}
	if len(m.cfg.InitialTTLs) == 0 {
		m.cfg.InitialTTLs = DefaultConfig().InitialTTLs
	}
	find := func(name string, p dta.Primitive, check func(store.Descriptor) error, t *target) error {
		if name == "" {
			return nil
		}
		for _, d := range descs {
			if d.Name != name {
				continue
			}
			if d.Primitive != p {
				return fmt.Errorf("%w %s is %v, INT needs %v there", ErrStore, name, d.Primitive, p)
			}
			if err := check(d); err != nil {
				return fmt.Errorf("%w %s: %v", ErrStore, name, err)
			}
			*t = target{id: d.ID, desc: d, ok: true}
			return nil
		}
		return fmt.Errorf("%w %s: no such store (INT maps into it; define it under stores, or set it to \"\")", ErrStore, name)
	}
	ok := func(store.Descriptor) error { return nil }
	if err := find(cfg.PathStore, dta.KeyWrite, func(d store.Descriptor) error {
		if d.KeyWrite.ValueSize%4 != 0 {
			return fmt.Errorf("value_size %d is not a multiple of 4 (4 bytes per node id)", d.KeyWrite.ValueSize)
		}
		return nil
	}, &m.path); err != nil {
		return nil, err
	}
	if err := find(cfg.PostcardStore, dta.Postcard, ok, &m.postcard); err != nil {
		return nil, err
	}
	if err := find(cfg.CounterStore, dta.KeyIncrement, ok, &m.counter); err != nil {
		return nil, err
	}
	if err := find(cfg.DropStore, dta.Append, func(d store.Descriptor) error {
		if d.Append.EntrySize != DropEntrySize {
			return fmt.Errorf("entry_size %d, drop entries take %d", d.Append.EntrySize, DropEntrySize)
		}
		return nil
	}, &m.dropped); err != nil {
		return nil, err
	}
	return m, nil
}

// Stats counts what the mapper did, summed over its workers.
type Stats struct {
	Packets   atomic.Uint64                           // telemetry report packets
	Reports   atomic.Uint64                           // individual reports mapped
	Malformed [intreport.NumReasons + 1]atomic.Uint64 // packets and reports refused, by reason (last: other)
	Paths     atomic.Uint64                           // Key-Write path reports derived
	Postcards atomic.Uint64
	Counters  atomic.Uint64 // Key-Increment reports derived
	Drops     atomic.Uint64
	NoFlow    atomic.Uint64 // reports whose inner contents hold no flow
	Truncated atomic.Uint64 // paths longer than the path store's value holds, cut
	OutOfTTL  atomic.Uint64 // postcards whose TTL names no hop of the postcard store, or whose node id is outside its value set
}

// Stats returns the counters.
func (m *Mapper) Stats() *Stats { return &m.stats }

// Config returns the configuration (with defaults filled in).
func (m *Mapper) Config() Config { return m.cfg }

// ParsePath returns the node ids of a path value (4 bytes each, big-endian),
// up to the first zero word (the unused tail of the value).
func ParsePath(v []byte) []uint32 {
	var out []uint32
	for i := 0; i+4 <= len(v); i += 4 {
		id := binary.BigEndian.Uint32(v[i:])
		if id == 0 {
			break
		}
		out = append(out, id)
	}
	return out
}
