package decode_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/internal/decode/decodetest"
	"github.com/dta-go/dta/wire/roce"
)

func TestRoCEDescribesEveryHeader(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	const req6, resp6 = "[2001:db8::1]:49152", "[2001:db8::2]:4791"
	bth := func(op roce.Opcode, psn uint32, ackReq bool) roce.BTH {
		return roce.BTH{Opcode: op, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: psn, AckReq: ackReq}
	}
	reth := roce.RETH{VA: 0x7f0000001000, RKey: 0x1234abcd, DMALen: 5}
	corrupt := func(f []byte) []byte {
		f[len(f)-roce.ICRCLen-3-2] ^= 0x10 // the payload's 4th byte (3 bytes of pad follow the 5 of payload)
		return f
	}
	rej := roce.CM{Header: roce.CMHeader(roce.AttrREJ, 0x1234), REJ: roce.ConnectReject{
		LocalCommID: 0x01020304, RemoteCommID: 0xaabbccdd, MessageRejected: roce.CMMsgREQ, Reason: roce.RejectInvalidServiceID,
	}}
	rep := roce.CM{Header: roce.CMHeader(roce.AttrREP, 0x1234), REP: roce.ConnectReply{
		LocalCommID: 0x01020304, RemoteCommID: 0xaabbccdd, LocalQPN: 0x22, StartingPSN: 0x200, ResponderResources: 1, InitiatorDepth: 1,
	}}
	copy(rep.REP.PrivateData[:], "dta")
	dreq := roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 0x99), DREQ: roce.DisconnectRequest{LocalCommID: 1, RemoteCommID: 2, RemoteQPN: 0x22}}
	tests := []struct {
		name  string
		frame []byte
		bad   bool // the ICRC
		want  []string
	}{
		{"an RDMA WRITE shows its RETH, payload and a good ICRC",
			decodetest.RoCEFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpWriteOnly, 100, true), RETH: reth, Payload: []byte("hello")}), false,
			[]string{
				"#1 2023-11-14T22:13:20Z 10.0.0.1:49152 > 10.0.0.2:4791 40 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=100 ack_req=1 pkey=0xffff pad=3\n",
				"  reth: va=0x00007f0000001000 rkey=0x1234abcd dma_len=5\n",
				"  payload: 5 bytes 68656c6c6f\n",
				"  icrc: ok (0x",
			}},
		{"a WRITE with immediate over IPv6 shows the immediate",
			decodetest.RoCEFrame(t, req6, resp6, roce.Packet{BTH: bth(roce.OpWriteOnlyImm, 101, true), RETH: reth, ImmDt: roce.ImmDt{Data: 42}, Payload: []byte{1, 2, 3, 4}}), false,
			[]string{
				"[2001:db8::1]:49152 > [2001:db8::2]:4791 40 bytes: RoCEv2 RDMA WRITE Only with Immediate [0x0b] qp=0x000011 psn=101 ack_req=1",
				"  reth: va=0x00007f0000001000 rkey=0x1234abcd dma_len=5\n",
				"  imm_dt: 0x0000002a (42)\n",
				"  payload: 4 bytes 01020304\n",
				"  icrc: ok",
			}},
		{"a FETCH_ADD shows address, key and addend",
			decodetest.RoCEFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpFetchAdd, 102, true), AtomicETH: roce.AtomicETH{VA: 0x7f0000002008, RKey: 0x55, SwapAdd: 9}}), false,
			[]string{
				"RoCEv2 FetchAdd [0x14] qp=0x000011 psn=102 ack_req=1",
				"  atomic_eth: va=0x00007f0000002008 rkey=0x00000055 add=9\n",
				"  icrc: ok",
			}},
		{"an ACK from the responder shows its syndrome and MSN",
			decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 100, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 3}}), false,
			[]string{
				"10.0.0.2:4791 > 10.0.0.1:49152 20 bytes: RoCEv2 Acknowledge [0x11] qp=0x000011 psn=100 ack_req=0",
				"  aeth: ACK credits=unlimited msn=3 [syndrome 0x1f]\n",
				"  icrc: ok",
			}},
		{"a NAK shows the NAK code and its meaning",
			decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 104, false), AETH: roce.AETH{Syndrome: roce.NAKRemoteAccessError, MSN: 3}}), false,
			[]string{"  aeth: NAK code=2 (remote access error) msn=3 [syndrome 0x62]\n"}},
		{"an RNR NAK shows the timer",
			decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpACK, 104, false), AETH: roce.AETH{Syndrome: roce.RNRNAKSyndrome(14), MSN: 3}}), false,
			[]string{"  aeth: RNR NAK timer=1.28ms msn=3 [syndrome 0x2e]\n"}},
		{"an ATOMIC ACK shows the original value",
			decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: bth(roce.OpAtomicACK, 102, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 4}, AtomicAckETH: roce.AtomicAckETH{OrigData: 41}}), false,
			[]string{
				"RoCEv2 Atomic Acknowledge [0x12] qp=0x000011 psn=102",
				"  aeth: ACK credits=unlimited msn=4",
				"  atomic_ack_eth: orig_data=41 (0x0000000000000029)\n",
			}},
		{"a CM REQ shows its key fields and the rdma_cm addresses",
			decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(decodetest.REQ())), false,
			[]string{
				"RoCEv2 UD SEND Only [0x64] qp=0x000001 psn=7",
				"  deth: qkey=0x80010000 src_qp=0x000001\n",
				"  payload: 256 bytes 01070203000000000000000000001234...\n",
				"  cm: REQ tid=0x0000000000001234 local_comm_id=0xaabbccdd service_id=0x0000000001061d2f qpn=0x000011 starting_psn=100 mtu=1024 responder_resources=1 initiator_depth=2 private_data=92 bytes (36 in use)\n",
				"  rdma_cm: tcp 10.0.0.1:40000 > 10.0.0.2:7471\n",
				"  icrc: ok",
			}},
		{"a CM REP shows both comm ids, the QPN and the starting PSN",
			decodetest.RoCEFrame(t, resp, req, decodetest.CMPacket(rep)), false,
			[]string{"  cm: REP tid=0x0000000000001234 local_comm_id=0x01020304 remote_comm_id=0xaabbccdd qpn=0x000022 starting_psn=512 responder_resources=1 initiator_depth=1 private_data=196 bytes (3 in use)\n"}},
		{"a CM REJ shows the reason",
			decodetest.RoCEFrame(t, resp, req, decodetest.CMPacket(rej)), false,
			[]string{"  cm: REJ tid=0x0000000000001234 local_comm_id=0x01020304 remote_comm_id=0xaabbccdd reason=8 (invalid service ID) rejected=REQ private_data=148 bytes (0 in use)\n"}},
		{"a CM DREQ shows the QP it disconnects",
			decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(dreq)), false,
			[]string{"  cm: DREQ tid=0x0000000000000099 local_comm_id=0x00000001 remote_comm_id=0x00000002 remote_qpn=0x000022 private_data=220 bytes (0 in use)\n"}},
		{"a corrupted packet prints its ICRC as bad and fails the command",
			corrupt(decodetest.RoCEFrame(t, req, resp, roce.Packet{BTH: bth(roce.OpWriteOnly, 100, true), RETH: reth, Payload: []byte("hello")})), true,
			[]string{"  payload: 5 bytes 68656c7c6f\n", "  icrc: bad (carried 0x"}},
	}
	ts := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dec decode.Decoder
			p, ok := dec.Frame(1, decode.Frame{Time: ts, LinkType: decode.LinkEthernet, Data: tt.frame})
			if !ok || p.RoCE == nil {
				t.Fatalf("Frame: %+v, %v", p, ok)
			}
			if p.BadICRC() != tt.bad || p.Failed() {
				t.Errorf("BadICRC %v, Failed %v; want %v, false", p.BadICRC(), p.Failed(), tt.bad)
			}
			out := p.Text()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("Text lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestRoCEReadsRealCaptures(t *testing.T) {
	tests := []struct {
		name string
		file string
		bad  bool // the ICRC
		want string
	}{
		{"a ConnectX-4 CNP decodes with a good ICRC", "hw_cx4_cnp.pcap", false,
			"#1 2023-11-14T22:13:20Z 10.0.17.1:0 > 10.0.18.1:4791 32 bytes: RoCEv2 CNP [0x81] qp=0x000118 psn=0 ack_req=0 pkey=0xffff pad=0 becn\n" +
				"  icrc: ok (0x82fd002a)\n"},
		{"the spec's WRITE Only vector decodes with a good ICRC", "write_only_ok.pcap", false,
			"#1 2023-11-14T22:13:20Z 10.0.0.1:49374 > 10.0.0.2:4791 48 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=256 ack_req=1 pkey=0xffff pad=0\n" +
				"  reth: va=0x00007f0000001000 rkey=0x12345678 dma_len=16\n" +
				"  payload: 16 bytes 000102030405060708090a0b0c0d0e0f\n" +
				"  icrc: ok (0x9409eeba)\n"},
		{"the same vector with a flipped byte has a bad ICRC", "write_only_bad.pcap", true,
			"#1 2023-11-14T22:13:20Z 10.0.0.1:49374 > 10.0.0.2:4791 48 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=256 ack_req=1 pkey=0xffff pad=0\n" +
				"  reth: va=0x00007f0000001000 rkey=0x12345678 dma_len=16\n" +
				"  payload: 16 bytes 000102020405060708090a0b0c0d0e0f\n" +
				"  icrc: bad (carried 0x9409eeba, computed 0x11d07867)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "rocev2", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			pkts, n := frames(t, b)
			if n != 1 || len(pkts) != 1 || pkts[0].RoCE == nil {
				t.Fatalf("%d packets of %d frames: %+v", len(pkts), n, pkts)
			}
			p := pkts[0]
			if got := p.Text(); got != tt.want || p.BadICRC() != tt.bad || p.Failed() {
				t.Errorf("Text:\n%s\nwant\n%s\nBadICRC %v, Failed %v", got, tt.want, p.BadICRC(), p.Failed())
			}
		})
	}
}

