package sim

import (
	"encoding/json"
	"math"
)

// Counts sorts the answers of a set of queries.
type Counts struct {
	Queries  uint64 `json:"queries"`
	Correct  uint64 `json:"correct"`  // found, and the key's own value (path)
	Empty    uint64 `json:"empty"`    // no answer
	Conflict uint64 `json:"conflict"` // copies that disagree (no answer either)
	Wrong    uint64 `json:"wrong"`    // found, but another key's value
}

func (c *Counts) add(o *Counts) {
	c.Queries += o.Queries
	c.Correct += o.Correct
	c.Empty += o.Empty
	c.Conflict += o.Conflict
	c.Wrong += o.Wrong
}

// Success is the fraction of queries answered correctly (0 without queries).
func (c Counts) Success() float64 { return c.rate(c.Correct) }

// WrongRate is the fraction of queries answered with a wrong value.
func (c Counts) WrongRate() float64 { return c.rate(c.Wrong) }

// NoAnswerRate is the fraction of queries without an answer: empty or
// conflicting copies.
func (c Counts) NoAnswerRate() float64 { return c.rate(c.Empty + c.Conflict) }

func (c Counts) rate(k uint64) float64 {
	if c.Queries == 0 {
		return 0
	}
	return float64(k) / float64(c.Queries)
}

// SuccessError is the standard error of Success, √(p(1−p)/n): the half-width
// of a 95 % interval is about twice it. Windows queried exhaustively have a
// finite-population error that is smaller, so it is conservative there.
func (c Counts) SuccessError() float64 {
	if c.Queries == 0 {
		return 0
	}
	p := c.Success()
	return math.Sqrt(p * (1 - p) / float64(c.Queries))
}

// Theory is what package analysis predicts for a bin: the paper's bounds at
// the bin's mean load factor.
type Theory struct {
	NoAnswer float64 `json:"no_answer"` // bound on empty or conflicting answers
	Wrong    float64 `json:"wrong"`     // bound on wrong answers
	Success  float64 `json:"success"`   // 1 − NoAnswer − Wrong, a lower bound
}

// Bin is the result of the queries of one age window.
type Bin struct {
	Lo    uint64 `json:"age_lo"` // ages [Lo, Hi) were queried
	Hi    uint64 `json:"age_hi"`
	Probe bool   `json:"probe"` // the window of a Config.Probes entry, not an equal-width bin
	// MeanAge is the mean age of the keys queried, and Alpha it divided by
	// the slots (chunks): the load factor of the paper's bounds.
	MeanAge float64 `json:"mean_age"`
	Alpha   float64 `json:"alpha"`
	Counts
	// Theory is the paper's bounds averaged over the window's ages; nil
	// where the paper has none (IfEmpty).
	Theory *Theory `json:"theory,omitempty"`
}

// Result is the outcome of one run.
type Result struct {
	Config Config `json:"config"`
	Bins   []Bin  `json:"bins"`
	// All sums the equal-width bins: the average over every key written
	// (each bin has the same number of queries and keys, up to one).
	All       Counts  `json:"all"`
	AllTheory *Theory `json:"all_theory,omitempty"` // the mean of the bins' Theory

	RegionBytes uint64 `json:"region_bytes"`
	Backing     string `json:"backing"` // the region's page backing (region.Backing)
	// RSS and PeakRSS are the process's resident memory at the end of the run
	// and its peak so far (VmRSS, VmHWM); 0 where /proc is missing.
	RSS     uint64 `json:"rss_bytes"`
	PeakRSS uint64 `json:"peak_rss_bytes"`
	// Skipped counts the copies an IfEmpty run did not write because their
	// slot was taken, as seen by the sinks.
	Skipped      uint64  `json:"skipped_copies,omitempty"`
	WriteSeconds float64 `json:"write_seconds"`
	QuerySeconds float64 `json:"query_seconds"`
}

// Oldest returns the equal-width bin of the oldest keys.
func (r *Result) Oldest() *Bin {
	for i := len(r.Bins) - 1; i >= 0; i-- {
		if !r.Bins[i].Probe {
			return &r.Bins[i]
		}
	}
	return nil
}

// Probe returns the bin of the i-th entry of Config.Probes.
func (r *Result) Probe(i int) *Bin { return &r.Bins[r.Config.Bins+i] }

// Younger returns the counts of the equal-width bins whose ages are all below
// age: the average over the keys with fewer than age later keys, to bin
// resolution.
func (r *Result) Younger(age uint64) Counts {
	var c Counts
	for i := range r.Bins {
		if b := &r.Bins[i]; !b.Probe && b.Hi <= age {
			c.add(&b.Counts)
		}
	}
	return c
}

// MarshalJSON writes the enumerations of c by name.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		Primitive string `json:"primitive"`
		Hash      string `json:"hash"`
		HugePages string `json:"huge_pages"`
		plain
	}{c.Primitive.String(), c.hash().String(), c.HugePages.String(), plain(c)})
}
