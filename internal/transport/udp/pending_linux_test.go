package udp

import (
	"net"
	"testing"
	"time"
)

// TestPendingSaysWhetherADatagramWaitsInASocket: a datagram sent to a
// listener whose only reader is parked in its handler waits in the socket
// (Pending), and once the reader takes it, nothing does.
func TestPendingSaysWhetherADatagramWaitsInASocket(t *testing.T) {
	checkNoGoroutineLeak(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	l, err := Listen(testConfig("127.0.0.1:0", 1, true), func(int) Handler { return blockingHandler{started, release} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Pending() {
		t.Error("a new listener has a datagram pending")
	}
	run(t, l)
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(l.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("first")) // parks the reader in its handler
	<-started
	c.Write([]byte("second"))
	deadline := time.Now().Add(5 * time.Second)
	for !l.Pending() {
		if time.Now().After(deadline) {
			t.Fatal("the second datagram never showed as pending")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for l.Pending() {
		if time.Now().After(deadline) {
			t.Fatal("still pending after the reader was released")
		}
		time.Sleep(time.Millisecond)
	}
}
