package xdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

var (
	macA = [6]byte{2, 0, 0, 0, 0, 1}
	macB = [6]byte{2, 0, 0, 0, 0, 2}
	src4 = netip.MustParseAddrPort("192.0.2.1:5555")
	dst4 = netip.MustParseAddrPort("192.0.2.2:40040")
	src6 = netip.MustParseAddrPort("[2001:db8::1]:5555")
	dst6 = netip.MustParseAddrPort("[2001:db8::2]:40040")
)

// v4 returns a good IPv4 frame after applying edit to it.
func v4(edit func(f []byte)) []byte {
	f := AppendFrame(nil, macA, macB, src4, dst4, []byte("report"))
	if edit != nil {
		edit(f)
	}
	return f
}

// resum recomputes the IPv4 header checksum at offset ip.
func resum(f []byte, ip int) {
	binary.BigEndian.PutUint16(f[ip+10:], 0)
	binary.BigEndian.PutUint16(f[ip+10:], ^ipv4Checksum(f[ip:ip+20]))
}

func vlan(f []byte) []byte {
	out := append([]byte{}, f[:12]...)
	out = append(out, 0x81, 0x00, 0x00, 0x05)
	return append(out, f[12:]...)
}

func TestParseFrame(t *testing.T) {
	const ip = ethHeaderLen
	for _, tc := range []struct {
		name    string
		frame   []byte
		want    Reason
		payload string
		from    netip.AddrPort
	}{
		{"an IPv4 UDP frame yields its payload and source", v4(nil), ReasonNone, "report", src4},
		{"an IPv6 UDP frame yields its payload and source", AppendFrame(nil, macA, macB, src6, dst6, []byte("six")), ReasonNone, "six", src6},
		{"a VLAN-tagged frame is parsed past the tag", vlan(v4(nil)), ReasonNone, "report", src4},
		{"Ethernet padding after the IP packet is ignored", append(v4(nil), 0, 0, 0, 0), ReasonNone, "report", src4},
		{"a UDP length shorter than the IP payload trims the payload", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+24:], 8+3) }), ReasonNone, "rep", src4},
		{"a frame shorter than an Ethernet header is short", v4(nil)[:13], ReasonShortEthernet, "", netip.AddrPort{}},
		{"a VLAN tag cut short is short", vlan(v4(nil))[:16], ReasonShortEthernet, "", netip.AddrPort{}},
		{"ARP is not IP", v4(func(f []byte) { f[12], f[13] = 0x08, 0x06 }), ReasonNotIP, "", netip.AddrPort{}},
		{"a frame cut inside the IPv4 header is short", v4(nil)[:ip+19], ReasonShortIP, "", netip.AddrPort{}},
		{"IP version 5 is a bad header", v4(func(f []byte) { f[ip] = 0x55; resum(f, ip) }), ReasonBadIPHeader, "", netip.AddrPort{}},
		{"an IHL of 4 words is a bad header", v4(func(f []byte) { f[ip] = 0x44 }), ReasonBadIPHeader, "", netip.AddrPort{}},
		{"an IHL beyond the frame is short", v4(func(f []byte) { f[ip] = 0x4f })[:ip+40], ReasonShortIP, "", netip.AddrPort{}},
		{"a wrong header checksum is a bad header", v4(func(f []byte) { f[ip+8]-- }), ReasonBadIPHeader, "", netip.AddrPort{}},
		{"an IP total length beyond the frame is counted", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+2:], 100); resum(f, ip) }), ReasonIPLength, "", netip.AddrPort{}},
		{"an IP total length under the header is counted", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+2:], 19); resum(f, ip) }), ReasonIPLength, "", netip.AddrPort{}},
		{"more-fragments marks a fragment", v4(func(f []byte) { f[ip+6] = 0x20; resum(f, ip) }), ReasonFragment, "", netip.AddrPort{}},
		{"a fragment offset marks a fragment", v4(func(f []byte) { f[ip+7] = 1; resum(f, ip) }), ReasonFragment, "", netip.AddrPort{}},
		{"TCP is not UDP", v4(func(f []byte) { f[ip+9] = 6; resum(f, ip) }), ReasonNotUDP, "", netip.AddrPort{}},
		{"an IP payload shorter than a UDP header is short", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+2:], 20+7); resum(f, ip) }), ReasonShortUDP, "", netip.AddrPort{}},
		{"a UDP length beyond the IP payload lies", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+24:], 100) }), ReasonUDPLength, "", netip.AddrPort{}},
		{"a UDP length under 8 lies", v4(func(f []byte) { binary.BigEndian.PutUint16(f[ip+24:], 7) }), ReasonUDPLength, "", netip.AddrPort{}},
		{"an IPv6 payload length beyond the frame is counted", func() []byte {
			f := AppendFrame(nil, macA, macB, src6, dst6, []byte("six"))
			binary.BigEndian.PutUint16(f[ip+4:], 200)
			return f
		}(), ReasonIPLength, "", netip.AddrPort{}},
		{"an IPv6 extension header is not UDP", func() []byte {
			f := AppendFrame(nil, macA, macB, src6, dst6, []byte("six"))
			f[ip+6] = 0 // hop-by-hop
			return f
		}(), ReasonNotUDP, "", netip.AddrPort{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Datagram
			got := ParseFrame(tc.frame, &d)
			if got != tc.want {
				t.Fatalf("ParseFrame = %v, want %v", got, tc.want)
			}
			if got != ReasonNone {
				return
			}
			dst := dst4.Addr()
			if tc.from.Addr().Is6() {
				dst = dst6.Addr()
			}
			if string(d.Payload) != tc.payload || d.From != tc.from || d.Dst != dst || d.DstPort != 40040 {
				t.Errorf("got payload %q from %v to %v port %d, want %q from %v to %v port 40040", d.Payload, d.From, d.Dst, d.DstPort, tc.payload, tc.from, dst)
			}
		})
	}
}

