// Package uplink connects a translator to a remote collector over RoCEv2: it
// dials the collector's responder, learns the stores from the advertisement
// the collector posts (no address or key is typed by hand), maps the
// translator's store indices to RDMA targets, and follows reconnects. It is
// the roce sink of DESIGN.md §3. It decodes no reports and owns no primitive.
package uplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/store"
)

// ErrStoresChanged is sent on Fatal when a collector reconnects with a
// different set of stores: the translator's tables no longer fit and it must
// be restarted.
var ErrStoresChanged = errors.New("uplink: the collector came back with different stores; restart the translator")

// Uplink is a live connection to one collector.
type Uplink struct {
	req    *rdma.Requester
	descs  []store.Descriptor
	logger *slog.Logger

	mu      sync.Mutex
	adv     []store.Advertised
	restart func() // called when the collector's memory is new
	fatal   chan error
}

// Dial connects to the collector at cfg.Collector and learns its stores.
func Dial(ctx context.Context, cfg rdma.RequesterConfig, logger *slog.Logger) (*Uplink, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	req, err := rdma.Dial(ctx, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("uplink: connect to collector %s: %w", cfg.Collector, err)
	}
	adv, err := store.ParseAdvertisement(req.Advertisement())
	if err != nil {
		req.Close()
		return nil, fmt.Errorf("uplink: collector %s: %w", cfg.Collector, err)
	}
	u := &Uplink{req: req, adv: adv, logger: logger, fatal: make(chan error, 1)}
	for _, a := range adv {
		u.descs = append(u.descs, a.Descriptor)
	}
	req.SetTargets(targets(adv))
	req.OnReconnect(u.reconnected)
	logger.Info("connected to collector", "addr", cfg.Collector.String(), "stores", len(adv))
	return u, nil
}

func targets(adv []store.Advertised) []rdma.Target {
	t := make([]rdma.Target, len(adv))
	for i, a := range adv {
		t[i] = rdma.Target{VA: a.VA, RKey: a.RKey, Length: a.Length}
	}
	return t
}

// reconnected runs (before ops flow again) when the requester reconnected.
// The same stores under the same keys mean the same collector instance and
// memory; new keys mean a restarted collector, whose memory is empty or was
// restored from checkpoints, so the translator's Append heads must resume at
// the heads it advertised (OnRestart, Heads).
func (u *Uplink) reconnected(b []byte) {
	if restart := u.update(b); restart != nil {
		restart() // outside u.mu: it reads Heads
	}
}

// update takes the new advertisement and returns the OnRestart function to
// call if the collector restarted.
func (u *Uplink) update(b []byte) func() {
	adv, err := store.ParseAdvertisement(b)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil || len(adv) != len(u.adv) {
		u.fail(ErrStoresChanged, err)
		return nil
	}
	same := true
	for i := range adv {
		if !reflect.DeepEqual(adv[i].Descriptor, u.adv[i].Descriptor) {
			u.fail(ErrStoresChanged, nil)
			return nil
		}
		same = same && adv[i].VA == u.adv[i].VA && adv[i].RKey == u.adv[i].RKey
	}
	u.req.SetTargets(targets(adv))
	u.adv = adv
	if same {
		u.logger.Info("reconnected to the same collector")
		return nil
	}
	u.logger.Warn("collector restarted: resuming append lists at the heads it advertised")
	return u.restart
}

func (u *Uplink) fail(err, cause error) {
	u.logger.Error("collector stores changed", "err", err, "cause", cause)
	u.req.SetTargets(nil) // refuse every op until restarted
	select {
	case u.fatal <- err:
	default:
	}
}

// Descriptors returns the collector's stores, in the order the translator
// must index them.
func (u *Uplink) Descriptors() []store.Descriptor { return u.descs }

// Sink is where the translator's ops go.
func (u *Uplink) Sink() memop.Sink { return u.req }

// Requester returns the RoCEv2 requester (for its statistics).
func (u *Uplink) Requester() *rdma.Requester { return u.req }

// Heads returns, per store index, the Append lists the collector advertised
// with a head other than 0 on the newest connection: where a translator
// resumes its writers when it starts or when the collector restarted.
func (u *Uplink) Heads() [][]store.ListHead {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([][]store.ListHead, len(u.adv))
	for i, a := range u.adv {
		out[i] = a.Heads
	}
	return out
}

// OnRestart sets the function called when the collector restarted with the
// same stores but empty memory.
func (u *Uplink) OnRestart(fn func()) {
	u.mu.Lock()
	u.restart = fn
	u.mu.Unlock()
}

// Fatal delivers an error when the uplink cannot go on (ErrStoresChanged).
func (u *Uplink) Fatal() <-chan error { return u.fatal }

// Flush waits until every op sent so far is acknowledged.
func (u *Uplink) Flush(ctx context.Context) error { return u.req.Flush(ctx) }

// Close disconnects.
func (u *Uplink) Close() error { return u.req.Close() }
