package snapshot

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dta-go/dta/internal/store"
)

// retain decides which epochs stay queryable and deletes the files no kept
// epoch needs: the newest History epochs, less those older than
// HistoryMaxAge and, oldest first, those whose files exceed HistoryMaxBytes
// (never the newest).
func (d *Durable) retain(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.epochs) == 0 {
		d.kept = nil
		d.publish(nil)
		return
	}
	kept := slices.Clone(d.epochs[max(0, len(d.epochs)-d.cfg.History):])
	if age := d.cfg.HistoryMaxAge; age > 0 {
		kept = slices.DeleteFunc(kept[:len(kept)-1], func(e Epoch) bool { return now.Sub(e.Time) > age })
		kept = append(kept, d.epochs[len(d.epochs)-1])
	}
	needed := d.needed(kept)
	for d.cfg.HistoryMaxBytes > 0 && len(kept) > 1 && d.bytesOf(needed) > d.cfg.HistoryMaxBytes {
		kept = kept[1:]
		needed = d.needed(kept)
	}
	var keep []Epoch
	for _, e := range d.epochs {
		if needed[e.Epoch] {
			keep = append(keep, e)
			continue
		}
		if err := os.Remove(e.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			d.logger.Warn("cannot delete an old checkpoint file", "file", e.path, "err", err)
			keep = append(keep, e)
		}
	}
	d.epochs = keep
	d.kept = kept
	d.publish(needed)
}

func (d *Durable) publish(needed map[uint64]bool) {
	var bytes, files uint64
	for _, e := range d.epochs {
		if needed[e.Epoch] {
			bytes += uint64(e.Bytes)
			files++
		}
	}
	d.stats.DiskBytes.Store(bytes)
	d.stats.Files.Store(files)
	d.stats.Epochs.Store(uint64(len(d.kept)))
}

// needed is the set of epochs whose files the kept epochs' chains use.
func (d *Durable) needed(kept []Epoch) map[uint64]bool {
	out := map[uint64]bool{}
	for _, e := range kept {
		for _, c := range d.chain(e.Epoch) {
			out[c.Epoch] = true
		}
	}
	return out
}

// bytesOf is the bytes of the files of the epochs in m. d.mu is held.
func (d *Durable) bytesOf(m map[uint64]bool) uint64 {
	var n uint64
	for _, e := range d.epochs {
		if m[e.Epoch] {
			n += uint64(e.Bytes)
		}
	}
	return n
}

// Epochs returns the queryable epochs, oldest first.
func (d *Durable) Epochs() []Epoch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.kept)
}

// Stats returns the counters.
func (d *Durable) Stats() *Stats { return &d.stats }

// Config returns the configuration in force.
func (d *Durable) Config() Config { return d.cfg }

// Errors of Resolve.
var (
	// ErrNoEpoch is wrapped when an epoch asked for is not kept.
	ErrNoEpoch = errors.New("at")
	// ErrBadAt is wrapped when "at" is neither an epoch nor a time.
	ErrBadAt = errors.New("at")
)

// Resolve turns what a query gives as "at" into a kept epoch: an epoch
// number, a time (RFC 3339, or a clock time HH:MM or HH:MM:SS of today in
// loc) naming the newest epoch taken at or before it.
func (d *Durable) Resolve(at string, now time.Time, loc *time.Location) (Epoch, error) {
	kept := d.Epochs()
	if n, err := strconv.ParseUint(at, 10, 64); err == nil {
		for _, e := range kept {
			if e.Epoch == n {
				return e, nil
			}
		}
		return Epoch{}, fmt.Errorf("%w: epoch %d is not kept (GET /v1/epochs lists those that are)", ErrNoEpoch, n)
	}
	t, err := ParseAt(at, now, loc)
	if err != nil {
		return Epoch{}, err
	}
	for i := len(kept) - 1; i >= 0; i-- {
		if !kept[i].Time.After(t) {
			return kept[i], nil
		}
	}
	return Epoch{}, fmt.Errorf("%w: no kept epoch was taken at or before %s", ErrNoEpoch, t.Format(time.RFC3339))
}

