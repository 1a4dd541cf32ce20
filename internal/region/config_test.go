package region

import (
	"strings"
	"testing"
)

func TestHugePagesRoundTrip(t *testing.T) {
	for _, h := range []HugePages{HugePagesOff, HugePagesMadvise, HugePagesHugeTLB} {
		got, err := ParseHugePages(h.String())
		if err != nil || got != h {
			t.Errorf("ParseHugePages(%q) = %v, %v; want %v, nil", h.String(), got, err, h)
		}
	}
}

func TestParseHugePagesRejectsUnknownNames(t *testing.T) {
	for _, s := range []string{"", "on", "Madvise", "thp", "hugetlb "} {
		if _, err := ParseHugePages(s); err == nil {
			t.Errorf("ParseHugePages(%q) succeeded; want an error", s)
		}
	}
}

func TestHugePagesStringOfUnknownValue(t *testing.T) {
	if got, want := HugePages(7).String(), "HugePages(7)"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.HugePages != HugePagesMadvise || !c.Prefault || c.Size != 0 {
		t.Errorf("DefaultConfig() = %+v; want madvise, prefault, size 0", c)
	}
	if err := c.Validate(); err == nil {
		t.Error("DefaultConfig().Validate() succeeded with size 0; want an error")
	}
}

func TestConfigValidate(t *testing.T) {
	withSize := func(n uint64) Config { c := DefaultConfig(); c.Size = n; return c }
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{"one byte is valid", withSize(1), ""},
		{"exactly MaxSize is valid", withSize(MaxSize), ""},
		{"zero size is rejected", withSize(0), "size must be > 0"},
		{"one byte over MaxSize is rejected", withSize(MaxSize + 1), "exceeds the maximum"},
		{"size near 2^64 is rejected", withSize(^uint64(0)), "exceeds the maximum"},
		{"unknown huge pages mode is rejected", Config{Size: 4096, HugePages: 3}, "unknown huge pages mode HugePages(3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v; want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v; want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
