package sock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
)

func TestTickerSleepsUntilArmed(t *testing.T) {
	var mu sync.Mutex
	done := make(chan struct{})
	defer close(done)
	tm := sock.NewTicker(time.Millisecond)
	ticks := make(chan bool, 100)
	busy := false
	go tm.Run(&mu, done, func() bool {
		ticks <- busy
		return busy
	})
	<-ticks // the first tick finds nothing to time: the loop sleeps
	time.Sleep(30 * time.Millisecond)
	if n := len(ticks); n != 0 {
		t.Fatalf("%d ticks while nothing was pending", n)
	}
	mu.Lock()
	busy = true
	tm.Arm()
	mu.Unlock()
	for range 3 { // armed: it ticks again, and keeps ticking while busy
		select {
		case <-ticks:
		case <-time.After(10 * time.Second):
			t.Fatal("no tick after arm")
		}
	}
}
