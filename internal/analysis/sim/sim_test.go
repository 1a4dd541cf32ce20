package sim

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// small returns a run of S = 2^16 slots and as many keys (α up to 1), every
// key of 8 equal bins queried once: fast enough for go test -race.
func small(prim dta.Primitive, n int) Config {
	c := DefaultConfig()
	c.Primitive = prim
	c.Slots, c.Keys, c.N = 1<<16, 1<<16, n
	c.Bins, c.PerBin = 8, 1<<13
	c.HugePages = region.HugePagesOff
	return c
}

func run(t *testing.T, c Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), c, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// within fails unless got is within 4.5 standard errors (plus slack for the
// bins' width) of want, a probability over n queries.
func within(t *testing.T, what string, b *Bin, got, want float64) {
	t.Helper()
	sd := math.Sqrt(max(want*(1-want), 1e-4) / float64(b.Queries))
	if math.Abs(got-want) > 4.5*sd+2e-3 {
		t.Errorf("%s at α = %.3f: simulated %.4f, theory %.4f (σ = %.4f, %d queries)", what, b.Alpha, got, want, sd, b.Queries)
	}
}

func TestKeysAreDistinctAndShortChecksumsHaveOnlyTheirLowBits(t *testing.T) {
	for _, b := range []int{1, 4, 8, 16, 31, 32} {
		g, err := newKeyGen(7, b)
		if err != nil {
			t.Fatal(err)
		}
		seen := make(map[[KeyLen]byte]bool)
		lows := make(map[uint32]bool)
		var k [KeyLen]byte
		for i := range uint64(20000) {
			g.key(i, &k)
			if seen[k] {
				t.Fatalf("b = %d: key %d repeats an earlier key", b, i)
			}
			seen[k] = true
			sum := checksum(k[:])
			if b < 32 {
				if high := ^uint32(0) << b; sum&high != high {
					t.Fatalf("b = %d: key %d has checksum %#08x, whose top %d bits are not all set", b, i, sum, 32-b)
				}
			}
			lows[sum&(1<<min(b, 16)-1)] = true
		}
		// Uniform low bits: m·(1 − e^{−n/m}) distinct patterns expected.
		m := float64(uint64(1) << min(b, 16))
		if want := 0.95 * m * -math.Expm1(-20000/m); float64(len(lows)) < want {
			t.Errorf("b = %d: only %d distinct patterns of the low checksum bits; want ≥ %.0f", b, len(lows), want)
		}
	}
}

func TestKeyWriteOneCopyIsLostWithProbabilityOneMinusExpMinusAlpha(t *testing.T) {
	res := run(t, small(dta.KeyWrite, 1))
	for i := range res.Bins {
		b := &res.Bins[i]
		want := -math.Expm1(-b.Alpha)
		within(t, "no answer", b, b.NoAnswerRate(), want)
		within(t, "no answer vs the paper's bound", b, b.NoAnswerRate(), b.Theory.NoAnswer)
		if b.Wrong != 0 {
			t.Errorf("α = %.3f: %d wrong answers with 32-bit checksums", b.Alpha, b.Wrong)
		}
	}
}

func TestKeyWriteSuccessFollowsTheBoundsForEveryN(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		res := run(t, small(dta.KeyWrite, n))
		for i := range res.Bins {
			b := &res.Bins[i]
			within(t, "success", b, b.Success(), 1-analysis.KeyWriteNoAnswer(b.Alpha, n, 32))
		}
		if res.AllTheory == nil || math.Abs(res.All.Success()-res.AllTheory.Success) > 0.01 {
			t.Errorf("N = %d: average success %.4f, theory %+v", n, res.All.Success(), res.AllTheory)
		}
	}
}

func TestShortChecksumsGiveTheWrongAnswersOfTheBound(t *testing.T) {
	// With one copy the bound is exact: the last writer of the slot shares
	// the key's b-bit checksum with probability 2^-b.
	c := small(dta.KeyWrite, 1)
	c.ChecksumBits = 4
	res := run(t, c)
	var wrong uint64
	for i := range res.Bins {
		b := &res.Bins[i]
		within(t, "wrong", b, b.WrongRate(), analysis.KeyWriteWrong(b.Alpha, 1, 4))
		wrong += b.Wrong
	}
	if wrong == 0 {
		t.Error("no wrong answers with 4-bit checksums")
	}
}

