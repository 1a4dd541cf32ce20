package ingest_test

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/internal/translator"
)

// start runs an ingest on a free loopback port over small stores until the
// test ends.
func start(t *testing.T) (*ingest.Ingest, *store.Catalog) {
	in, cat, _ := startGated(t, nil)
	return in, cat
}

// startGated is start with a source gate.
func startGated(t *testing.T, g *admit.Gate) (*ingest.Ingest, *store.Catalog, *translator.Translator) {
	t.Helper()
	cat := storetest.Open(t)
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.UDP.Addr, cfg.UDP.Readers, cfg.UDP.RecvBuffer, cfg.AckPort = "127.0.0.1:0", 1, 1<<20, 0
	cfg.Gate = g
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
	return in, cat, tr
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

// keyIncrement is a compat Key-Increment report: key, delta 1, N = 1.
func keyIncrement(key uint32) []byte {
	b := binary.BigEndian.AppendUint32([]byte{0x03, 0, 0x00, 1}, key)
	return binary.BigEndian.AppendUint64(b, 1)
}

func TestSourcesOutsideTheAllowlistChangeNothing(t *testing.T) {
	g, err := admit.NewGate(admit.Policy{Allow: admit.MustParsePrefixes("192.0.2.0/24", "2001:db8::/32")}, 64)
	if err != nil {
		t.Fatal(err)
	}
	in, cat, tr := startGated(t, g)
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(in.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ki := cat.ByName("keyincrement").KeyIncrement
	for range 5 {
		c.Write(keyIncrement(11))
	}
	waitUntil(t, "five datagrams are refused as not allowed", func() bool {
		return tr.Stats().Drops[translator.ReasonNotAllowed] == 5
	})
	if n, _ := ki.Query([]byte{11, 0, 0, 0}, 0); n != 0 {
		t.Fatalf("refused reports counted %d", n)
	}
	// The allowlist is widened while the socket is live: the next report lands.
	if err := g.SetPolicy(admit.Policy{Allow: admit.MustParsePrefixes("127.0.0.0/8")}); err != nil {
		t.Fatal(err)
	}
	c.Write(keyIncrement(11))
	waitUntil(t, "the report after the reload lands", func() bool {
		n, _ := ki.Query([]byte{11, 0, 0, 0}, 0)
		return n == 1
	})
	if s := tr.Stats(); s.Drops[translator.ReasonNotAllowed] != 5 || s.Datagrams != 6 {
		t.Fatalf("drops %d, datagrams %d", s.Drops[translator.ReasonNotAllowed], s.Datagrams)
	}
}

func TestASourceAboveItsRateIsCutToItsBurst(t *testing.T) {
	g, err := admit.NewGate(admit.Policy{Rate: 1, Burst: 3}, 64)
	if err != nil {
		t.Fatal(err)
	}
	in, cat, tr := startGated(t, g)
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(in.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	for range 20 {
		c.Write(keyIncrement(12))
	}
	waitUntil(t, "all 20 datagrams are judged", func() bool { return tr.Stats().Datagrams == 20 })
	elapsed := time.Since(start)
	ki := cat.ByName("keyincrement").KeyIncrement
	n, _ := ki.Query([]byte{12, 0, 0, 0}, 0)
	limited := tr.Stats().Drops[translator.ReasonRateLimited]
	// The burst of 3, plus at most one per second the sending took (a
	// loaded machine may stretch it; the exact algorithm is tested with an
	// injected clock in internal/admit).
	if n < 3 || n > 3+uint64(elapsed/time.Second) || n+limited != 20 {
		t.Fatalf("%d applied and %d rate-limited of 20 in %v, want 3 applied", n, limited, elapsed)
	}
}
