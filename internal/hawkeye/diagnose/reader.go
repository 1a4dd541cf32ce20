package diagnose

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// Telemetry is one poll's records as the collector holds them.
type Telemetry struct {
	Poll      uint32
	Manifests []record.Manifest
	Flows     []record.Flow
	Ports     []record.Port
	// Meters holds the meters looked up, by key (record.MeterKey as a
	// string); a meter the analyzer did not need is absent.
	Meters map[string]uint64
	// Lookups counts meter lookups; MetersMissing those that found nothing
	// (or conflicting copies).
	Lookups, MetersMissing int
	// Victim is the flow whose agent fired, At when (ns of simulated time).
	Victim record.Tuple
	At     uint64
}

// Reader reads polls from a collector. It keeps a cursor per Append list
// and holds entries of polls not asked for yet. It is not safe for
// concurrent use.
type Reader struct {
	c       *client.Client
	cursors map[listID]uint64
	man     map[uint32][]record.Manifest
	flows   map[uint32][]record.Flow
	ports   map[uint32][]record.Port
	// Wait bounds how long Read waits for a poll's records (default 10 s).
	Wait time.Duration
}

type listID struct {
	store string
	list  uint32
}

// ErrIncomplete is returned by Read when a poll's records did not all
// arrive in time.
var ErrIncomplete = errors.New("diagnose: poll incomplete")

// NewReader returns a reader of the collector c that starts at the lists'
// current heads: only polls exported from now on are read.
func NewReader(ctx context.Context, c *client.Client) (*Reader, error) {
	r := &Reader{c: c, cursors: map[listID]uint64{}, man: map[uint32][]record.Manifest{},
		flows: map[uint32][]record.Flow{}, ports: map[uint32][]record.Port{}, Wait: 10 * time.Second}
	heads := []listID{{record.PollStore, 0}}
	for l := range uint32(record.Lists) {
		heads = append(heads, listID{record.FlowStore, l}, listID{record.PortStore, l})
	}
	for _, id := range heads {
		h, err := c.AppendHead(ctx, id.store, id.list)
		if err != nil {
			return nil, fmt.Errorf("diagnose: head of %s list %d: %w", id.store, id.list, err)
		}
		r.cursors[id] = h
	}
	return r, nil
}

// pull reads the new entries of one list and files them by poll. It
// returns how many it read.
func (r *Reader) pull(ctx context.Context, id listID, wait time.Duration) (int, error) {
	res, err := r.c.Append(ctx, id.store, id.list, client.CursorAt(r.cursors[id]), client.AppendOptions{Limit: 1000, Wait: wait})
	if err != nil {
		return 0, fmt.Errorf("diagnose: read %s list %d: %w", id.store, id.list, err)
	}
	if res.Lost > 0 {
		return 0, fmt.Errorf("diagnose: %s list %d: %d entries overwritten before they were read", id.store, id.list, res.Lost)
	}
	r.cursors[id] = res.NextCursor
	for _, e := range res.Entries {
		switch id.store {
		case record.PollStore:
			var m record.Manifest
			if m.Decode(e.Value) == nil {
				r.man[m.Poll] = append(r.man[m.Poll], m)
			}
		case record.FlowStore:
			var f record.Flow
			if f.Decode(e.Value) == nil {
				r.flows[f.Poll] = append(r.flows[f.Poll], f)
			}
		case record.PortStore:
			var p record.Port
			if p.Decode(e.Value) == nil {
				r.ports[p.Poll] = append(r.ports[p.Poll], p)
			}
		}
	}
	return len(res.Entries), nil
}

