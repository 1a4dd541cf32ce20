package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// SketchEstimate is a key's point estimate in a Sketch-Merge epoch.
type SketchEstimate struct {
	Key      string `json:"key"`
	Epoch    uint32 `json:"epoch"`
	Estimate int64  `json:"estimate"` // count-sketch estimates may be negative
}

// SketchEpoch is one epoch a Sketch-Merge store's copies hold.
type SketchEpoch struct {
	Epoch uint32 `json:"epoch"`
	State string `json:"state"` // closed, open (receiving flushes) or prepared (cleared ahead)
}

// SketchEpochs describes a Sketch-Merge store's epochs.
type SketchEpochs struct {
	Store   string        `json:"store"`
	Kind    string        `json:"kind"`
	Rows    int           `json:"rows"`
	Columns uint64        `json:"columns"`
	Latest  *uint32       `json:"latest,omitempty"` // the newest closed epoch
	Epochs  []SketchEpoch `json:"epochs"`
}

// SketchNorms are an epoch's stream norms as the sketch estimates them.
type SketchNorms struct {
	Epoch uint32  `json:"epoch"`
	L1    float64 `json:"l1"`
	L2    float64 `json:"l2"`
}

// SketchCounters is a whole epoch's counters, row by row.
type SketchCounters struct {
	Epoch    uint32    `json:"epoch"`
	Kind     string    `json:"kind"`
	Rows     int       `json:"rows"`
	Columns  uint64    `json:"columns"`
	Counters [][]int64 `json:"counters"`
}

// Add adds o's counters to s: the sketch of both streams (sketches are
// linear), as when merging the sketches of several collectors.
// Both must have the shape they state (Rows rows of Columns counters, as a
// collector sends them); a pair that does not is an error and s is left
// unchanged.
func (s *SketchCounters) Add(o SketchCounters) error {
	if s.Kind != o.Kind || s.Rows != o.Rows || s.Columns != o.Columns {
		return fmt.Errorf("sketch geometries differ: %s %d×%d and %s %d×%d", s.Kind, s.Rows, s.Columns, o.Kind, o.Rows, o.Columns)
	}
	if err := s.checkShape(); err != nil {
		return err
	}
	if err := o.checkShape(); err != nil {
		return err
	}
	for r := range s.Counters {
		for c, v := range o.Counters[r] {
			s.Counters[r][c] += v
		}
	}
	return nil
}

// checkShape reports counters that are not Rows rows of Columns each.
func (s *SketchCounters) checkShape() error {
	if len(s.Counters) != s.Rows {
		return fmt.Errorf("sketch of epoch %d: %d rows of counters, its geometry says %d", s.Epoch, len(s.Counters), s.Rows)
	}
	for r, row := range s.Counters {
		if uint64(len(row)) != s.Columns {
			return fmt.Errorf("sketch of epoch %d: row %d has %d counters, its geometry says %d", s.Epoch, r, len(row), s.Columns)
		}
	}
	return nil
}

// sketchQuery builds the query string of a Sketch-Merge read; epoch < 0
// reads the newest closed epoch.
func sketchQuery(q url.Values, epoch int64) url.Values {
	if epoch >= 0 {
		q.Set("epoch", strconv.FormatInt(epoch, 10))
	}
	return q
}

// SketchEstimate returns key's point estimate in epoch (-1: the newest
// closed epoch) of a Sketch-Merge store.
func (c *Client) SketchEstimate(ctx context.Context, store, key string, epoch int64) (SketchEstimate, error) {
	var out SketchEstimate
	q := sketchQuery(url.Values{"key": {key}}, epoch)
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/sketchmerge?"+q.Encode()), nil, &out)
	return out, err
}

// SketchTopK returns the k candidates with the largest estimates in epoch
// (-1: the newest closed one), largest first.
func (c *Client) SketchTopK(ctx context.Context, store string, candidates []string, k int, epoch int64) ([]SketchEstimate, error) {
	if len(candidates) == 0 {
		return nil, errors.New("topk: no candidate keys")
	}
	if len(candidates) > MaxBatch {
		return nil, fmt.Errorf("topk: %d candidates, at most %d in one request", len(candidates), MaxBatch)
	}
	q := sketchQuery(url.Values{"k": {strconv.Itoa(k)}}, epoch)
	var out struct {
		Hitters []SketchEstimate `json:"hitters"`
	}
	err := c.do(ctx, http.MethodPost, c.storePath(store, "/sketchmerge:topk?"+q.Encode()), batchBody{Keys: candidates}, &out)
	return out.Hitters, err
}

// SketchNorms returns the L1 and L2 norms of epoch (-1: the newest closed).
func (c *Client) SketchNorms(ctx context.Context, store string, epoch int64) (SketchNorms, error) {
	var out SketchNorms
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/sketchmerge/norms?"+sketchQuery(url.Values{}, epoch).Encode()), nil, &out)
	return out, err
}

// SketchEpochs lists the epochs a Sketch-Merge store holds.
func (c *Client) SketchEpochs(ctx context.Context, store string) (SketchEpochs, error) {
	var out SketchEpochs
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/sketchmerge/epochs"), nil, &out)
	return out, err
}

// SketchCounters returns every counter of epoch (-1: the newest closed).
func (c *Client) SketchCounters(ctx context.Context, store string, epoch int64) (SketchCounters, error) {
	var out SketchCounters
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/sketchmerge/counters?"+sketchQuery(url.Values{}, epoch).Encode()), nil, &out)
	return out, err
}
