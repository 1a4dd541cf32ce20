package nf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/dta-go/dta/internal/tea"
)

// Kind is a network function: what its table's keys are and which address
// of a packet it rewrites in each direction.
type Kind uint8

// The network functions.
const (
	// NAT is source NAT. Keys are the packet's IPv4 5-tuple as seen on the
	// wire (KeySize 13, the layout of dta tea load's 5-tuple keys); values
	// are an address and port (ValueSize 6). An outbound packet (read from
	// the inside interface) gets the value as its source; an inbound one
	// (read from the outside interface) gets it as its destination. NATEntries
	// makes the two entries of one flow.
	NAT Kind = iota + 1
	// LB is an L4 load balancer. Keys are protocol ‖ address ‖ port
	// (KeySize 7); values are an address and port (ValueSize 6). A packet
	// from a client (inside interface) is looked up by its destination, a
	// VIP:port, and sent to the backend of the value; a backend's reply
	// (outside interface) is looked up by its source and gets the VIP:port
	// back as its source. LBEntries makes the two entries of one service.
	LB
)

// String returns the NF's command-line name.
func (k Kind) String() string {
	switch k {
	case NAT:
		return "nat"
	case LB:
		return "lb"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// KeySize returns the table's key size for k.
func (k Kind) KeySize() int {
	if k == LB {
		return 7
	}
	return 13
}

// ValueSize is the table's value size for every NF: an IPv4 address and a
// port, big-endian.
const ValueSize = 6

// Direction says which interface a packet came from.
type Direction uint8

// The directions.
const (
	Outbound Direction = iota // from the inside interface (clients, private hosts)
	Inbound                   // from the outside interface (servers, backends)
)

// AppendKey appends the table key of packet p travelling in dir.
func (k Kind) AppendKey(dst []byte, p *Packet, dir Direction) []byte {
	if k == LB {
		ip, port := p.Dst, p.DstPort
		if dir == Inbound {
			ip, port = p.Src, p.SrcPort
		}
		dst = append(dst, p.Proto)
		dst = append(dst, ip[:]...)
		return binary.BigEndian.AppendUint16(dst, port)
	}
	dst = append(dst, p.Src[:]...)
	dst = append(dst, p.Dst[:]...)
	dst = binary.BigEndian.AppendUint16(dst, p.SrcPort)
	dst = binary.BigEndian.AppendUint16(dst, p.DstPort)
	return append(dst, p.Proto)
}

// rewrite applies value to b, parsed as p, travelling in dir.
func (k Kind) rewrite(b []byte, p *Packet, dir Direction, value []byte) {
	ip, port := [4]byte(value[:4]), binary.BigEndian.Uint16(value[4:6])
	if (k == NAT) == (dir == Outbound) {
		p.SetSrc(b, ip, port)
	} else {
		p.SetDst(b, ip, port)
	}
}

// Entry is one key and value of an NF's table.
type Entry struct {
	Key, Value []byte
}

func addrValue(a netip.AddrPort) []byte {
	ip := a.Addr().As4()
	return binary.BigEndian.AppendUint16(ip[:], a.Port())
}

func tupleKey(proto uint8, src, dst netip.AddrPort) []byte {
	s, d := src.Addr().As4(), dst.Addr().As4()
	k := append(s[:], d[:]...)
	k = binary.BigEndian.AppendUint16(k, src.Port())
	k = binary.BigEndian.AppendUint16(k, dst.Port())
	return append(k, proto)
}

// NATEntries returns the two entries translating one flow from private to
// remote as public: the outbound key private→remote maps to public, the
// inbound key remote→public maps back to private. Addresses must be IPv4.
func NATEntries(proto uint8, private, public, remote netip.AddrPort) [2]Entry {
	return [2]Entry{
		{tupleKey(proto, private, remote), addrValue(public)},
		{tupleKey(proto, remote, public), addrValue(private)},
	}
}

// LBEntries returns the two entries of one service: the VIP:port maps to
// the backend, and the backend's address maps back to the VIP:port.
func LBEntries(proto uint8, vip, backend netip.AddrPort) [2]Entry {
	key := func(a netip.AddrPort) []byte {
		ip := a.Addr().As4()
		return binary.BigEndian.AppendUint16(append([]byte{proto}, ip[:]...), a.Port())
	}
	return [2]Entry{{key(vip), addrValue(backend)}, {key(backend), addrValue(vip)}}
}

// Stats counts an NF's packets; all fields are updated atomically. Every
// packet given to Process ends in exactly one of Translated or a drop
// counter.
type Stats struct {
	Received    atomic.Uint64    // packets given to Process
	Translated  [2]atomic.Uint64 // packets rewritten and sent on, per Direction
	NoEntry     atomic.Uint64    // dropped: the table has no entry for the key
	Malformed   atomic.Uint64    // dropped: truncated
	Unsupported atomic.Uint64    // dropped: not IPv4 (IPv6 too), not TCP or UDP, or a fragment
	TooBig      atomic.Uint64    // dropped: larger than MaxPacket
	Busy        atomic.Uint64    // dropped: every lookup slot was in use
	Unavailable atomic.Uint64    // dropped: no server answered the lookup
	Lost        atomic.Uint64    // dropped: the packet parked in a scratchpad was overwritten
	SendErrors  atomic.Uint64    // dropped: the output refused the packet
}

// Config configures an NF.
type Config struct {
	Kind Kind // required
	// Placement, Readers, Stash and Cache are the table's, as for
	// tea.Config; Stash and Cache come from the tea.Table that writes it.
	Placement *tea.Placement
	Readers   []tea.Reader
	Stash     *tea.Stash
	Cache     *tea.Cache
	// Engine holds the engine's other settings (InFlight, Timeout, …); its
	// Placement, Readers, Stash, Cache and Done are ignored.
	Engine tea.Config
	// MaxPacket is the largest packet an NF parks; default 2048.
	MaxPacket int
	// Send takes every translated packet with the direction it arrived
	// from (it goes out the other interface). It is called from the
	// goroutine that completes the lookup and must not keep b. Required.
	Send func(dir Direction, b []byte) error
}

type parked struct {
	buf []byte
	n   int
	dir Direction
}

// NF is a network function whose table is a TEA table: Process parses a
// packet, parks it and looks its key up through a tea.Engine; when the
// result arrives the packet is rewritten and given to Send, or dropped and
// counted. With a local reader the result arrives before Process returns;
// over RDMA it arrives from the reader's goroutine. Process may be called
// from several goroutines.
type NF struct {
	kind  Kind
	eng   *tea.Engine
	send  func(Direction, []byte) error
	slots []parked
	free  chan int32
	spad  int // the scratchpad's bytes: packets up to this size wait in the server's memory
	stats Stats
}

// New returns an NF; it validates the table's Spec against cfg.Kind.
func New(cfg Config) (*NF, error) {
	if cfg.Kind != NAT && cfg.Kind != LB {
		return nil, fmt.Errorf("kind: %v, want nat or lb", cfg.Kind)
	}
	if cfg.Send == nil {
		return nil, errors.New("send: required")
	}
	if cfg.Placement == nil {
		return nil, errors.New("placement: required")
	}
	spec := cfg.Placement.Spec()
	if spec.KeySize != cfg.Kind.KeySize() || spec.ValueSize != ValueSize {
		return nil, fmt.Errorf("table: %d-byte keys and %d-byte values, %v wants %d and %d",
			spec.KeySize, spec.ValueSize, cfg.Kind, cfg.Kind.KeySize(), ValueSize)
	}
	if cfg.MaxPacket == 0 {
		cfg.MaxPacket = 2048
	}
	if cfg.MaxPacket < 28 || cfg.MaxPacket > 65535 {
		return nil, fmt.Errorf("max_packet: %d out of range [28, 65535]", cfg.MaxPacket)
	}
	n := &NF{kind: cfg.Kind, send: cfg.Send, spad: spec.Scratchpad}
	ec := cfg.Engine
	ec.Placement, ec.Readers, ec.Stash, ec.Cache, ec.Done = cfg.Placement, cfg.Readers, cfg.Stash, cfg.Cache, n.done
	if ec.HotThreshold == 0 {
		ec.HotThreshold = ^uint32(0) // no control plane takes digests here
	}
	if ec.InFlight == 0 {
		ec.InFlight = tea.DefaultConfig().InFlight
	}
	eng, err := tea.New(ec)
	if err != nil {
		return nil, err
	}
	n.eng = eng
	n.slots = make([]parked, ec.InFlight)
	n.free = make(chan int32, ec.InFlight)
	for i := range n.slots {
		n.slots[i].buf = make([]byte, cfg.MaxPacket)
		n.free <- int32(i)
	}
	return n, nil
}

// Stats returns the NF's counters.
func (n *NF) Stats() *Stats { return &n.stats }

// Engine returns the NF's lookup engine (its Stats, ServerStats).
func (n *NF) Engine() *tea.Engine { return n.eng }

// Run expires lookups unanswered past the engine's timeout until ctx is
// done (tea.Engine.Run); run it when the readers are remote.
func (n *NF) Run(ctx context.Context) error { return n.eng.Run(ctx) }

// Process takes one packet that arrived in dir. It copies what it keeps:
// b may be reused when Process returns. It returns the parsing error of a
// packet it dropped at once (counted), else nil.
func (n *NF) Process(dir Direction, b []byte) error {
	n.stats.Received.Add(1)
	p, err := Parse(b)
	switch {
	case errors.Is(err, ErrUnsupported), errors.Is(err, ErrNotIPv4):
		n.stats.Unsupported.Add(1)
		return err
	case err != nil:
		n.stats.Malformed.Add(1)
		return err
	}
	if len(b) > len(n.slots[0].buf) {
		n.stats.TooBig.Add(1)
		return ErrTooBig
	}
	var kb [13]byte
	key := n.kind.AppendKey(kb[:0], &p, dir)
	var idx int32
	select {
	case idx = <-n.free:
	default:
		n.stats.Busy.Add(1)
		return tea.ErrBusy
	}
	s := &n.slots[idx]
	s.dir = dir
	if len(b) <= n.spad {
		// The packet waits in the row's scratchpad, as TEA's switch
		// defers it (§4.2.2), and comes back with the row.
		s.n = 0
		err = n.eng.LookupPacket(key, b, uint64(idx))
	} else {
		s.n = copy(s.buf, b)
		err = n.eng.Lookup(key, uint64(idx))
	}
	if err != nil {
		n.free <- idx
		n.stats.Busy.Add(1)
		return err
	}
	return nil
}

// ErrTooBig reports a packet larger than Config.MaxPacket.
var ErrTooBig = errors.New("nf: packet larger than the NF parks")

// done is the engine's Done: it rewrites and sends the parked packet.
func (n *NF) done(r *tea.Result) {
	idx := int32(r.Tag)
	s := &n.slots[idx]
	defer func() { n.free <- idx }()
	switch {
	case r.Err != nil:
		n.stats.Unavailable.Add(1)
		return
	case r.PacketLost:
		n.stats.Lost.Add(1)
		return
	case !r.Found:
		n.stats.NoEntry.Add(1)
		return
	}
	b := s.buf[:s.n]
	if s.n == 0 {
		b = s.buf[:copy(s.buf, r.Packet)]
	}
	p, err := Parse(b)
	if err != nil || len(r.Value) != ValueSize {
		n.stats.Malformed.Add(1) // cannot happen: it parsed before parking
		return
	}
	n.kind.rewrite(b, &p, s.dir, r.Value)
	if err := n.send(s.dir, b); err != nil {
		n.stats.SendErrors.Add(1)
		return
	}
	n.stats.Translated[s.dir].Add(1)
}
