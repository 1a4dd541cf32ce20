package bench

import (
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"
)

// sendBurst is the number of datagrams per sendmmsg call.
const sendBurst = 64

// sender sends a workload's datagrams round and round to one address from
// its own socket, on its own OS thread (so that its CPU time can be told
// apart from the collector's).
type sender struct {
	w     *Workload
	conn  *net.UDPConn
	rate  float64 // datagrams/s; 0 = unlimited
	next  int     // next datagram of the pool
	stop  atomic.Bool
	sent  atomic.Uint64 // datagrams sent
	tid   atomic.Int64  // the OS thread it runs on, once started
	errs  atomic.Uint64 // failed sends
	batch batchSender
}

func newSender(w *Workload, to netip.AddrPort, rate float64, first int) (*sender, error) {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return nil, err
	}
	s := &sender{w: w, conn: conn, rate: rate, next: first % w.Datagrams()}
	if err := s.batch.init(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// run sends until stop is set, pacing to rate if it is not 0.
func (s *sender) run(done chan<- struct{}) {
	defer close(done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.tid.Store(int64(threadID()))
	start := time.Now()
	var sent uint64
	for !s.stop.Load() {
		n := sendBurst
		if s.rate > 0 {
			due := uint64(time.Since(start).Seconds()*s.rate) + 1
			if due <= sent {
				wait := time.Duration(float64(sent+1-due) / s.rate * 1e9)
				time.Sleep(max(wait, 50*time.Microsecond))
				continue
			}
			n = int(min(due-sent, sendBurst))
		}
		k, err := s.batch.send(s, n)
		if err != nil {
			s.errs.Add(1)
		}
		sent += uint64(k)
		s.sent.Store(sent)
	}
}

// take returns the next datagram of the pool.
func (s *sender) take() []byte {
	b := s.w.Datagram(s.next)
	if s.next++; s.next == s.w.Datagrams() {
		s.next = 0
	}
	return b
}

func (s *sender) close() error { return s.conn.Close() }
