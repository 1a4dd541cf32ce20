package ingest_test

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/internal/translator"
)

// start runs an ingest on a free loopback port over small stores until the
// test ends.
func start(t *testing.T) (*ingest.Ingest, *store.Catalog) {
	t.Helper()
	cat := storetest.Open(t)
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.UDP.Addr, cfg.UDP.Readers, cfg.UDP.RecvBuffer, cfg.AckPort = "127.0.0.1:0", 1, 1<<20, 0
	in, err := ingest.New(cfg, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- in.Run(context.Background()) }()
	t.Cleanup(func() {
		in.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return in, cat
}

func TestAnIdleTranslatorStillWritesWhatArrivesLater(t *testing.T) {
	in, cat := start(t)
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(in.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	app := cat.ByName("append").Append
	pc := cat.ByName("postcard").Postcard
	// The ticker has long found nothing held and stopped before each report:
	// only the worker's wake-up gets the partial batch (one entry of a batch
	// of 4, written after AppendFlushDelay) and the partial path (two of five
	// hops, written after PostcardMaxAge) into the stores.
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Write(binary.BigEndian.AppendUint32([]byte{0x02, 0, 0x00, 0, 0, 0, 3}, 77)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the partial Append batch is written", func() bool {
		p, err := app.Poll(3, 0, 10, nil)
		return err == nil && p.Count == 1 && binary.BigEndian.Uint32(p.Data) == 77
	})
	time.Sleep(50 * time.Millisecond)
	for hop := byte(1); hop <= 2; hop++ {
		if _, err := c.Write(binary.BigEndian.AppendUint32([]byte{0x04, hop, 0x00, 0, 0, 0, 9, hop}, uint32(hop)*10)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the partial path is written", func() bool {
		res, err := pc.Query([]byte{0, 0, 0, 9}, nil)
		return err == nil && res.Status.String() == "found" && len(res.Hops) >= 2 && res.Hops[0].Value == 10 && res.Hops[1].Value == 20
	})
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: not yet %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
