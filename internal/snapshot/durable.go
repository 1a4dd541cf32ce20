package snapshot

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// Stats counts what the durable stores did.
type Stats struct {
	Checkpoints        atomic.Uint64 // written
	CheckpointFailures atomic.Uint64
	FullCheckpoints    atomic.Uint64
	LastTime           atomic.Int64  // Unix ns when the newest checkpoint began (at Open: the restored one's, or Open's)
	LastDuration       atomic.Int64  // ns the newest checkpoint took
	LastBytes          atomic.Uint64 // bytes of the newest checkpoint file
	BytesWritten       atomic.Uint64 // bytes of every checkpoint file written
	DiskBytes          atomic.Uint64 // bytes of all checkpoint files kept
	Files              atomic.Uint64 // checkpoint files kept
	Epochs             atomic.Uint64 // epochs queryable
	CorruptFiles       atomic.Uint64 // files found corrupt (renamed *.corrupt)
	Restored           atomic.Uint64 // epoch restored at start (0: none)
	RestoreDuration    atomic.Int64  // ns the restore took
	OpenEpochs         atomic.Int64  // epochs held in memory for queries
}

// Epoch is a kept checkpoint.
type Epoch struct {
	Epoch  uint64
	Parent uint64 // 0 for a full checkpoint
	Base   uint64
	Time   time.Time
	Bytes  int64 // of its own file
	path   string
	stores []store.Descriptor
}

// Full reports whether the epoch's file holds every byte.
func (e *Epoch) Full() bool { return e.Parent == 0 }

// Durable keeps a catalogue's stores in a data directory: it restores them at
// Open, writes checkpoints (Run, Checkpoint), and serves old epochs (Open
// Epoch). Its methods are safe for concurrent use.
type Durable struct {
	cfg    Config
	cat    *store.Catalog
	logger *slog.Logger
	lock   *os.File

	ckMu      sync.Mutex // one checkpoint at a time
	trackers  []*region.Tracker
	parent    uint64 // the epoch the stores' state continues from; 0: none (next is full)
	forceFull bool
	chainLen  int   // deltas since the last full checkpoint
	chainB    int64 // their bytes
	baseB     int64 // the last full checkpoint's bytes
	buf       []byte

	mu     sync.Mutex
	epochs []Epoch // good files in the directory, by epoch
	kept   []Epoch // the queryable epochs, oldest first
	next   uint64  // the next epoch number
	open   map[uint64]*openEpoch
	tick   uint64 // LRU clock

	stats Stats
}

// Open locks cfg.Dir, restores the newest good checkpoint into cat (whose
// stores must be new and unwritten) and starts tracking cat's writes. A
// checkpoint whose store geometry differs from cat's is an error that names
// the store: it is never loaded. logger may be nil.
func Open(cat *store.Catalog, cfg Config, logger *slog.Logger) (*Durable, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: data directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot: data directory: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("snapshot: data directory %s is in use by another process (%w)", cfg.Dir, err)
	}
	d := &Durable{cfg: cfg, cat: cat, logger: logger, lock: lock, open: map[uint64]*openEpoch{}}
	if err := d.scan(); err != nil {
		d.Close()
		return nil, err
	}
	start := time.Now()
	if err := d.restore(); err != nil {
		d.Close()
		return nil, err
	}
	d.stats.RestoreDuration.Store(int64(time.Since(start)))
	d.stats.LastTime.Store(start.UnixNano()) // nothing written since start is on disk yet
	if e, ok := d.epoch(d.parent); ok {
		d.stats.LastTime.Store(e.Time.UnixNano())
	}
	for _, s := range cat.Stores() {
		t, err := s.Region.Track(cfg.BlockSize)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("snapshot: store %s: %w", s.Name, err)
		}
		d.trackers = append(d.trackers, t)
	}
	d.retain(time.Now())
	return d, nil
}

// scan reads the header of every checkpoint file in the directory and drops
// temporary files a crash left behind.
func (d *Durable) scan() error {
	ents, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	d.next = 1
	for _, ent := range ents {
		name := ent.Name()
		path := filepath.Join(d.cfg.Dir, name)
		if filepath.Ext(name) == tempExt {
			d.logger.Warn("removing an unfinished checkpoint file (the process stopped while writing it)", "file", path)
			os.Remove(path)
			continue
		}
		e, ok := parseFileName(name)
		if !ok {
			continue
		}
		d.next = max(d.next, e+1)
		rd, f, err := readHeader(path)
		if err != nil {
			d.quarantine(path, err)
			continue
		}
		f.Close()
		if rd.Header.Epoch != e {
			d.quarantine(path, fmt.Errorf("%w: %s holds epoch %d", ErrCorrupt, path, rd.Header.Epoch))
			continue
		}
		st, _ := os.Stat(path)
		h := rd.Header
		d.epochs = append(d.epochs, Epoch{Epoch: e, Parent: h.Parent, Base: h.Base, Time: h.Time, Bytes: st.Size(), path: path, stores: h.Stores})
	}
	for _, ent := range ents {
		if e, ok := parseCorruptName(ent.Name()); ok {
			d.next = max(d.next, e+1)
		}
	}
	slices.SortFunc(d.epochs, func(a, b Epoch) int { return cmpU64(a.Epoch, b.Epoch) })
	return nil
}