func TestRoCEDescribesMalformedPackets(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 5}, RETH: roce.RETH{VA: 0x1000, RKey: 1, DMALen: 4}, Payload: []byte{1, 2, 3, 4}}
	good := decodetest.RoCEFrame(t, req, resp, write)
	ipOf := func(f []byte) []byte { return f[roce.EthernetLen:] }
	udpOf := func(f []byte) []byte { return f[roce.EthernetLen+roce.IPv4HeaderLen+roce.UDPHeaderLen:] }
	withPayload := func(p []byte) []byte { return decodetest.UDPFrame(req, resp, p, false) }
	unknown := bytes.Clone(udpOf(good))
	unknown[0] = 0x1f
	badTVer := bytes.Clone(udpOf(good))
	badTVer[1] |= 0x01
	noPayload := bytes.Clone(udpOf(decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, DestQP: 0x11}})))
	noPayload = append(noPayload[:len(noPayload)-4], 9, 9, 9, 9, 0, 0, 0, 0)
	shortMAD := roce.CMPacket(1, []byte("not a whole MAD"))
	notCM := roce.CM{Header: roce.CMHeader(roce.AttrREQ, 1)}
	notCM.Header.MgmtClass = 0x03 // subnet administration
	lap := roce.CM{Header: roce.CMHeader(roce.AttrLAP, 1)}
	badIPCM := decodetest.REQ()
	badIPCM.REQ.PrivateData[0] = 0x77 // not IP-CM version 0
	tests := []struct {
		name   string
		frame  []byte
		failed bool
		want   string
	}{
		{"a packet shorter than a BTH", withPayload(udpOf(good)[:8]), true,
			"#1 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 8 bytes: RoCEv2: error: 8 bytes, a BTH needs 12: roce: truncated\n  icrc: not checked (packet or capture truncated)\n"},
		{"a RETH cut short", withPayload(udpOf(good)[:20]), true,
			"#1 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 20 bytes: RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0: error: 20 bytes, RDMA WRITE Only needs 28 of headers and 4 of ICRC: roce: truncated\n"},
		{"an unknown opcode", withPayload(unknown), true,
			"RoCEv2 opcode(0x1f) [0x1f] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0: error: opcode 0x1f: roce: unknown opcode\n"},
		{"a transport header version that is not 0", withPayload(badTVer), true,
			"tver=1: error: transport header version 1: roce: BTH transport version is not 0\n"},
		{"an ACK with a payload", withPayload(noPayload), true,
			": error: Acknowledge carries no payload, this one has 4 bytes after its headers: roce: length mismatch\n"},
		{"a MAD cut short", decodetest.RoCEFrame(t, req, resp, roce.Packet{BTH: roce.BTH{Opcode: roce.OpUDSendOnly, DestQP: roce.GSIQP}, Payload: shortMAD.Payload}), true,
			"  cm: error: a MAD is 256 bytes, this payload 15: roce: truncated\n"},
		{"a MAD of another class is shown, not decoded", decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(notCM)), false,
			"  cm: attribute(0x10) tid=0x0000000000000001: not a CM MAD (base version 1, class 0x03, class version 2): not decoded\n"},
		{"a CM attribute wire/roce does not decode is shown, not decoded", decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(lap)), false,
			"  cm: LAP tid=0x0000000000000001: not decoded\n"},
		{"a REQ whose private data is not IP-CM says so", decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(badIPCM)), false,
			"  rdma_cm: tcp: error: IP-CM private data header: "},
		{"a first IP fragment is decoded but not checked", decodetest.Ether(decodetest.IPPacket(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 17, ipOf(good)[roce.IPv4HeaderLen:], 0x2000), false), false,
			"#1 1970-01-01T00:00:01Z 10.0.0.1:49152 > 10.0.0.2:4791 36 bytes (IP fragment: payload incomplete): RoCEv2 RDMA WRITE Only [0x0a] qp=0x000011 psn=5 ack_req=0 pkey=0xffff pad=0\n  reth: va=0x0000000000001000 rkey=0x00000001 dma_len=4\n  payload: 4 bytes 01020304\n  icrc: not checked (IPv4 options, IPv6 extension headers or an IP fragment)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dec decode.Decoder
			p, ok := dec.Frame(1, decode.Frame{Time: time.Unix(1, 0), LinkType: decode.LinkEthernet, Data: tt.frame})
			if !ok || p.RoCE == nil {
				t.Fatalf("Frame: %+v, %v", p, ok)
			}
			if out := p.Text(); !strings.Contains(out, tt.want) || p.Failed() != tt.failed {
				t.Errorf("Text lacks %q or Failed %v, want %v:\n%s", tt.want, p.Failed(), tt.failed, out)
			}
		})
	}
}

