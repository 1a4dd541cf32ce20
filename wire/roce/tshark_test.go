package roce_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// namedPacket is one packet of the capture with the direction it travels.
type namedPacket struct {
	name    string
	reverse bool // responder to requester
	p       roce.Packet
}

// everyKind returns one packet of each kind this package builds, as a DTA
// translator (requester, QP 0x11 → collector QP 0x22) and collector would
// send them, plus the CM handshake on QP1.
func everyKind(t *testing.T) []namedPacket {
	t.Helper()
	bth := func(op roce.Opcode, qp, psn uint32, ack bool) roce.BTH {
		return roce.BTH{Opcode: op, PKey: roce.DefaultPKey, DestQP: qp, PSN: psn, AckReq: ack}
	}
	reth := roce.RETH{VA: 0x7f0000001000, RKey: 0x12345678, DMALen: 16}
	data300 := bytes.Repeat([]byte{0xA5}, 300)
	var pkts []namedPacket
	add := func(name string, reverse bool, p roce.Packet) {
		pkts = append(pkts, namedPacket{name, reverse, p})
	}
	add("RDMA WRITE Only", false, roce.Packet{BTH: bth(roce.OpWriteOnly, 0x22, 0x100, true), RETH: reth, Payload: payload})
	add("RDMA WRITE Only, 13 bytes", false, roce.Packet{BTH: bth(roce.OpWriteOnly, 0x22, 0x101, true), RETH: roce.RETH{VA: 0x7f0000001010, RKey: 0x12345678, DMALen: 13}, Payload: []byte("Hello, world!")})
	// A 556-byte message at PMTU 256: First 256, Middle 256, Last 44.
	add("RDMA WRITE First", false, roce.Packet{BTH: bth(roce.OpWriteFirst, 0x22, 0x102, false), RETH: roce.RETH{VA: 0x7f0000002000, RKey: 0x12345678, DMALen: 556}, Payload: data300[:256]})
	add("RDMA WRITE Middle", false, roce.Packet{BTH: bth(roce.OpWriteMiddle, 0x22, 0x103, false), Payload: data300[:256]})
	add("RDMA WRITE Last", false, roce.Packet{BTH: bth(roce.OpWriteLast, 0x22, 0x104, true), Payload: data300[:44]})
	add("RDMA WRITE Only with Immediate", false, roce.Packet{BTH: bth(roce.OpWriteOnlyImm, 0x22, 0x105, true), RETH: reth, ImmDt: roce.ImmDt{Data: 0xdeadbeef}, Payload: payload})
	add("RDMA WRITE Last with Immediate", false, roce.Packet{BTH: bth(roce.OpWriteLastImm, 0x22, 0x106, true), ImmDt: roce.ImmDt{Data: 7}, Payload: data300[:5]})
	add("FETCH_ADD", false, roce.Packet{BTH: bth(roce.OpFetchAdd, 0x22, 0x107, true), AtomicETH: roce.AtomicETH{VA: 0x7f0000003000, RKey: 0x12345678, SwapAdd: 1}})
	add("COMPARE_SWAP", false, roce.Packet{BTH: bth(roce.OpCompareSwap, 0x22, 0x108, true), AtomicETH: roce.AtomicETH{VA: 0x7f0000003008, RKey: 0x12345678, SwapAdd: 9, Compare: 8}})
	add("SEND Only", false, roce.Packet{BTH: bth(roce.OpSendOnly, 0x22, 0x109, true), Payload: []byte("store catalogue")}) // tshark 4.0 flags RC SENDs under 13 bytes as malformed RPCoRDMA
	add("SEND Only with Immediate", false, roce.Packet{BTH: bth(roce.OpSendOnlyImm, 0x22, 0x10a, true), ImmDt: roce.ImmDt{Data: 1}, Payload: payload})
	add("RDMA READ Request", false, roce.Packet{BTH: bth(roce.OpReadRequest, 0x22, 0x10b, true), RETH: reth})
	add("ACK", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x106, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 5}})
	add("ATOMIC ACK", true, roce.Packet{BTH: bth(roce.OpAtomicACK, 0x11, 0x107, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 6}, AtomicAckETH: roce.AtomicAckETH{OrigData: 41}})
	add("RDMA READ Response Only", true, roce.Packet{BTH: bth(roce.OpReadResponseOnly, 0x11, 0x10b, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 9}, Payload: payload})
	// A 556-byte READ at PMTU 256: its request takes PSNs 0x10c-0x10e, one
	// per response: First 256, Middle 256 (no AETH), Last 44.
	add("RDMA READ Request, 3 responses", false, roce.Packet{BTH: bth(roce.OpReadRequest, 0x22, 0x10c, true), RETH: roce.RETH{VA: 0x7f0000002000, RKey: 0x12345678, DMALen: 556}})
	add("RDMA READ Response First", true, roce.Packet{BTH: bth(roce.OpReadResponseFirst, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 10}, Payload: data300[:256]})
	add("RDMA READ Response Middle", true, roce.Packet{BTH: bth(roce.OpReadResponseMiddle, 0x11, 0x10d, false), Payload: data300[:256]})
	add("RDMA READ Response Last", true, roce.Packet{BTH: bth(roce.OpReadResponseLast, 0x11, 0x10e, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 10}, Payload: data300[:44]})
	add("RDMA READ Response Only, 0 bytes", true, roce.Packet{BTH: bth(roce.OpReadResponseOnly, 0x11, 0x10f, false), AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 11}})
	add("NAK PSN sequence error", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.NAKPSNSequenceError, MSN: 9}})
	add("RNR NAK", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.RNRNAKSyndrome(14), MSN: 9}})
	add("NAK invalid request", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.NAKInvalidRequest, MSN: 9}})
	add("NAK remote access error", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.NAKRemoteAccessError, MSN: 9}})
	add("NAK remote operational error", true, roce.Packet{BTH: bth(roce.OpACK, 0x11, 0x10c, false), AETH: roce.AETH{Syndrome: roce.NAKRemoteOperationalError, MSN: 9}})

	// The CM handshake and teardown on QP1.
	cms := []struct {
		name    string
		reverse bool
		m       roce.CM
	}{
		{"CM REQ", false, roce.CM{Header: roce.CMHeader(roce.AttrREQ, 0x12345678), REQ: goldenREQFields()}},
		{"CM REP", true, roce.CM{Header: roce.CMHeader(roce.AttrREP, 0x12345678), REP: goldenREPFields()}},
		{"CM RTU", false, roce.CM{Header: roce.CMHeader(roce.AttrRTU, 0x12345678), RTU: roce.ReadyToUse{LocalCommID: 0xaabbccdd, RemoteCommID: 0x11223344}}},
		{"CM MRA", true, roce.CM{Header: roce.CMHeader(roce.AttrMRA, 0x12345678), MRA: roce.MessageReceiptAck{LocalCommID: 0x11223344, RemoteCommID: 0xaabbccdd, MessageMRAed: roce.CMMsgREQ, ServiceTimeout: 20}}},
		{"CM REJ", true, roce.CM{Header: roce.CMHeader(roce.AttrREJ, 0x12345679), REJ: roce.ConnectReject{LocalCommID: 0x11223345, RemoteCommID: 0xaabbccde, MessageRejected: roce.CMMsgREQ, Reason: roce.RejectInvalidServiceID}}},
		{"CM DREQ", false, roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 0x2000), DREQ: roce.DisconnectRequest{LocalCommID: 0xaabbccdd, RemoteCommID: 0x11223344, RemoteQPN: 0x22}}},
		{"CM DREP", true, roce.CM{Header: roce.CMHeader(roce.AttrDREP, 0x2000), DREP: roce.DisconnectReply{LocalCommID: 0x11223344, RemoteCommID: 0xaabbccdd}}},
	}
	for i, c := range cms {
		add(c.name, c.reverse, roce.CMPacket(uint32(i), c.m.AppendTo(nil)))
	}
	add("CNP", true, roce.Packet{BTH: roce.BTH{Opcode: roce.OpCNP, PKey: roce.DefaultPKey, BECN: true, DestQP: 0x11}})
	return pkts
}

