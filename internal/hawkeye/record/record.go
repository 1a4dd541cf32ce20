// Package record is the contract between HAWKEYE's switch controllers and
// its analyzer: the byte layouts of the telemetry records, the DTA stores
// they travel into, and which primitive carries which record.
//
// A polled switch reports, per live epoch:
//
//	record     primitive   store (id)        key / list              size
//	flow       Append      hk-flows (40)     list = switch mod 32    36 B entry
//	port       Append      hk-ports (41)     list = switch mod 32    32 B entry
//	meter      Key-Write   hk-meters (42)    poll|switch|epoch|in|out (10 B)  8 B value
//	manifest   Append      hk-polls (43)     list 0                  44 B entry
//
// Flow and port records are Append entries: a poll produces a variable
// number of them per switch and epoch, written once and read once, in full
// and in order, by the analyzer, which is what an Append list is for (no
// hashing, no collisions, a cursor per list). Port-pair meters are Key-Write
// values: a switch has ports² of them per epoch, most never needed; the
// analyzer looks up only the pairs whose ingress faces a paused upstream port
// (Algorithm 1's meter[p_i][p_j]), by a key it can compute, and the N copies
// with checksums guard those few lookups. Each switch's manifest goes last:
// it says how many records of each kind the switch sent for the poll, so the
// analyzer knows when it holds them all.
//
// Every record carries the poll id, so polls share the stores. All integers
// are big-endian. Queue depths are in packets; meters in bytes.
//
// What the package must not do: it imports only the standard library; it
// knows nothing of how records are produced (internal/hawkeye/telemetry) or
// read (internal/hawkeye/diagnose).
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Stores: names, ids and geometry (StoresYAML).
const (
	FlowStore    = "hk-flows"
	FlowStoreID  = 40
	PortStore    = "hk-ports"
	PortStoreID  = 41
	MeterStore   = "hk-meters"
	MeterStoreID = 42
	PollStore    = "hk-polls"
	PollStoreID  = 43
	// Lists is the number of lists of the flow and port stores.
	Lists = 32
	// MeterCopies is the Key-Write redundancy of meters.
	MeterCopies = 2
)

// Record sizes in bytes.
const (
	FlowSize       = 36
	PortSize       = 32
	MeterKeySize   = 10
	MeterValueSize = 8
	ManifestSize   = 44
)

// ErrTruncated is returned by Decode for a buffer shorter than the record.
var ErrTruncated = errors.New("record: truncated")

// Tuple is a flow's 5-tuple.
type Tuple struct {
	SrcIP, DstIP     uint32
	SrcPort, DstPort uint16
	Proto            uint8
}

// String returns "udp,10.0.0.1:49152,10.0.0.2:4791", the client's 5-tuple
// key form.
func (t Tuple) String() string {
	proto := fmt.Sprint(t.Proto)
	switch t.Proto {
	case 6:
		proto = "tcp"
	case 17:
		proto = "udp"
	}
	return fmt.Sprintf("%s,%s:%d,%s:%d", proto, IP(t.SrcIP), t.SrcPort, IP(t.DstIP), t.DstPort)
}

// IP formats an IPv4 address.
func IP(a uint32) string {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}).String()
}

func putTuple(b []byte, t Tuple) {
	b[0] = t.Proto
	binary.BigEndian.PutUint32(b[1:], t.SrcIP)
	binary.BigEndian.PutUint32(b[5:], t.DstIP)
	binary.BigEndian.PutUint16(b[9:], t.SrcPort)
	binary.BigEndian.PutUint16(b[11:], t.DstPort)
}

func getTuple(b []byte) Tuple {
	return Tuple{Proto: b[0], SrcIP: binary.BigEndian.Uint32(b[1:]), DstIP: binary.BigEndian.Uint32(b[5:]),
		SrcPort: binary.BigEndian.Uint16(b[9:]), DstPort: binary.BigEndian.Uint16(b[11:])}
}

// Flow is one flow slot of one epoch of one switch:
//
//	0 poll u32 | 4 switch u16 | 6 epoch u16 | 8 port u8 | 9 tuple (proto u8,
//	src ip, dst ip, src port, dst port: 13 B) | 22 pkts u32 | 26 paused u32 |
//	30 qdepth u32 | 34 queued u16
type Flow struct {
	Poll   uint32
	Switch uint16
	Epoch  uint16 // timestamp bits [b+9:b]: ring index and epoch ID
	Port   uint8  // egress port
	Tuple  Tuple
	Pkts   uint32 // packets enqueued
	Paused uint32 // of which while the port was paused
	// QDepth sums the queue depth (packets) that the flow's unpaused
	// packets found; Queued counts those that found a non-empty queue
	// (saturates at 65535). Paused packets wait for PFC, not for the
	// queue's other flows: the contention analysis leaves them out.
	QDepth uint32
	Queued uint16
}

