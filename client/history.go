package client

import (
	"context"
	"time"
)

// Epoch is a past checkpoint a collector with durable stores keeps
// queryable (GET /v1/epochs).
type Epoch struct {
	Epoch  uint64    `json:"epoch"`
	Time   time.Time `json:"time"`
	Full   bool      `json:"full"`
	Parent uint64    `json:"parent,omitempty"`
	Bytes  int64     `json:"bytes"`
}

// Epochs lists the epochs the collector keeps, oldest first. durable is
// false when the collector keeps its stores in memory only.
func (c *Client) Epochs(ctx context.Context) (epochs []Epoch, durable bool, err error) {
	var resp struct {
		Durable bool    `json:"durable"`
		Epochs  []Epoch `json:"epochs"`
	}
	if err := c.do(ctx, "GET", c.base+"/v1/epochs", nil, &resp); err != nil {
		return nil, false, err
	}
	return resp.Epochs, resp.Durable, nil
}

// At returns a client whose queries read the stores as they were at an
// epoch: at is an epoch number, an RFC 3339 time, or a clock time HH:MM[:SS]
// of today on the collector (the newest epoch taken at or before it). ""
// reads the live stores. Resets and waits are refused with at set.
func (c *Client) At(at string) *Client {
	cp := *c
	cp.at = at
	return &cp
}