// writeCapture writes every kind over IPv4 and IPv6 to a pcap file and
// returns the frames it wrote.
func writeCapture(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	w, err := roce.NewPcapWriter(bw)
	if err != nil {
		t.Fatal(err)
	}
	fwd4 := roce.Envelope{Src: hostA, Dst: hostB, SrcPort: roce.SourcePort(0x11, 0x22), DstPort: roce.Port}
	rev4 := roce.Envelope{Src: hostB, Dst: hostA, SrcPort: roce.SourcePort(0x22, 0x11), DstPort: roce.Port, TrafficClass: 0x02}
	fwd6 := roce.Envelope{Src: hostA6, Dst: hostB6, SrcPort: roce.SourcePort(0x11, 0x22), DstPort: roce.Port, FlowLabel: roce.FlowLabel(0x11, 0x22)}
	rev6 := roce.Envelope{Src: hostB6, Dst: hostA6, SrcPort: roce.SourcePort(0x22, 0x11), DstPort: roce.Port, TrafficClass: 0x8A}
	ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var frames [][]byte
	for _, envs := range [][2]roce.Envelope{{fwd4, rev4}, {fwd6, rev6}} {
		for _, np := range everyKind(t) {
			env, dst, src := envs[0], macB, macA
			if np.reverse {
				env, dst, src = envs[1], macA, macB
			}
			env.ID = uint16(len(frames))
			frame, err := env.AppendFrame(nil, dst, src, &np.p)
			if err != nil {
				t.Fatalf("%s: %v", np.name, err)
			}
			ts = ts.Add(1500 * time.Microsecond)
			if err := w.WriteFrame(ts, frame); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, frame)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestPcapWriterOutputReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "all.pcap")
	frames := writeCapture(t, path)
	lt, recs := readPcap(t, path)
	if lt != roce.LinkTypeEthernet || len(recs) != len(frames) {
		t.Fatalf("link type %d, %d records, want %d", lt, len(recs), len(frames))
	}
	for i, r := range recs {
		if !bytes.Equal(r.data, frames[i]) || r.orig != len(frames[i]) {
			t.Errorf("record %d differs from the frame written", i)
		}
		if err := roce.VerifyICRC(r.data[roce.EthernetLen:]); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	if want := time.Date(2025, 1, 1, 0, 0, 0, 1500000, time.UTC); !recs[0].ts.Equal(want) {
		t.Errorf("first timestamp %v, want %v", recs[0].ts.UTC(), want)
	}
}

// TestTsharkAcceptsEveryPacketKind runs shared/tools/tshark_check.sh, an
// independent check by Wireshark's dissector plus a Lua ICRC checker, over a
// capture of every packet kind we build.
func TestTsharkAcceptsEveryPacketKind(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not on PATH (Debian: apt-get install tshark); skipping the independent dissector check")
	}
	script := sharedFile(t, filepath.Join("tools", "tshark_check.sh"))
	path := filepath.Join(t.TempDir(), "all.pcap")
	frames := writeCapture(t, path)
	out, err := exec.Command("bash", script, path).CombinedOutput()
	t.Logf("tshark_check.sh over %d frames:\n%s", len(frames), out)
	if err != nil {
		t.Fatalf("tshark_check.sh failed: %v", err)
	}
}