// AppendTo appends the record's FlowSize bytes to b.
func (r *Flow) AppendTo(b []byte) []byte {
	b, e := grow(b, FlowSize)
	binary.BigEndian.PutUint32(e[0:], r.Poll)
	binary.BigEndian.PutUint16(e[4:], r.Switch)
	binary.BigEndian.PutUint16(e[6:], r.Epoch)
	e[8] = r.Port
	putTuple(e[9:], r.Tuple)
	binary.BigEndian.PutUint32(e[22:], r.Pkts)
	binary.BigEndian.PutUint32(e[26:], r.Paused)
	binary.BigEndian.PutUint32(e[30:], r.QDepth)
	binary.BigEndian.PutUint16(e[34:], r.Queued)
	return b
}

// Decode fills r from b.
func (r *Flow) Decode(b []byte) error {
	if len(b) < FlowSize {
		return ErrTruncated
	}
	*r = Flow{Poll: binary.BigEndian.Uint32(b[0:]), Switch: binary.BigEndian.Uint16(b[4:]), Epoch: binary.BigEndian.Uint16(b[6:]),
		Port: b[8], Tuple: getTuple(b[9:]), Pkts: binary.BigEndian.Uint32(b[22:]), Paused: binary.BigEndian.Uint32(b[26:]),
		QDepth: binary.BigEndian.Uint32(b[30:]), Queued: binary.BigEndian.Uint16(b[34:])}
	return nil
}

// Peer kinds of a port.
const (
	PeerNone   uint8 = 0
	PeerSwitch uint8 = 1
	PeerHost   uint8 = 2
)

// FlagPausedNow marks a port paused by PFC when the controller read it.
const FlagPausedNow uint8 = 1

// Port is one egress port of one epoch of one switch:
//
//	0 poll u32 | 4 switch u16 | 6 epoch u16 | 8 port u8 | 9 peer kind u8 |
//	10 peer u16 | 12 peer port u8 | 13 flags u8 | 14 pkts u32 |
//	18 paused u32 | 22 qdepth u32 | 26 pause frames received u32 |
//	30 pause frames sent u16
type Port struct {
	Poll     uint32
	Switch   uint16
	Epoch    uint16
	Port     uint8
	PeerKind uint8  // PeerSwitch or PeerHost (the switch knows its links)
	Peer     uint16 // the peer's node id
	PeerPort uint8
	Flags    uint8
	Pkts     uint32
	Paused   uint32
	QDepth   uint32
	PauseRx  uint32 // PAUSE frames received on the port
	// PauseTx counts PAUSE frames the switch sent out of the port: its
	// ingress from the peer was above Xoff (saturates at 65535).
	PauseTx uint16
}

// AppendTo appends the record's PortSize bytes to b.
func (r *Port) AppendTo(b []byte) []byte {
	b, e := grow(b, PortSize)
	binary.BigEndian.PutUint32(e[0:], r.Poll)
	binary.BigEndian.PutUint16(e[4:], r.Switch)
	binary.BigEndian.PutUint16(e[6:], r.Epoch)
	e[8], e[9] = r.Port, r.PeerKind
	binary.BigEndian.PutUint16(e[10:], r.Peer)
	e[12], e[13] = r.PeerPort, r.Flags
	binary.BigEndian.PutUint32(e[14:], r.Pkts)
	binary.BigEndian.PutUint32(e[18:], r.Paused)
	binary.BigEndian.PutUint32(e[22:], r.QDepth)
	binary.BigEndian.PutUint32(e[26:], r.PauseRx)
	binary.BigEndian.PutUint16(e[30:], r.PauseTx)
	return b
}

// Decode fills r from b.
func (r *Port) Decode(b []byte) error {
	if len(b) < PortSize {
		return ErrTruncated
	}
	*r = Port{Poll: binary.BigEndian.Uint32(b[0:]), Switch: binary.BigEndian.Uint16(b[4:]), Epoch: binary.BigEndian.Uint16(b[6:]),
		Port: b[8], PeerKind: b[9], Peer: binary.BigEndian.Uint16(b[10:]), PeerPort: b[12], Flags: b[13],
		Pkts: binary.BigEndian.Uint32(b[14:]), Paused: binary.BigEndian.Uint32(b[18:]), QDepth: binary.BigEndian.Uint32(b[22:]),
		PauseRx: binary.BigEndian.Uint32(b[26:]), PauseTx: binary.BigEndian.Uint16(b[30:])}
	return nil
}

// Meter is the bytes one switch forwarded from ingress In to egress Out in
// one epoch.
type Meter struct {
	Poll    uint32
	Switch  uint16
	Epoch   uint16
	In, Out uint8
	Bytes   uint64
}

// Key returns the meter's Key-Write key: poll u32 | switch u16 | epoch u16
// | in u8 | out u8.
func (r *Meter) Key() []byte {
	return MeterKey(r.Poll, r.Switch, r.Epoch, r.In, r.Out)
}

