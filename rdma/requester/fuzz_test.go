package requester_test

import (
	"sync"
	"testing"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/roce"
)

// FuzzRequesterHandle feeds arbitrary responses to a connected requester
// with packets (writes and atomics) in flight: it must not panic, its
// window must stay consistent, and no atomic completes twice.
func FuzzRequesterHandle(f *testing.F) {
	resp, _, tgt := startResponder(f, 8192, rdma.AccessRemoteWrite|rdma.AccessRemoteAtomic)
	cfg := testConfig(resp.LocalAddr())
	cfg.Timeout = 1 << 62 // the fuzzer's ACKs only
	q := dial(f, cfg)
	q.SetTargets([]requester.Target{tgt})
	var mu sync.Mutex // the callback runs on the receive goroutine too
	done := map[uint64]bool{}
	var twice uint64
	q.OnAtomic(func(c requester.Completion) {
		mu.Lock()
		defer mu.Unlock()
		if done[c.ID] {
			twice = c.ID
		}
		done[c.ID] = true
	})
	var id uint64
	in := roce.Envelope{Src: resp.LocalAddr().Addr(), Dst: q.LocalAddr().Addr(), SrcPort: resp.LocalAddr().Port(), DstPort: q.LocalAddr().Port()}
	ack := func(op roce.Opcode, syn roce.Syndrome) []byte {
		return (&roce.Packet{BTH: roce.BTH{Opcode: op}, AETH: roce.AETH{Syndrome: syn}}).AppendTo(nil)
	}
	f.Add(ack(roce.OpACK, roce.ACKUnlimited), true, true)
	f.Add(ack(roce.OpAtomicACK, roce.ACKUnlimited), true, true)
	f.Add(ack(roce.OpACK, roce.NAKPSNSequenceError), true, true)
	f.Add(ack(roce.OpACK, roce.NAKRemoteAccessError), true, true)
	f.Add((&roce.Packet{BTH: roce.BTH{Opcode: roce.OpSendOnly, AckReq: true}, Payload: []byte("adv")}).AppendTo(nil), true, true)
	f.Fuzz(func(t *testing.T, b []byte, seal, toQP bool) {
		b = append([]byte(nil), b...)
		qpn, una, n := q.WindowForTest()
		if len(b) >= roce.BTHLen+roce.ICRCLen {
			if toQP {
				b[5], b[6], b[7] = byte(qpn>>16), byte(qpn>>8), byte(qpn)
				if b[0] == byte(roce.OpACK) || b[0] == byte(roce.OpAtomicACK) {
					psn := una + uint32(b[10])%uint32(n+2) - 1 // around the window
					b[9], b[10], b[11] = byte(psn>>16), byte(psn>>8), byte(psn)
				}
			}
			if seal {
				in.Seal(b)
			}
		}
		if n < 8 && q.Connected() {
			id += 2
			q.Post([]requester.Op{
				{Kind: requester.Write, Data: []byte{1}},
				{Kind: requester.FetchAdd, Offset: 8, Add: 1, ID: id},
				{Kind: requester.CompareSwap, Offset: 16, Compare: 0, Swap: 1, ID: id + 1},
			})
		}
		n, slots, atomics := q.HandleForTest(b, resp.LocalAddr())
		if n < 0 || n > slots || atomics < 0 || atomics > n {
			t.Fatalf("window n=%d atomics=%d", n, atomics)
		}
		mu.Lock()
		defer mu.Unlock()
		if twice != 0 {
			t.Fatalf("atomic %d completed twice", twice)
		}
	})
}