// ParseAt parses a time given as "at": RFC 3339, or HH:MM[:SS] of the day
// of now in loc.
func ParseAt(at string, now time.Time, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		return t, nil
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if c, err := time.ParseInLocation(layout, at, loc); err == nil {
			y, m, dd := now.In(loc).Date()
			return time.Date(y, m, dd, c.Hour(), c.Minute(), c.Second(), 0, loc), nil
		}
	}
	if at = strings.TrimSpace(at); len(at) > 64 {
		return time.Time{}, fmt.Errorf("%w: %q... (%d bytes) is not an epoch number, an RFC 3339 time or a clock time HH:MM[:SS]", ErrBadAt, at[:64], len(at))
	}
	return time.Time{}, fmt.Errorf("%w: %q is not an epoch number, an RFC 3339 time or a clock time HH:MM[:SS]", ErrBadAt, at)
}

// openEpoch is an epoch's stores, read back into memory for queries.
type openEpoch struct {
	cat  *store.Catalog
	refs int
	used uint64
	err  error
	done chan struct{} // closed when cat (or err) is ready
}

// OpenEpoch returns the stores as they were at epoch e, read-only by
// convention (queries only), and a function to call when done with them.
// At most MaxOpenEpochs epochs stay in memory; the least recently used one
// not in use is dropped for another.
func (d *Durable) OpenEpoch(e Epoch) (*store.Catalog, func(), error) {
	d.mu.Lock()
	o := d.open[e.Epoch]
	if o == nil {
		chain := d.chain(e.Epoch)
		if chain == nil || !slices.ContainsFunc(d.kept, func(k Epoch) bool { return k.Epoch == e.Epoch }) {
			d.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: epoch %d", ErrNoEpoch, e.Epoch)
		}
		o = &openEpoch{done: make(chan struct{})}
		d.open[e.Epoch] = o
		d.evict()
		go d.load(o, e, chain)
	}
	o.refs++
	d.tick++
	o.used = d.tick
	d.mu.Unlock()
	<-o.done
	release := func() {
		d.mu.Lock()
		o.refs--
		d.evict()
		d.mu.Unlock()
	}
	if o.err != nil {
		release()
		d.mu.Lock()
		if d.open[e.Epoch] == o {
			delete(d.open, e.Epoch)
			d.stats.OpenEpochs.Add(-1)
		}
		d.mu.Unlock()
		return nil, nil, o.err
	}
	return o.cat, release, nil
}

// load reads an epoch into new regions.
func (d *Durable) load(o *openEpoch, e Epoch, chain []Epoch) {
	defer close(o.done)
	d.stats.OpenEpochs.Add(1)
	cat, err := store.Open(e.stores, d.cfg.Region, nil)
	if err != nil {
		o.err = fmt.Errorf("snapshot: open epoch %d: %w", e.Epoch, err)
		return
	}
	if _, err := d.apply(cat, chain); err != nil {
		cat.Close()
		o.err = fmt.Errorf("snapshot: open epoch %d: %w", e.Epoch, err)
		return
	}
	o.cat = cat
}

// evict drops loaded epochs not in use beyond MaxOpenEpochs, least recently
// used first. d.mu is held.
func (d *Durable) evict() {
	for len(d.open) > d.cfg.MaxOpenEpochs {
		var victim uint64
		var best *openEpoch
		for k, o := range d.open {
			select {
			case <-o.done:
			default:
				continue // still loading
			}
			if o.refs == 0 && (best == nil || o.used < best.used) {
				victim, best = k, o
			}
		}
		if best == nil {
			return
		}
		delete(d.open, victim)
		d.stats.OpenEpochs.Add(-1)
		if best.cat != nil {
			best.cat.Close()
		}
	}
}

// Close stops tracking, drops the epochs held for queries and unlocks the
// data directory. It writes nothing: call Checkpoint first for a clean stop.
func (d *Durable) Close() error {
	d.ckMu.Lock()
	for _, t := range d.trackers {
		t.Stop()
	}
	d.trackers = nil
	d.ckMu.Unlock()
	d.mu.Lock()
	for k, o := range d.open {
		<-o.done
		if o.cat != nil {
			o.cat.Close()
		}
		delete(d.open, k)
	}
	d.mu.Unlock()
	if d.lock != nil {
		d.lock.Close() // releases the flock
		d.lock = nil
	}
	return nil
}
