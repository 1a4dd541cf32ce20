package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// blockingHandler parks its reader until release is closed.
type blockingHandler struct {
	started chan<- struct{}
	release <-chan struct{}
}

func (h blockingHandler) HandlePacket([]byte, netip.AddrPort, Replier) {
	select {
	case h.started <- struct{}{}:
	default:
	}
	<-h.release
}

func (blockingHandler) EndBatch() {}

func TestKernelDropsCountsReceiveBufferOverflow(t *testing.T) {
	checkNoGoroutineLeak(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	cfg := testConfig("127.0.0.1:0", 1, true)
	cfg.RecvBuffer = 4096 // the kernel rounds this up to its minimum
	l, err := Listen(cfg, func(int) Handler { return blockingHandler{started, release} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l.drops.supported() {
		l.Close()
		t.Skip("this platform does not report per-socket kernel drops (no /proc/net/udp)")
	}
	run(t, l)
	defer close(release) // runs before run's cleanup closes the listener

	if n := l.KernelDrops(); n != 0 {
		t.Fatalf("KernelDrops() = %d on a new listener, want 0", n)
	}
	c := dial(t, l.LocalAddr())
	payload := bytes.Repeat([]byte{0xd7}, 256)
	c.Write(payload)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("handler never called")
	}
	// The reader is parked in the handler: the socket's buffer fills up
	// and the kernel drops the rest.
	const flood = 2000
	for range flood {
		if _, err := c.Write(payload); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	var drops uint64
	eventually(t, "the kernel reports drops", func() bool { drops = l.KernelDrops(); return drops > 0 })
	if drops > flood {
		t.Errorf("KernelDrops() = %d, more than the %d datagrams sent", drops, flood)
	}
	t.Logf("kernel dropped %d of %d datagrams", drops, flood)

	l.Close()
	if after := l.KernelDrops(); after < drops {
		t.Errorf("KernelDrops() after Close = %d, want at least %d", after, drops)
	}
}