func TestDecodeRoCEIP(t *testing.T) {
	ack := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 256}, AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 5}}
	datagram := func(src, dst string) []byte {
		s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
		env := roce.Envelope{Src: s.Addr(), Dst: d.Addr(), SrcPort: s.Port(), DstPort: d.Port()}
		b, err := env.AppendDatagram(nil, &ack)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ip := datagram("10.0.0.2:4791", "10.0.0.1:49152")
	badIP := bytes.Clone(ip)
	badIP[len(badIP)-1] ^= 1
	notUDP, _ := hex.DecodeString("4500001400000000400600000a0000010a000002")
	tests := []struct {
		name        string
		ip          []byte
		failed, bad bool
		want        string
	}{
		{"a whole IPv4 packet gets its ICRC checked", ip, false, false,
			"#1 10.0.0.2:4791 > 10.0.0.1:49152 20 bytes: RoCEv2 Acknowledge [0x11] qp=0x000011 psn=256 ack_req=0 pkey=0xffff pad=0\n  aeth: ACK credits=unlimited msn=5 [syndrome 0x1f]\n  icrc: ok (0x"},
		{"a whole IPv6 packet gets its ICRC checked", datagram("[2001:db8::2]:4791", "[2001:db8::1]:49152"), false, false,
			"#1 [2001:db8::2]:4791 > [2001:db8::1]:49152 20 bytes: RoCEv2 Acknowledge [0x11]"},
		{"a wrong ICRC is bad", badIP, false, true, "  icrc: bad (carried 0x"},
		{"an IP packet that is not UDP is an error", notUDP, true, false,
			"#1 20 bytes: RoCEv2: error: IP/UDP headers of a 20-byte datagram: roce: not an IPv4/IPv6 UDP datagram\n  icrc: not checked (no RoCEv2 datagram)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decode.DecodeRoCEIP(decode.Meta{Index: 1}, tt.ip)
			if out := d.Text(); !strings.HasPrefix(out, tt.want) && !strings.Contains(out, tt.want) || d.Failed() != tt.failed || d.BadICRC() != tt.bad {
				t.Errorf("Text lacks %q, or Failed %v, BadICRC %v:\n%s", tt.want, d.Failed(), d.BadICRC(), out)
			}
		})
	}
	if d := decode.DecodeRoCE(decode.Meta{Index: 1}, ip[roce.IPv4HeaderLen+roce.UDPHeaderLen:], nil); d.ICRC.Status != decode.ICRCNotChecked || d.ICRC.Reason != "no IP header" {
		t.Errorf("a UDP payload alone: ICRC %+v", d.ICRC)
	}
}