func parseCorruptName(name string) (uint64, bool) {
	s, ok := cutSuffix(name, corruptSuffix)
	if !ok {
		return 0, false
	}
	return parseFileName(s)
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// quarantine renames a corrupt file aside (kept for inspection, never read
// again) and logs why.
func (d *Durable) quarantine(path string, cause error) {
	d.stats.CorruptFiles.Add(1)
	d.logger.Error("checkpoint file is corrupt; using an older checkpoint", "file", path, "err", cause)
	if err := os.Rename(path, path+corruptSuffix); err != nil {
		d.logger.Error("cannot rename the corrupt checkpoint file aside", "file", path, "err", err)
	}
	d.epochs = slices.DeleteFunc(d.epochs, func(e Epoch) bool { return e.path == path })
}

// chain returns the epochs to apply, base first, to rebuild epoch e; nil if
// a link is missing.
func (d *Durable) chain(e uint64) []Epoch {
	var out []Epoch
	for e != 0 {
		i, ok := slices.BinarySearchFunc(d.epochs, e, func(x Epoch, t uint64) int { return cmpU64(x.Epoch, t) })
		if !ok {
			return nil
		}
		out = append(out, d.epochs[i])
		e = d.epochs[i].Parent
	}
	slices.Reverse(out)
	return out
}

// checkGeometry compares an epoch's store table with the configured stores.
// A configured store missing from it starts empty (it was added); a store
// it holds that the configuration lacks, or whose geometry changed, is an
// error: loading it would drop or reinterpret its bytes.
func checkGeometry(have []store.Descriptor, cat *store.Catalog, file string) error {
	for _, h := range have {
		s := cat.ByName(h.Name)
		if s == nil {
			return fmt.Errorf("snapshot: %s holds store %q, which the configuration no longer has; "+
				"restore the store in the configuration, or move the data directory aside to start empty", file, h.Name)
		}
		if diff := geometryDiff(h, s.Descriptor); diff != "" {
			return fmt.Errorf("snapshot: store %q changed geometry since %s was written (%s); its bytes would be misread, so it is not loaded: "+
				"restore the old geometry, or move the data directory aside to start empty", h.Name, file, diff)
		}
	}
	return nil
}

// geometryDiff describes how b's layout differs from a's ("" if it does
// not). The id and the default flag do not move bytes.
func geometryDiff(a, b store.Descriptor) string {
	if a.Primitive != b.Primitive {
		return fmt.Sprintf("primitive %v → %v", a.Primitive, b.Primitive)
	}
	a.ID, b.ID, a.Default, b.Default = 0, 0, false, false
	if a == b {
		return ""
	}
	return fmt.Sprintf("%s → %s", geometry(a), geometry(b))
}

// geometry prints a descriptor's layout.
func geometry(d store.Descriptor) string {
	switch d.Primitive {
	case dta.KeyWrite:
		return fmt.Sprintf("%+v", d.KeyWrite)
	case dta.KeyIncrement:
		return fmt.Sprintf("%+v", d.KeyIncrement)
	case dta.Postcard:
		return fmt.Sprintf("%+v", d.Postcard)
	case dta.Append:
		return fmt.Sprintf("%+v", d.Append)
	case dta.SketchMerge:
		return fmt.Sprintf("%+v", d.SketchMerge)
	case dta.TeaTable:
		return fmt.Sprintf("%+v", d.TeaTable)
	}
	return fmt.Sprintf("%+v", d)
}

// storesDiffer reports whether the configured stores are not exactly those
// of the table (one was added): the next checkpoint must then be full.
func storesDiffer(have []store.Descriptor, cat *store.Catalog) bool {
	return len(have) != len(cat.Stores())
}

// restore loads the newest epoch whose chain reads back whole.
func (d *Durable) restore() error {
	for len(d.epochs) > 0 {
		last := d.epochs[len(d.epochs)-1]
		ch := d.chain(last.Epoch)
		if ch == nil {
			d.quarantine(last.path, fmt.Errorf("%w: an older checkpoint it builds on is missing or corrupt", ErrCorrupt))
			continue
		}
		if err := checkGeometry(last.stores, d.cat, last.path); err != nil {
			return err
		}
		bad, err := d.apply(d.cat, ch)
		if err == nil {
			d.parent = last.Epoch
			d.chainLen, d.chainB = len(ch)-1, 0
			d.baseB = ch[0].Bytes
			for _, e := range ch[1:] {
				d.chainB += e.Bytes
			}
			d.forceFull = storesDiffer(last.stores, d.cat)
			d.stats.Restored.Store(last.Epoch)
			d.logger.Info("stores restored", "epoch", last.Epoch, "time", last.Time.Format(time.RFC3339Nano),
				"files", len(ch), "dir", d.cfg.Dir)
			return nil
		}
		if bad == "" {
			return err
		}
		for _, s := range d.cat.Stores() {
			s.Region.Zero()
		}
		d.quarantine(bad, err)
	}
	d.logger.Info("no checkpoint to restore: stores start empty", "dir", d.cfg.Dir)
	return nil
}
