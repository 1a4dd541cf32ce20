package cli

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/sketch"
)

// sketchConfig is a configuration with one small Sketch-Merge store of kind.
func sketchConfig(t *testing.T, kind string) string {
	t.Helper()
	cfg := fmt.Sprintf(`
collector:
  prefault: false
translator:
  readers: 2
  recv_buffer: 8MiB
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 1024, value_size: 4, redundancy: 2}
  - {name: sketchmerge, id: 10, primitive: sketchmerge, default: true, rows: 4, columns: 1024, epochs: 3, kind: %s}
`, kind)
	path := filepath.Join(t.TempDir(), "sketch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTwoReportersSketchesMergedOverRoCEEqualTheUnionStreamsSketch(t *testing.T) {
	for _, kind := range []sketch.Kind{sketch.CountMin, sketch.CountSketch} {
		t.Run(kind.String(), func(t *testing.T) {
			m, _ := startCmd(t, upReady, "up", "--config", sketchConfig(t, kind.String()), "--listen", "127.0.0.1:0",
				"--http", "127.0.0.1:0", "--sink", "roce")
			udp, base := m[1], m[2]
			g := sketch.Geometry{Rows: 4, Columns: 1024, Kind: kind}
			// A Zipf stream of 200,000 packets over 5,000 flows, split between
			// two switches.
			rng := rand.New(rand.NewPCG(42, 7))
			z := rand.NewZipf(rng, 1.2, 1, 4999)
			sw := [2]*sketch.Sketch{}
			for i := range sw {
				sw[i], _ = sketch.New(g)
			}
			union, _ := sketch.New(g)
			truth := map[uint32]int64{}
			for p := range 200000 {
				flow := uint32(z.Uint64())
				key := binary.BigEndian.AppendUint32(nil, flow)
				sw[p%2].Update(key, 1)
				union.Update(key, 1)
				truth[flow]++
			}
			sent := 0
			send := func(epoch uint32, s *sketch.Sketch) {
				r, err := reporter.New(reporter.Config{To: udp, Rate: 20000}, nil)
				if err != nil {
					t.Fatal(err)
				}
				n, err := r.SendSketch(0, epoch, s)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				sent += n
			}
			send(1, sw[0])
			send(1, sw[1])
			// Switches flush an epoch after it ends; the next epoch's flushes
			// come an epoch later. Here, wait until every flush of epoch 1
			// is in before epoch 2 opens (closing 1).
			eventually(t, "every report of epoch 1 is applied", func() error {
				if n := metric(t, base, "", `dta_translator_reports_total{primitive="sketchmerge"}`); n != float64(sent) {
					return fmt.Errorf("%v of %d applied", n, sent)
				}
				return nil
			})
			// The next epoch's first flush closes epoch 1.
			one, _ := sketch.New(g)
			one.Update([]byte{0, 0, 0, 1}, 1)
			c, err := client.New(base, nil)
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "epoch 1 closes and holds both switches' counters", func() error {
				send(2, one) // idempotent enough: epoch 2 only grows
				got, err := c.SketchCounters(t.Context(), "sketchmerge", 1)
				if err != nil {
					return err
				}
				for r := range g.Rows {
					if !slices.Equal(got.Counters[r], union.Row(r)) {
						diff := 0
						for i := range got.Counters[r] {
							if got.Counters[r][i] != union.Row(r)[i] {
								diff++
							}
						}
						_, body := call(t, nil, "GET", base+"/metrics", "")
						var drops []string
						for _, l := range strings.Split(body, "\n") {
							if strings.HasPrefix(l, "dta_translator_drops_total") && !strings.HasSuffix(l, " 0") || strings.HasPrefix(l, "dta_translator_reports_total") || strings.Contains(l, "retransmi") && !strings.HasPrefix(l, "#") {
								drops = append(drops, l)
							}
						}
						return fmt.Errorf("row %d differs from the union stream's sketch in %d counters; %v", r, diff, drops)
					}
				}
				return nil
			})
			// The heaviest flows come back as the heavy hitters.
			flows := make([]uint32, 0, len(truth))
			for f := range truth {
				flows = append(flows, f)
			}
			slices.SortFunc(flows, func(a, b uint32) int { return int(truth[b] - truth[a]) })
			cands := make([]string, 0, 200)
			for _, f := range flows[:200] {
				cands = append(cands, strconv.FormatUint(uint64(f), 10))
			}
			hh, err := c.SketchTopK(t.Context(), "sketchmerge", cands, 5, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range hh {
				if want := strconv.FormatUint(uint64(flows[i]), 10); h.Key != want {
					t.Errorf("heavy hitter %d is %s (estimate %d), want %s (%d packets)", i, h.Key, h.Estimate, want, truth[flows[i]])
				}
			}
			// A late flush for the closed epoch is dropped and counted. The
			// epoch-2 flushes above may still be on their way (another
			// reporter socket, maybe another reader): wait until the
			// translator has opened epoch 2, closing 1.
			eventually(t, "epoch 1 is closed", func() error {
				eps, err := c.SketchEpochs(t.Context(), "sketchmerge")
				if err != nil {
					return err
				}
				if eps.Latest == nil || *eps.Latest != 1 {
					send(2, one)
					return fmt.Errorf("epochs %+v", eps.Epochs)
				}
				return nil
			})
			send(1, one)
			eventually(t, "a flush for a closed epoch is counted", func() error {
				if n := metric(t, base, "", `dta_translator_drops_total{reason="epoch_closed"}`); n < 1 {
					return fmt.Errorf("epoch_closed drops %v", n)
				}
				return nil
			})
			if got, _ := c.SketchEstimate(t.Context(), "sketchmerge", "1", 1); got.Estimate != union.Estimate([]byte{0, 0, 0, 1}) {
				t.Errorf("closed epoch 1 changed: flow 1 estimate %d, want %d", got.Estimate, union.Estimate([]byte{0, 0, 0, 1}))
			}
		})
	}
}

// TestACollectorThatRestartsEmptyGetsTheOpenSketchEpochBack kills a dta
// collector (SIGKILL) while its translator has a Sketch-Merge epoch open and
// restarts it empty on the same RoCEv2 address: the translator reconnects,
// reads the store's tags over RDMA READ, opens the epoch there again, and the
// counters that arrive after the restart are answered under that epoch.
func TestACollectorThatRestartsEmptyGetsTheOpenSketchEpochBack(t *testing.T) {
	bin := buildDTA(t)
	cfg := sketchConfig(t, "count-min")
	m, p := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rdmaAddr := m[1]
	tm, _ := startProcess(t, bin, regexp.MustCompile(`reports on udp (\S+), RoCEv2 to .* metrics on (http://\S+)`), "translator", "--config", cfg,
		"--collector", rdmaAddr, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	udp, trHTTP := tm[1], tm[2]
	g := sketch.Geometry{Rows: 4, Columns: 1024, Kind: sketch.CountMin}
	key := []byte{0, 0, 0, 9}
	send := func(n int64) {
		s, _ := sketch.New(g)
		s.Update(key, n)
		r, err := reporter.New(reporter.Config{To: udp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.SendSketch(0, 4, s); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	estimate := func(base string) (int64, error) {
		c, err := client.New(base, nil)
		if err != nil {
			return 0, err
		}
		got, err := c.SketchEstimate(t.Context(), "sketchmerge", "9", 4)
		return got.Estimate, err
	}
	send(5)
	eventually(t, "epoch 4 holds the first flush", func() error {
		if v, err := estimate(m[2]); err != nil || v != 5 {
			return fmt.Errorf("estimate %d, %v", v, err)
		}
		return nil
	})

	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.exited = true
	m2, _ := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", rdmaAddr, "--http", "127.0.0.1:0")
	eventually(t, "the translator reconnects and epoch 4 is open on the restarted collector", func() error {
		send(3)
		v, err := estimate(m2[2])
		if err != nil {
			return err
		}
		if v < 3 || v%3 != 0 {
			return fmt.Errorf("estimate %d: want a multiple of 3 (only flushes after the restart)", v)
		}
		return nil
	})
	if n := metric(t, trHTTP, "", `dta_translator_drops_total{reason="sink"}`); n > 0 {
		t.Logf("%v reports dropped while the collector was down (expected)", n)
	}
}
