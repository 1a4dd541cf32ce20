package rdma

import (
	"slices"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

// A checkpoint writer or exporter that tracks a region must see every block
// a translator wrote into it over RoCEv2, whatever the operation.
func TestEveryRemoteWriteIsRecordedForTrackers(t *testing.T) {
	h := newHostile(t, nil)
	tr, err := h.regions[0].Track(4096)
	if err != nil {
		t.Fatal(err)
	}
	// The region is one 4 KiB block: after each operation, it is marked.
	for _, tc := range []struct {
		name string
		pkt  roce.Packet
		ack  roce.Opcode
	}{
		{"RDMA WRITE", writeOnly(h.rw.VA+100, h.rw.RKey, []byte{1, 2, 3}, true), roce.OpACK},
		{"RDMA WRITE of one aligned word", writeOnly(h.rw.VA+64, h.rw.RKey, []byte{1, 2, 3, 4, 5, 6, 7, 8}, true), roce.OpACK},
		{"FETCH_ADD", fetchAdd(h.rw.VA+8, h.rw.RKey, 5), roce.OpAtomicACK},
		{"COMPARE_SWAP", roce.Packet{
			BTH:       roce.BTH{Opcode: roce.OpCompareSwap, AckReq: true},
			AtomicETH: roce.AtomicETH{VA: h.rw.VA + 16, RKey: h.rw.RKey, Compare: 0, SwapAdd: 9},
		}, roce.OpAtomicACK},
	} {
		if got, _ := tr.Take(nil); len(got) != 0 {
			t.Fatalf("before %s: blocks %v already marked", tc.name, got)
		}
		psn := h.peer.request(tc.pkt)
		h.peer.expectAETH(tc.ack, roce.ACKUnlimited, psn)
		if got, _ := tr.Take(nil); !slices.Equal(got, []uint64{0}) {
			t.Errorf("%s: tracker took %v, want [0]", tc.name, got)
		}
	}
}