func TestRoCEMarshalsEveryHeader(t *testing.T) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	write := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm, PKey: roce.DefaultPKey, DestQP: 0x11, PSN: 9, AckReq: true},
		RETH: roce.RETH{VA: 0xffff800000001000, RKey: 0xdeadbeef, DMALen: 3}, ImmDt: roce.ImmDt{Data: 7}, Payload: []byte{1, 2, 3}}
	pkts, _ := frames(t, decodetest.RoCEPcap(t,
		decodetest.RoCEFrame(t, req, resp, write),
		decodetest.RoCEFrame(t, req, resp, decodetest.CMPacket(decodetest.REQ())),
		decodetest.RoCEFrame(t, resp, req, roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, DestQP: 0x22, PSN: 9}, AETH: roce.AETH{Syndrome: roce.NAKPSNSequenceError, MSN: 1}}),
	))
	var ds []decode.RoCE
	for _, p := range pkts {
		j, err := json.Marshal(p.RoCE)
		if err != nil {
			t.Fatal(err)
		}
		var d decode.RoCE
		if err := json.Unmarshal(j, &d); err != nil {
			t.Fatal(err)
		}
		if d.Text() != p.RoCE.Text() {
			t.Errorf("the JSON form reads back as\n%s\nwant\n%s", d.Text(), p.RoCE.Text())
		}
		ds = append(ds, d)
	}
	if len(ds) != 3 {
		t.Fatalf("%d packets decoded, want 3", len(ds))
	}
	d := ds[0]
	if d.Type != "roce" || d.Index != 1 || d.Src != req || d.Dst != resp || d.Time != "2023-11-14T22:13:20Z" || d.Length != 40 ||
		d.BTH == nil || *d.BTH != (decode.BTH{Opcode: 0x0b, Name: "RDMA WRITE Only with Immediate", DestQP: 0x11, PSN: 9, AckReq: true, PKey: 0xffff, PadCnt: 1}) ||
		d.RETH == nil || *d.RETH != (decode.RETH{VA: "0xffff800000001000", RKey: "0xdeadbeef", DMALen: 3}) ||
		d.ImmDt == nil || d.ImmDt.Data != 7 || d.Payload == nil || *d.Payload != (decode.Payload{Length: 3, Hex: "010203"}) ||
		d.ICRC.Status != decode.ICRCOK || d.ICRC.Carried != d.ICRC.Computed || d.AETH != nil || d.CM != nil || d.Error != "" {
		t.Errorf("packet 1: %+v", d)
	}
	cm := ds[1].CM
	if cm == nil || cm.Attribute != "REQ" || cm.LocalCommID != 0xaabbccdd || cm.RemoteCommID != nil || cm.QPN == nil || *cm.QPN != 0x11 ||
		cm.StartingPSN == nil || *cm.StartingPSN != 100 || cm.PrivateDataLen != 92 || cm.PrivateDataUsed != 36 ||
		cm.RDMACM == nil || *cm.RDMACM != (decode.IPCM{PortSpace: "tcp", Src: "10.0.0.1:40000", Dst: "10.0.0.2:7471"}) {
		t.Errorf("packet 2: %+v", cm)
	}
	if a := ds[2].AETH; a == nil || *a != (decode.AETH{Syndrome: 0x60, Type: "NAK", Code: 0, Text: "NAK PSN sequence error", MSN: 1}) || ds[2].Payload != nil {
		t.Errorf("packet 3: %+v", ds[2])
	}
}

