package sim

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

func fieldOf(err error) string {
	var fe *analysis.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func goodSketch() SketchConfig {
	return SketchConfig{Geometry: sketch.Geometry{Rows: 4, Columns: 512, Kind: sketch.CountMin},
		Reporters: 2, Keys: 1000, Packets: 10000, Zipf: 1.1, TopK: 5, Seed: 1}
}

func TestSketchConfigIsValidatedNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*SketchConfig)
		want   string
	}{
		{"a NaN skew", func(c *SketchConfig) { c.Zipf = math.NaN() }, "zipf"},
		{"an infinite skew", func(c *SketchConfig) { c.Zipf = math.Inf(1) }, "zipf"},
		{"a skew of 1", func(c *SketchConfig) { c.Zipf = 1 }, "zipf"},
		{"2^62 keys", func(c *SketchConfig) { c.Keys = 1 << 62 }, "keys"},
		{"2^62 packets", func(c *SketchConfig) { c.Packets = 1 << 62 }, "packets"},
		{"99999999999 reporters", func(c *SketchConfig) { c.Reporters = 99999999999 }, "reporters"},
		{"a sketch beyond the memory", func(c *SketchConfig) { c.Geometry.Rows, c.Geometry.Columns = 16, 1<<32 }, "geometry"},
	} {
		c := goodSketch()
		tt.change(&c)
		err := c.Validate()
		if got := fieldOf(err); got != tt.want {
			t.Errorf("%s: %v names %q, want %q", tt.name, err, got, tt.want)
		}
		if _, err := RunSketch(context.Background(), c); fieldOf(err) != tt.want {
			t.Errorf("%s: RunSketch: %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	c := goodSketch()
	if err := c.Validate(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}

func TestSketchSimulationStopsWhenTheContextIsDone(t *testing.T) {
	c := goodSketch()
	c.Packets = MaxSketchPackets // minutes of work
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := RunSketch(ctx, c)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RunSketch: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("RunSketch returned %v after the cancellation", d)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"99999999999 workers", func(c *Config) { c.Workers = 99999999999 }, "workers"},
		{"negative workers", func(c *Config) { c.Workers = -1 }, "workers"},
		{"N of 0", func(c *Config) { c.N = 0 }, "n"},
		{"a value size of 0", func(c *Config) { c.ValueSize = 0 }, "value size"},
		{"one slot", func(c *Config) { c.Slots = 1 }, "slots"},
		{"postcard hops of 99", func(c *Config) { c.Primitive = dta.Postcard; c.ChecksumBits = 0; c.Hops = 99 }, "hops"},
	} {
		c := small(dta.KeyWrite, 2)
		tt.change(&c)
		if err := c.Validate(); fieldOf(err) != tt.want {
			t.Errorf("%s: %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
}

func TestAPlotOfAnUnknownFormatIsRefusedWithoutAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.garbage")
	if err := CheckPlotPath(path); err == nil {
		t.Error("CheckPlotPath accepted .garbage")
	}
	fr := &FigureResult{Name: "custom", Title: "t"}
	if err := fr.Plot(path); err == nil {
		t.Error("Plot wrote .garbage")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("Plot left a file of an unknown format")
	}
	for _, ok := range []string{"a.svg", "a.png", "a.pdf"} {
		if err := CheckPlotPath(ok); err != nil {
			t.Errorf("CheckPlotPath(%s): %v", ok, err)
		}
	}
}