func TestParseFrameDoesNotAllocate(t *testing.T) {
	f := v4(nil)
	var d Datagram
	if n := testing.AllocsPerRun(1000, func() { ParseFrame(f, &d) }); n != 0 {
		t.Errorf("ParseFrame allocates %v times per frame", n)
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(v4(nil), false)
	f.Add(vlan(v4(nil)), false)
	f.Add(AppendFrame(nil, macA, macB, src6, dst6, []byte("six")), false)
	f.Add(v4(func(b []byte) { b[14] = 0x4f }), false)
	f.Add([]byte("report"), true)
	f.Fuzz(func(t *testing.T, b []byte, build bool) {
		if build {
			// Round trip: any payload framed by AppendLinkFrame, tagged
			// or not, parses back with its link.
			if len(b) > 1400 {
				return
			}
			for _, ap := range [][2]netip.AddrPort{{src4, dst4}, {src6, dst6}} {
				for _, link := range []Link{{Src: macA, Dst: macB}, {Src: macB, Dst: macA, TCI: uint16(len(b)), Tagged: true}} {
					fr := AppendLinkFrame(nil, &link, ap[0], ap[1], b)
					var d Datagram
					if r := ParseFrame(fr, &d); r != ReasonNone || !bytes.Equal(d.Payload, b) || d.From != ap[0] || d.Dst != ap[1].Addr() || d.DstPort != ap[1].Port() || d.Link != link {
						t.Fatalf("round trip of %x over %+v: %v, %x from %v over %+v", b, link, r, d.Payload, d.From, d.Link)
					}
					if len(fr) != FrameLen(&link, ap[0].Addr(), len(b)) {
						t.Fatalf("FrameLen %d, frame %d", FrameLen(&link, ap[0].Addr(), len(b)), len(fr))
					}
				}
			}
			return
		}
		var d Datagram
		if ParseFrame(b, &d) == ReasonNone {
			// The payload lies inside the frame.
			if len(d.Payload) > len(b) {
				t.Fatalf("payload of %d bytes from a frame of %d", len(d.Payload), len(b))
			}
		}
	})
}

func TestConfigValidateNamesEveryBadField(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"the defaults with an interface are valid", func(c *Config) {}, ""},
		{"an empty interface is refused", func(c *Config) { c.Interface = "" }, "interface:"},
		{"a frame size of 1500 is refused", func(c *Config) { c.FrameSize = 1500 }, "frame_size:"},
		{"frames not a power of two are refused", func(c *Config) { c.Frames = 1000 }, "frames:"},
		{"a tiny RX ring is refused", func(c *Config) { c.RXRing = 32 }, "rx_ring:"},
		{"a batch of 0 is refused", func(c *Config) { c.BatchSize = 0 }, "batch_size:"},
		{"65 queues are refused", func(c *Config) { c.Queues = 65 }, "queues:"},
		{"an unknown attach mode is refused", func(c *Config) { c.AttachMode = "offload" }, "attach_mode:"},
		{"an unknown bind mode is refused", func(c *Config) { c.BindMode = "fast" }, "bind_mode:"},
		{"a poll timeout of 0 is refused", func(c *Config) { c.PollTimeout = 0 }, "poll_timeout:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Interface = "eth0"
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestIPv4ChecksumMatchesTheSumOf16BitWords(t *testing.T) {
	ref := func(h []byte) uint16 {
		var sum uint32
		for i := 0; i+1 < len(h); i += 2 {
			sum += uint32(h[i])<<8 | uint32(h[i+1])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		return uint16(sum)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 60; n += 2 {
		for range 2000 {
			h := make([]byte, n)
			for i := range h {
				h[i] = byte(rng.Uint32())
				if rng.IntN(4) == 0 {
					h[i] = 0xff // many carries
				}
			}
			if got, want := ipv4Checksum(h), ref(h); got != want {
				t.Fatalf("%x: %#x, want %#x", h, got, want)
			}
		}
	}
}

// The IPv4 identification and DF bit, which a RoCEv2 ICRC covers, come out
// of the header as they are; an IPv6 frame has neither, whatever the
// previous frame had.
func TestParseFrameReturnsTheIPv4IDAndDF(t *testing.T) {
	const ip = ethHeaderLen
	for _, tc := range []struct {
		name  string
		frame []byte
		v4    bool
		id    uint16
		df    bool
	}{
		{"ID 0 with DF, as dta sends", v4(nil), true, 0, true},
		{"a NIC's numbered packet with DF", v4(func(f []byte) { f[ip+4], f[ip+5] = 0x71, 0x8c; resum(f, ip) }), true, 0x718c, true},
		{"a packet without DF", v4(func(f []byte) { f[ip+4], f[ip+5], f[ip+6] = 0xff, 0xfe, 0; resum(f, ip) }), true, 0xfffe, false},
		{"IPv6", AppendFrame(nil, macA, macB, src6, dst6, []byte("six")), false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Datagram{IPv4: true, ID: 7, DF: true} // a previous frame's: overwritten
			if r := ParseFrame(tc.frame, &d); r != ReasonNone {
				t.Fatal(r)
			}
			if d.IPv4 != tc.v4 || d.ID != tc.id || d.DF != tc.df {
				t.Errorf("IPv4 %v ID %#x DF %v, want %v %#x %v", d.IPv4, d.ID, d.DF, tc.v4, tc.id, tc.df)
			}
		})
	}
}

func TestParseFrameReturnsTheLinkAReplyReverses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
		want  Link
	}{
		{"an untagged frame", v4(nil), Link{Src: macA, Dst: macB}},
		{"a VLAN-tagged frame keeps its tag", vlan(v4(nil)), Link{Src: macA, Dst: macB, TCI: 5, Tagged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Datagram
			d.Link = Link{TCI: 9, Tagged: true} // a previous frame's: overwritten
			if r := ParseFrame(tc.frame, &d); r != ReasonNone {
				t.Fatal(r)
			}
			if d.Link != tc.want {
				t.Errorf("Link %+v, want %+v", d.Link, tc.want)
			}
			if r := d.Link.Reverse(); r.Src != tc.want.Dst || r.Dst != tc.want.Src || r.TCI != tc.want.TCI || r.Tagged != tc.want.Tagged {
				t.Errorf("Reverse %+v of %+v", r, d.Link)
			}
		})
	}
}

func TestAppendLinkFrameIsWhatParseFrameReads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		link     Link
		src, dst netip.AddrPort
	}{
		{"IPv4", Link{Src: macA, Dst: macB}, src4, dst4},
		{"IPv4 with a VLAN tag", Link{Src: macA, Dst: macB, TCI: 0x2064, Tagged: true}, src4, dst4},
		{"IPv6 with a VLAN tag", Link{Src: macA, Dst: macB, TCI: 7, Tagged: true}, src6, dst6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := []byte("an ACK of sorts")
			f := AppendLinkFrame(nil, &tc.link, tc.src, tc.dst, payload)
			if n := FrameLen(&tc.link, tc.src.Addr(), len(payload)); n != len(f) {
				t.Errorf("FrameLen %d, the frame has %d bytes", n, len(f))
			}
			var d Datagram
			if r := ParseFrame(f, &d); r != ReasonNone {
				t.Fatalf("ParseFrame: %v", r)
			}
			if d.Link != tc.link || d.From != tc.src || d.Dst != tc.dst.Addr() || d.DstPort != tc.dst.Port() || string(d.Payload) != string(payload) {
				t.Errorf("parsed %+v from %v to %v:%d %q", d.Link, d.From, d.Dst, d.DstPort, d.Payload)
			}
		})
	}
}