// Read returns poll's records: it waits for every switch's manifest and the
// flow and port records they announce, then looks up the meters the
// provenance graph needs. The poll's entries are forgotten afterwards.
func (r *Reader) Read(ctx context.Context, poll uint32) (*Telemetry, error) {
	deadline := time.Now().Add(r.Wait)
	pollList := listID{record.PollStore, 0}
	for {
		if ms := r.man[poll]; len(ms) > 0 && len(ms) >= int(ms[0].Switches) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: poll %d: %d manifests", ErrIncomplete, poll, len(r.man[poll]))
		}
		if _, err := r.pull(ctx, pollList, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	ms := r.man[poll]
	want := map[uint32][2]int{} // list → flows, ports
	for _, m := range ms {
		l := record.List(m.Switch)
		w := want[l]
		w[0] += int(m.Flows)
		w[1] += int(m.Ports)
		want[l] = w
	}
	have := func(l uint32) [2]int {
		var h [2]int
		for _, f := range r.flows[poll] {
			if record.List(f.Switch) == l {
				h[0]++
			}
		}
		for _, p := range r.ports[poll] {
			if record.List(p.Switch) == l {
				h[1]++
			}
		}
		return h
	}
	for l, w := range want {
		for {
			h := have(l)
			if h[0] >= w[0] && h[1] >= w[1] {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%w: poll %d list %d: %d/%d flow and %d/%d port records", ErrIncomplete, poll, l, h[0], w[0], h[1], w[1])
			}
			wait := 50 * time.Millisecond
			if h[0] < w[0] {
				if _, err := r.pull(ctx, listID{record.FlowStore, l}, wait); err != nil {
					return nil, err
				}
			}
			if h[1] < w[1] {
				if _, err := r.pull(ctx, listID{record.PortStore, l}, wait); err != nil {
					return nil, err
				}
			}
		}
	}
	t := &Telemetry{Poll: poll, Manifests: ms, Flows: r.flows[poll], Ports: r.ports[poll], Meters: map[string]uint64{},
		Victim: ms[0].Victim, At: ms[0].At}
	delete(r.man, poll)
	delete(r.flows, poll)
	delete(r.ports, poll)
	if err := r.lookupMeters(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// lookupMeters looks up meter[in][out] of every switch D for the ingress
// ports in of D that face a paused port of the poll (and every egress out
// of D with a port record in the same epoch).
func (r *Reader) lookupMeters(ctx context.Context, t *Telemetry) error {
	type se struct {
		sw    uint16
		epoch uint16
	}
	outs := map[se][]uint8{}
	for _, p := range t.Ports {
		outs[se{p.Switch, p.Epoch}] = append(outs[se{p.Switch, p.Epoch}], p.Port)
	}
	var keys []string
	seen := map[string]bool{}
	pausedPort := map[[2]uint16]bool{}
	for _, p := range t.Ports {
		if p.Paused > 0 {
			pausedPort[[2]uint16{p.Switch, uint16(p.Port)}] = true
		}
	}
	add := func(sw, epoch uint16, in, out uint8) {
		k := string(record.MeterKey(t.Poll, sw, epoch, in, out))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, p := range t.Ports {
		// A switch that paused an upstream port showing no paused
		// packet (or not polled): its meters from that ingress.
		if p.PauseTx > 0 && p.PeerKind == record.PeerSwitch && !pausedPort[[2]uint16{p.Peer, uint16(p.PeerPort)}] {
			for _, out := range outs[se{p.Switch, p.Epoch}] {
				if out != p.Port {
					add(p.Switch, p.Epoch, p.Port, out)
				}
			}
		}
		if p.Paused == 0 || p.PeerKind != record.PeerSwitch {
			continue
		}
		for _, out := range outs[se{p.Peer, p.Epoch}] {
			if out == p.PeerPort {
				continue
			}
			add(p.Peer, p.Epoch, p.PeerPort, out)
		}
	}
	for i := 0; i < len(keys); i += client.MaxBatch {
		batch := keys[i:min(len(keys), i+client.MaxBatch)]
		text := make([]string, len(batch))
		for j, k := range batch {
			text[j] = "0x" + hex.EncodeToString([]byte(k))
		}
		res, err := r.c.KeyWriteBatch(ctx, record.MeterStore, text, client.KeyWriteOptions{})
		if err != nil {
			return fmt.Errorf("diagnose: meter lookups: %w", err)
		}
		for j, x := range res {
			t.Lookups++
			if x.Status != client.StatusFound {
				t.MetersMissing++
				continue
			}
			v, err := record.MeterValue(x.Value)
			if err != nil {
				t.MetersMissing++
				continue
			}
			t.Meters[batch[j]] = v
		}
	}
	return nil
}

// Meter returns meter[in][out] of switch sw in epoch, 0 when absent.
func (t *Telemetry) Meter(sw, epoch uint16, in, out uint8) uint64 {
	return t.Meters[string(record.MeterKey(t.Poll, sw, epoch, in, out))]
}
