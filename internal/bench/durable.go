package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	snap "github.com/dta-go/dta/internal/snapshot"
	"github.com/dta-go/dta/internal/store"
)

// durableCollector is DTA's collector with durable stores: a checkpoint
// every Config.CheckpointInterval, on the run's CPU like everything else in
// the process.
type durableCollector struct {
	*dtaCollector
	d   *snap.Durable
	dir string
	ck  chan error
}

func (b *bench) newDurableCollector(m Mode, cat *store.Catalog) (*durableCollector, error) {
	if err := os.MkdirAll(b.cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: data dir: %w", err)
	}
	dir, err := os.MkdirTemp(b.cfg.DataDir, "bench-run-")
	if err != nil {
		return nil, fmt.Errorf("bench: data dir: %w", err)
	}
	sc := snap.DefaultConfig()
	sc.Dir = dir
	sc.Interval = b.cfg.CheckpointInterval
	if sc.Interval == 0 {
		sc.Interval = snap.DefaultConfig().Interval
	}
	d, err := snap.Open(cat, sc, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: %w", err)
	}
	c, err := newDTACollector(b.udpConfig(m), cat, cat)
	if err != nil {
		d.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &durableCollector{dtaCollector: c, d: d, dir: dir, ck: make(chan error, 1)}, nil
}

func (c *durableCollector) run(ctx context.Context) error {
	go func() { c.ck <- c.d.Run(ctx) }()
	err := c.dtaCollector.run(ctx)
	<-c.ck
	return err
}

func (c *durableCollector) release() error {
	err := c.dtaCollector.release()
	c.d.Close()
	os.RemoveAll(c.dir)
	return err
}

// result adds the checkpoints of the run to res.
func (c *durableCollector) result(res *Result) {
	st := c.d.Stats()
	res.Checkpoints = st.Checkpoints.Load()
	res.CheckpointBytes = st.BytesWritten.Load()
	res.CheckpointLastS = time.Duration(st.LastDuration.Load()).Seconds()
}