// MeterKey returns the Key-Write key of a meter.
func MeterKey(poll uint32, sw, epoch uint16, in, out uint8) []byte {
	k := make([]byte, MeterKeySize)
	binary.BigEndian.PutUint32(k[0:], poll)
	binary.BigEndian.PutUint16(k[4:], sw)
	binary.BigEndian.PutUint16(k[6:], epoch)
	k[8], k[9] = in, out
	return k
}

// Value returns the meter's Key-Write value: bytes u64.
func (r *Meter) Value() []byte { return binary.BigEndian.AppendUint64(nil, r.Bytes) }

// MeterValue decodes a meter's Key-Write value.
func MeterValue(b []byte) (uint64, error) {
	if len(b) < MeterValueSize {
		return 0, ErrTruncated
	}
	return binary.BigEndian.Uint64(b), nil
}

// Roles of a switch in a poll (bits).
const (
	RoleVictimPath uint8 = 1 // reached along the victim's path (flag 01)
	RolePFC        uint8 = 2 // reached along PFC causality (flag 1*)
	RoleFull       uint8 = 4 // polled because every switch is (full polling)
)

// Manifest is one switch's last report for a poll:
//
//	0 poll u32 | 4 switch u16 | 6 switches in the poll u16 | 8 role u8 |
//	9 strategy u8 | 10 flows u32 | 14 ports u32 | 18 meters u32 |
//	22 trigger time ns u64 | 30 victim tuple (13 B) | 43 reserved u8
type Manifest struct {
	Poll     uint32
	Switch   uint16
	Switches uint16 // manifests the poll has
	Role     uint8
	Strategy uint8
	Flows    uint32 // flow records this switch sent for the poll
	Ports    uint32
	Meters   uint32
	At       uint64 // when the agent fired, ns of simulated time
	Victim   Tuple
}

// AppendTo appends the record's ManifestSize bytes to b.
func (r *Manifest) AppendTo(b []byte) []byte {
	b, e := grow(b, ManifestSize)
	binary.BigEndian.PutUint32(e[0:], r.Poll)
	binary.BigEndian.PutUint16(e[4:], r.Switch)
	binary.BigEndian.PutUint16(e[6:], r.Switches)
	e[8], e[9] = r.Role, r.Strategy
	binary.BigEndian.PutUint32(e[10:], r.Flows)
	binary.BigEndian.PutUint32(e[14:], r.Ports)
	binary.BigEndian.PutUint32(e[18:], r.Meters)
	binary.BigEndian.PutUint64(e[22:], r.At)
	putTuple(e[30:], r.Victim)
	return b
}

// Decode fills r from b.
func (r *Manifest) Decode(b []byte) error {
	if len(b) < ManifestSize {
		return ErrTruncated
	}
	*r = Manifest{Poll: binary.BigEndian.Uint32(b[0:]), Switch: binary.BigEndian.Uint16(b[4:]), Switches: binary.BigEndian.Uint16(b[6:]),
		Role: b[8], Strategy: b[9], Flows: binary.BigEndian.Uint32(b[10:]), Ports: binary.BigEndian.Uint32(b[14:]),
		Meters: binary.BigEndian.Uint32(b[18:]), At: binary.BigEndian.Uint64(b[22:]), Victim: getTuple(b[30:])}
	return nil
}

// grow appends n zero bytes to b and returns b and the new bytes.
func grow(b []byte, n int) ([]byte, []byte) {
	l := len(b)
	b = append(b, make([]byte, n)...)
	return b, b[l:]
}

// List returns the Append list of a switch's flow and port records.
func List(sw uint16) uint32 { return uint32(sw) % Lists }

// StoresYAML returns the stores: section a DTA configuration needs for
// HAWKEYE (indented for a top-level "stores:" key).
func StoresYAML() string {
	return fmt.Sprintf(`stores:
  - {name: %s, id: %d, primitive: append, lists: %d, capacity: 65536, entry_size: %d, batch: 4}
  - {name: %s, id: %d, primitive: append, lists: %d, capacity: 16384, entry_size: %d, batch: 4}
  - {name: %s, id: %d, primitive: keywrite, slots: 262144, value_size: %d, redundancy: %d}
  - {name: %s, id: %d, primitive: append, lists: 1, capacity: 16384, entry_size: %d, batch: 1}
`, FlowStore, FlowStoreID, Lists, FlowSize, PortStore, PortStoreID, Lists, PortSize,
		MeterStore, MeterStoreID, MeterValueSize, MeterCopies, PollStore, PollStoreID, ManifestSize)
}

// ConfigYAML returns a whole dta configuration file for HAWKEYE: its
// stores only, memory not prefaulted, acknowledgements to the reporter's
// own port (so that a reporter on any port can retransmit), INT off.
func ConfigYAML() string {
	return `# dta configuration for HAWKEYE (dta hawkeye config): dta up --config FILE
collector:
  prefault: false
translator:
  readers: 1
  recv_buffer: 8MiB
  ack_port: 0
int:
  path_store: ""
  postcard_store: ""
  counter_store: ""
  drop_store: ""
` + StoresYAML()
}
