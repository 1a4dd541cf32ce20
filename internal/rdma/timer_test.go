package rdma

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

// A requester and a responder whose timers have gone to sleep still recover
// lost packets: the responder retransmits an advertisement packet the proxy
// dropped, the requester a write it dropped.
func TestSleepingTimersStillRetransmit(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	proxy := newLossyProxy(t, resp.LocalAddr(), 1, 0, 0, 0)
	var sends, writes int
	proxy.mu.Lock()
	proxy.dropIf = func(dir, _ int, p *roce.Packet) bool {
		switch {
		case dir == 1 && (p.BTH.Opcode == roce.OpSendOnly || p.BTH.Opcode == roce.OpSendFirst):
			sends++
			return sends == 1 // the advertisement's first packet
		case dir == 0 && p.BTH.Opcode == roce.OpWriteOnly:
			writes++
			return writes == 1 // the first write
		}
		return false
	}
	proxy.mu.Unlock()
	time.Sleep(50 * time.Millisecond) // the responder's timer (5 ms ticks) is asleep by now

	q := dial(t, testRequesterConfig(proxy.addr()))
	q.SetTargets([]Target{targetOf(m)})
	time.Sleep(50 * time.Millisecond) // nothing outstanding: the requester's timer sleeps too
	data := binary.LittleEndian.AppendUint64(nil, 0xC0FFEE)
	if err := q.Apply([]memop.Op{{Kind: memop.Write, Offset: 64, Data: data}}); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	if v, _ := reg.Load64(64); v != 0xC0FFEE {
		t.Fatalf("word = %#x after flush", v)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if sends < 2 || writes < 2 || q.Stats().Timeouts.Load() == 0 {
		t.Fatalf("%d advertisement sends, %d writes, %d requester timeouts: want the dropped ones sent again after a timeout", sends, writes, q.Stats().Timeouts.Load())
	}
}
