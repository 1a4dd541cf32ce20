package config

import (
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/snapshot"
	"github.com/dta-go/dta/internal/store"
)

// CollectorDurability keeps the collector's stores on disk (inline in
// collector:). Durability is off while DataDir is empty.
type CollectorDurability struct {
	// DataDir is where checkpoints are written and restored from.
	DataDir string `yaml:"data_dir"`
	// CheckpointInterval is how often a checkpoint is written: a crash
	// loses at most the writes of about this long.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// History is how many checkpoints stay queryable as epochs (≥ 1).
	History int `yaml:"history"`
	// HistoryMaxAge drops epochs older than this (0: none), never the newest.
	HistoryMaxAge time.Duration `yaml:"history_max_age"`
	// HistoryMaxBytes bounds the checkpoint files kept (0: no bound), never
	// dropping the newest epoch.
	HistoryMaxBytes store.ByteSize `yaml:"history_max_bytes"`
}

// DurabilityConfig is the durable stores' Config, or nil when data_dir is
// not set.
func (f *File) DurabilityConfig() *snapshot.Config {
	d := f.Collector.CollectorDurability
	if d.DataDir == "" {
		return nil
	}
	c := snapshot.DefaultConfig()
	c.Dir = d.DataDir
	c.Interval = d.CheckpointInterval
	c.History = d.History
	c.HistoryMaxAge = d.HistoryMaxAge
	c.HistoryMaxBytes = uint64(d.HistoryMaxBytes)
	hp := f.RegionConfig().HugePages
	c.Region.HugePages = hp
	return &c
}

// validateDurability checks the durability keys (whether or not data_dir
// is set, so that a bad value is caught before it is used).
func (f *File) validateDurability() error {
	d := f.Collector.CollectorDurability
	c := snapshot.DefaultConfig()
	c.Dir = "-"
	if d.DataDir != "" {
		c.Dir = d.DataDir
	}
	c.Interval, c.History, c.HistoryMaxAge, c.HistoryMaxBytes = d.CheckpointInterval, d.History, d.HistoryMaxAge, uint64(d.HistoryMaxBytes)
	if err := c.Validate(); err != nil {
		return fmt.Errorf("collector.%w", err)
	}
	return nil
}