func TestPostcardOneChunkIsLostWithProbabilityOneMinusExpMinusAlpha(t *testing.T) {
	c := small(dta.Postcard, 1)
	c.Slots, c.Keys, c.PerBin = 1<<14, 1<<14, 1<<11
	res := run(t, c)
	for i := range res.Bins {
		b := &res.Bins[i]
		within(t, "no output", b, b.NoAnswerRate(), -math.Expm1(-b.Alpha))
		if b.Wrong != 0 {
			t.Errorf("α = %.3f: %d wrong paths with |V| = 2^20", b.Alpha, b.Wrong)
		}
	}
	c.N = 2
	res = run(t, c)
	for i := range res.Bins {
		b := &res.Bins[i]
		within(t, "success", b, b.Success(), b.Theory.Success)
	}
}

func TestRunsAreDeterministicWhateverTheWorkers(t *testing.T) {
	for _, prim := range []dta.Primitive{dta.KeyWrite, dta.Postcard} {
		c := small(prim, 2)
		c.Slots, c.Keys = 1<<12, 3<<11 // α up to 1.5
		c.PerBin = 500                 // sampled, not exhaustive
		c.Probes = []Probe{{Age: 1000, HalfWidth: 100}, {Age: c.Keys - 1, HalfWidth: 50}}
		c.Workers = 1
		one := run(t, c)
		c.Workers = 3
		three := run(t, c)
		if a, b := mustJSON(t, one.Bins), mustJSON(t, three.Bins); a != b {
			t.Errorf("%v: 1 worker and 3 workers differ:\n%s\n%s", prim, a, b)
		}
		c.Seed++
		other := run(t, c)
		if a, b := mustJSON(t, one.Bins), mustJSON(t, other.Bins); a == b {
			t.Errorf("%v: seeds %d and %d give the same bins", prim, c.Seed-1, c.Seed)
		}
	}
}

func TestIfEmptyWritesLaterCopiesOnlyIntoEmptySlots(t *testing.T) {
	c := small(dta.KeyWrite, 1)
	plain := run(t, c)
	c.IfEmpty = true
	cas := run(t, c)
	for i := range plain.Bins {
		if plain.Bins[i].Counts != cas.Bins[i].Counts {
			t.Errorf("with N = 1 if-empty changes bin %d: %+v vs %+v", i, plain.Bins[i].Counts, cas.Bins[i].Counts)
		}
	}
	if cas.Skipped != 0 {
		t.Errorf("N = 1 skipped %d copies", cas.Skipped)
	}

	c.N = 2
	res := run(t, c)
	if res.Skipped == 0 {
		t.Error("N = 2 at α up to 1 skipped no copy")
	}
	if res.AllTheory != nil {
		t.Error("if-empty runs have a theory attached")
	}
	// A key written into an almost empty store keeps both copies.
	c.Keys = 1 << 10
	if res := run(t, c); res.All.Success() != 1 || res.Skipped > 20 {
		t.Errorf("α ≤ 1/64: success %.4f, %d copies skipped", res.All.Success(), res.Skipped)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no keys", func(c *Config) { c.Keys = 0 }, "keys"},
		{"a probe age beyond the keys", func(c *Config) { c.Probes = []Probe{{Age: c.Keys}} }, "probes"},
		{"a threshold above N", func(c *Config) { c.Threshold = 3 }, "threshold"},
		{"short checksums with crc32", func(c *Config) { c.ChecksumBits = 8; c.Hash = hashing.CRC32 }, "checksum bits"},
		{"if-empty with 12-byte slots", func(c *Config) { c.IfEmpty = true; c.ValueSize = 8 }, "if-empty"},
		{"append", func(c *Config) { c.Primitive = dta.Append }, "primitive"},
		{"if-empty with postcard", func(c *Config) { c.Primitive = dta.Postcard; c.IfEmpty = true }, "if-empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := small(dta.KeyWrite, 2)
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v; want an error naming %q", err, tt.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
