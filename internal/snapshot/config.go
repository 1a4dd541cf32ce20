package snapshot

import (
	"errors"
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/region"
)

// Config configures durable stores.
type Config struct {
	// Dir is the data directory. It is created if missing and locked while
	// the collector runs (a second collector on it fails to start).
	Dir string
	// Interval is how often a checkpoint is written (default 10 s). A crash
	// loses at most the writes of the last Interval plus the time a
	// checkpoint takes.
	Interval time.Duration
	// History is how many checkpoints are kept as queryable epochs (≥ 1,
	// default 1: only the newest, for restarts).
	History int
	// HistoryMaxAge drops epochs older than this, but never the newest (0:
	// no age limit).
	HistoryMaxAge time.Duration
	// HistoryMaxBytes drops the oldest epochs until the files kept take at
	// most this many bytes, but never the newest epoch's files (0: no limit).
	HistoryMaxBytes uint64
	// BlockSize is the granularity of change tracking: a delta checkpoint
	// copies each 64 KiB block (the default) written since the last one.
	BlockSize uint64
	// MaxChain is the most deltas after a full checkpoint before the next
	// full one (default 16); a full one is also written when the deltas
	// since the last full one add up to its size.
	MaxChain int
	// Region maps the stores of epochs opened for history queries.
	Region region.Config
	// MaxOpenEpochs bounds the epochs held in memory for history queries at
	// once (default 2); each takes the memory of all its stores.
	MaxOpenEpochs int
}

// DefaultConfig returns the defaults (Dir empty: durability off).
func DefaultConfig() Config {
	rc := region.DefaultConfig()
	rc.Prefault = false
	return Config{
		Interval:      10 * time.Second,
		History:       1,
		BlockSize:     64 << 10,
		MaxChain:      16,
		Region:        rc,
		MaxOpenEpochs: 2,
	}
}

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("data_dir: empty")
	case c.Interval < 10*time.Millisecond || c.Interval > 24*time.Hour:
		return fmt.Errorf("checkpoint_interval: %v out of range [10ms, 24h]", c.Interval)
	case c.History < 1 || c.History > 1<<20:
		return fmt.Errorf("history: %d out of range [1, 1048576]", c.History)
	case c.HistoryMaxAge < 0:
		return fmt.Errorf("history_max_age: %v is negative", c.HistoryMaxAge)
	case c.BlockSize < region.MinTrackBlock || c.BlockSize > region.MaxTrackBlock || c.BlockSize&(c.BlockSize-1) != 0:
		return fmt.Errorf("block size: %d, want a power of two in [%d, %d]", c.BlockSize, region.MinTrackBlock, region.MaxTrackBlock)
	case c.MaxChain < 0 || c.MaxChain > 1<<16:
		return fmt.Errorf("max chain: %d out of range [0, 65536]", c.MaxChain)
	case c.MaxOpenEpochs < 1 || c.MaxOpenEpochs > 64:
		return fmt.Errorf("max open epochs: %d out of range [1, 64]", c.MaxOpenEpochs)
	}
	return nil
}
