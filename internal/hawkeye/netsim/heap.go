package netsim

import "time"

// Event kinds.
const (
	evArrive     uint8 = iota // a data packet's last bit reaches node/port
	evTxDone                  // node/port finished serializing a packet
	evPFC                     // a PFC frame reaches node/port (val = pause time)
	evPauseEnd                // node/port's pause may have expired
	evPFCRefresh              // switch node: refresh the PAUSE out of port (val = generation)
	evFlowStart               // flow val starts
	evHostWake                // host node may send again
	evCNP                     // a CNP for flow val reaches its sender
	evInject                  // host node sends a PAUSE (val = injection index)
	evCall                    // call fns[val]
)

// event is one scheduled occurrence. Events are values in the heap.
type event struct {
	at   time.Duration
	seq  uint64
	pkt  *Packet
	val  int64
	node NodeID
	port int32
	kind uint8
}

// less orders by time, then by insertion (deterministic ties).
func (e *event) less(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// eventHeap is a binary min-heap of events.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = event{}
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].less(&s[l]) {
			m = r
		}
		if !s[m].less(&s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