func TestRoCEResultsDoNotAliasTheInput(t *testing.T) {
	f := decodetest.RoCEFrame(t, "10.0.0.1:1", "10.0.0.2:4791", decodetest.CMPacket(decodetest.REQ()))
	ip := f[roce.EthernetLen:]
	d := decode.DecodeRoCEIP(decode.Meta{}, ip)
	before := d.Text()
	for i := range ip {
		ip[i] = 0
	}
	if d.Text() != before {
		t.Errorf("the result changed with its input:\n%s", d.Text())
	}
}

// FuzzDecodeRoCE: no IP datagram or UDP payload, however broken, makes the
// RoCEv2 decoding panic, and an ICRC it calls ok matches the trailer.
func FuzzDecodeRoCE(f *testing.F) {
	const req, resp = "10.0.0.1:49152", "10.0.0.2:4791"
	for _, pkt := range []roce.Packet{
		{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm, DestQP: 0x11}, RETH: roce.RETH{VA: 1, RKey: 2, DMALen: 3}, Payload: []byte{1, 2, 3}},
		{BTH: roce.BTH{Opcode: roce.OpAtomicACK, DestQP: 0x11}, AETH: roce.AETH{Syndrome: roce.NAKInvalidRequest}},
		{BTH: roce.BTH{Opcode: roce.OpFetchAdd, DestQP: 0x11}, AtomicETH: roce.AtomicETH{SwapAdd: 1}},
		{BTH: roce.BTH{Opcode: roce.OpReadResponseOnly, DestQP: 0x11}, AETH: roce.AETH{Syndrome: roce.ACKUnlimited}, Payload: []byte{1, 2, 3, 4, 5}},
		decodetest.CMPacket(decodetest.REQ()),
		decodetest.CMPacket(roce.CM{Header: roce.CMHeader(roce.AttrREJ, 1)}),
	} {
		f.Add(decodetest.RoCEFrame(f, req, resp, pkt)[roce.EthernetLen:])
		f.Add(decodetest.RoCEFrame(f, "[::1]:1", "[::2]:4791", pkt)[roce.EthernetLen:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ds []*decode.RoCE
		if u, ok := decode.FindUDP(decode.LinkRaw, b); ok {
			d := decode.DecodeRoCE(decode.Meta{}, u.Payload, u.IP)
			if d.ICRC.Status == decode.ICRCOK && (d.ICRC.Carried != d.ICRC.Computed || roce.VerifyICRC(u.IP) != nil) {
				t.Fatalf("ICRC ok but %+v, %v", d.ICRC, roce.VerifyICRC(u.IP))
			}
			ds = append(ds, d)
		}
		ds = append(ds, decode.DecodeRoCE(decode.Meta{}, b, nil), decode.DecodeRoCEIP(decode.Meta{}, b))
		for _, d := range ds {
			text := d.Text()
			j, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var back decode.RoCE
			if err := json.Unmarshal(j, &back); err != nil {
				t.Fatal(err)
			}
			if back.Text() != text {
				t.Fatalf("from JSON:\n%s\nwant\n%s", back.Text(), text)
			}
		}
	})
}

// FuzzDecodeCM: no MAD makes DecodeCM or its text panic.
func FuzzDecodeCM(f *testing.F) {
	for _, m := range []roce.CM{
		decodetest.REQ(),
		{Header: roce.CMHeader(roce.AttrREJ, 1)},
		{Header: roce.CMHeader(roce.AttrDREQ, 2)},
		{Header: roce.CMHeader(roce.AttrLAP, 3)},
	} {
		f.Add(m.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, mad []byte) {
		c := decode.DecodeCM(mad)
		if c.Text() == "" {
			t.Fatal("no text")
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatal(err)
		}
	})
}
