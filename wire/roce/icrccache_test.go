package roce_test

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

// flow is what stays the same for the packets of one kind on one
// connection: the envelope's covered fields, the payload length, opcode and
// destination QP.
type flow struct {
	env roce.Envelope
	n   int
	op  byte
	qp  byte
}

// randomFlows returns n flows, each but the first a copy of an earlier one
// with one covered field changed (addresses, either port, IPv4 ID or DF,
// length, opcode, QP), so that a cache that missed any of them in its key
// would hand one flow's prefix to another.
func randomFlows(rng *rand.Rand, n int) []flow {
	pairs := [][2]string{{"10.0.0.1", "10.0.0.2"}, {"10.0.0.2", "10.0.0.1"}, {"192.168.1.7", "10.9.8.7"}, {"10.0.0.1", "10.9.8.7"}, {"10.0.0.3", "10.0.0.2"}, {"fd00::1", "fd00::3"}, {"fd00::1", "fd00::2"}, {"fd00::2", "fd00::1"}}
	sizes := []int{roce.BTHLen + roce.ICRCLen, 20, 36, 44, 60, 64, 76, 120, 1100}
	fs := make([]flow, 1, n)
	fs[0] = flow{env: roce.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 49152, DstPort: roce.Port}, n: 44, op: 0x0A, qp: 0x11}
	for len(fs) < n {
		f := fs[rng.IntN(len(fs))]
		switch rng.IntN(8) {
		case 0:
			p := pairs[rng.IntN(len(pairs))]
			f.env.Src, f.env.Dst = netip.MustParseAddr(p[0]), netip.MustParseAddr(p[1])
		case 1:
			f.env.SrcPort++
		case 2:
			f.env.DstPort++
		case 3:
			f.env.ID++
		case 4:
			f.env.NoDF = !f.env.NoDF
		case 5:
			f.n = sizes[rng.IntN(len(sizes))]
		case 6:
			f.op = []byte{0x0A, 0x11, 0x14, 0x12}[rng.IntN(4)]
		case 7:
			f.qp++
		}
		fs = append(fs, f)
	}
	return fs
}

// packet returns a packet of f: the fields the ICRC masks (traffic class, hop
// limit, flow label, FECN/BECN), the PSN and the rest drawn at random.
func (f *flow) packet(rng *rand.Rand) (roce.Envelope, []byte) {
	e := f.env
	e.TrafficClass, e.HopLimit, e.FlowLabel = uint8(rng.IntN(256)), uint8(rng.IntN(256)), rng.Uint32()
	b := make([]byte, f.n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	b[0], b[1], b[2], b[3] = f.op, 0x40, 0xFF, 0xFF
	b[4] = byte(rng.IntN(4)) << 6 // FECN, BECN: masked
	b[5], b[6], b[7] = 0, 0, f.qp
	return e, b
}

func TestICRCCacheGivesTheICRCOfEveryPacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, flows := range []int{1, 5, 8, 12, 40} { // fewer and more flows than the cache keeps
		fs := randomFlows(rng, flows)
		var c roce.ICRCCache
		for i := range 5000 {
			f := &fs[rng.IntN(len(fs))]
			e, b := f.packet(rng)
			want, werr := e.ICRC(b)
			got, err := c.ICRC(&e, b)
			if got != want || !errors.Is(err, werr) {
				t.Fatalf("%d flows, packet %d (%d bytes, %v → %v): cache %#x, %v; Envelope.ICRC %#x, %v", flows, i, len(b), e.Src, e.Dst, got, err, want, werr)
			}
		}
	}
}

func TestICRCCacheSealsWhatEnvelopeVerifiesAndRejectsAFlippedBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fs := randomFlows(rng, 6)
	var c roce.ICRCCache
	for range 2000 {
		e, b := fs[rng.IntN(len(fs))].packet(rng)
		if err := c.Seal(&e, b); err != nil {
			t.Fatal(err)
		}
		if err := e.VerifyICRC(b); err != nil {
			t.Fatalf("Envelope.VerifyICRC of a cache-sealed packet: %v", err)
		}
		if err := c.Verify(&e, b); err != nil {
			t.Fatalf("cache Verify of a sealed packet: %v", err)
		}
		i := rng.IntN(len(b))
		if i == 4 {
			continue // FECN/BECN/resv: masked
		}
		b[i] ^= 1 << rng.IntN(8)
		if err := c.Verify(&e, b); !errors.Is(err, roce.ErrICRC) {
			t.Fatalf("byte %d of %d flipped: %v, want ErrICRC", i, len(b), err)
		}
	}
}

func TestICRCCacheRefusesWhatEnvelopeRefuses(t *testing.T) {
	var c roce.ICRCCache
	ok := roce.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), DstPort: roce.Port}
	mixed := roce.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("fd00::2"), DstPort: roce.Port}
	cases := []struct {
		name string
		env  roce.Envelope
		n    int
		want error
	}{
		{"a payload shorter than BTH and ICRC", ok, roce.BTHLen + roce.ICRCLen - 1, roce.ErrTruncated},
		{"IPv4 and IPv6 addresses mixed", mixed, 64, roce.ErrBadAddress},
		{"a datagram beyond 64 KiB", ok, 0xFFFF, roce.ErrTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.ICRC(&tc.env, make([]byte, tc.n)); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestICRCCacheDoesNotAllocate(t *testing.T) {
	var c roce.ICRCCache
	e := envAB
	b := make([]byte, 60)
	noAllocs(t, "ICRCCache.Seal and Verify", func() {
		b[9]++ // a new PSN each time
		if err := c.Seal(&e, b); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(&e, b); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzICRCCache(f *testing.F) {
	f.Add([]byte("\x0a\x40\xff\xff\x00\x00\x00\x11\x80\x00\x01\x00\x00\x00\x7f\x00\x00\x00\x10\x00\x12\x34\x56\x78\x00\x00\x00\x08\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00\x00\x00"), uint16(0), true)
	f.Add(make([]byte, 16), uint16(7), false)
	f.Add(make([]byte, 200), uint16(1), true)
	var c roce.ICRCCache
	f.Fuzz(func(t *testing.T, b []byte, id uint16, v4 bool) {
		e := roce.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 50000, DstPort: roce.Port, ID: id}
		if !v4 {
			e.Src, e.Dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		}
		want, werr := e.ICRC(b)
		for range 2 { // a miss, then a hit
			got, err := c.ICRC(&e, b)
			if got != want || !errors.Is(err, werr) {
				t.Fatalf("cache %#x, %v; Envelope.ICRC %#x, %v", got, err, want, werr)
			}
		}
	})
}
