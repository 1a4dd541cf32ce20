package reporter

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// encodeStream returns the wire bytes of n reports of a generator.
func encodeStream(t *testing.T, cfg GenConfig, n int) []byte {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]dta.Report, 50)
	var out []byte
	for len(out) == 0 || n > 0 {
		g.Fill(rs)
		for i := range rs {
			if out, err = rs[i].AppendTo(out); err != nil {
				t.Fatalf("%v report %+v does not encode: %v", cfg.Kind, rs[i], err)
			}
		}
		n -= len(rs)
	}
	return out
}

func TestGeneratorsAreDeterministicBySeed(t *testing.T) {
	for _, k := range Kinds {
		t.Run(k.String(), func(t *testing.T) {
			a := encodeStream(t, GenConfig{Kind: k, Seed: 42}, 1000)
			b := encodeStream(t, GenConfig{Kind: k, Seed: 42}, 1000)
			c := encodeStream(t, GenConfig{Kind: k, Seed: 43}, 1000)
			if !bytes.Equal(a, b) {
				t.Error("the same seed gave two streams")
			}
			if bytes.Equal(a, c) {
				t.Error("seeds 42 and 43 gave the same stream")
			}
		})
	}
}

// hostOK reports whether b is a fat-tree host address for arity k.
func hostOK(b []byte, k int) bool {
	return b[0] == 10 && int(b[1]) < k && int(b[2]) < k/2 && b[3] >= 2 && int(b[3]) < 2+k/2
}

func switchOK(id uint32, k int) bool {
	layer, pod, i := id>>16, int(id>>8&0xff), int(id&0xff)
	switch layer {
	case 1, 2:
		return pod < k && i < k/2
	case 3:
		return int(id&0xffff) < k*k/4
	}
	return false
}

func TestINTPathReportsAreFiveHopPathsOfFlows(t *testing.T) {
	const k = 8
	g, err := NewGenerator(GenConfig{Kind: INTPath, Seed: 1, FatTreeK: k, Store: 3})
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]dta.Report, 5000)
	g.Fill(rs)
	lengths := map[int]int{}
	for _, r := range rs {
		if r.Opcode != dta.OpKeyWriteExt || r.Store != 3 || r.Redundancy != 2 || len(r.Key) != 13 || len(r.Value) != 20 {
			t.Fatalf("report %+v: want extended Key-Write, store 3, N=2, 13-byte key, 20-byte value", r)
		}
		tuple, err := dta.DecodeFiveTuple(r.Key)
		if err != nil || !hostOK(r.Key[0:4], k) || !hostOK(r.Key[4:8], k) || (tuple.Proto != 6 && tuple.Proto != 17) {
			t.Fatalf("key %x is not a TCP/UDP flow between hosts: %v", r.Key, err)
		}
		n := 0
		for n < 5 && binary.BigEndian.Uint32(r.Value[4*n:]) != 0 {
			if !switchOK(binary.BigEndian.Uint32(r.Value[4*n:]), k) {
				t.Fatalf("value %x: hop %d is not a switch id", r.Value, n+1)
			}
			n++
		}
		for i := n; i < 5; i++ {
			if binary.BigEndian.Uint32(r.Value[4*i:]) != 0 {
				t.Fatalf("value %x: hop %d after the end of the path", r.Value, i+1)
			}
		}
		lengths[n]++
	}
	if len(lengths) != 3 || lengths[1] == 0 || lengths[3] == 0 || lengths[5] < len(rs)/2 {
		t.Errorf("path lengths %v, want 1, 3 and mostly 5 hops", lengths)
	}
}

func TestPostcardsCoverEveryHopOfEachPath(t *testing.T) {
	const k = 4
	g, err := NewGenerator(GenConfig{Kind: INTPostcards, Seed: 7, FatTreeK: k})
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]dta.Report, 64)
	type state struct{ next, n int }
	open := map[string]*state{}
	interleaved := false
	for range 100 {
		g.Fill(rs)
		for _, r := range rs {
			if r.Opcode != dta.OpPostcardExt || len(r.Key) != 13 || len(r.Value) != 4 || !switchOK(binary.BigEndian.Uint32(r.Value), k) {
				t.Fatalf("postcard %+v", r)
			}
			if r.PathLen != 1 && r.PathLen != 3 && r.PathLen != 5 {
				t.Fatalf("path length %d", r.PathLen)
			}
			s := open[string(r.Key)]
			if s == nil {
				s = &state{n: int(r.PathLen)}
				open[string(r.Key)] = s
			}
			if int(r.Hop) != s.next+1 || int(r.PathLen) != s.n {
				t.Fatalf("flow %x: hop %d/%d after %d/%d", r.Key, r.Hop, r.PathLen, s.next, s.n)
			}
			s.next++
			if s.next == s.n {
				delete(open, string(r.Key))
			}
			if len(open) > 1 {
				interleaved = true
			}
		}
	}
	if !interleaved {
		t.Error("the postcards of different flows never interleave")
	}
	if len(open) > inflightPaths {
		t.Errorf("%d paths open, want at most %d", len(open), inflightPaths)
	}
}

func TestEventsAreAppendsToSeveralLists(t *testing.T) {
	for _, size := range []int{4, 18} {
		g, err := NewGenerator(GenConfig{Kind: Events, Seed: 3, EntrySize: size, Lists: 8})
		if err != nil {
			t.Fatal(err)
		}
		rs := make([]dta.Report, 2000)
		g.Fill(rs)
		lists := map[uint32]int{}
		for _, r := range rs {
			wantOp := dta.OpAppend
			if size == 18 {
				wantOp = dta.OpAppendExt
			}
			if r.Opcode != wantOp || len(r.Value) != size || r.List >= 8 {
				t.Fatalf("entry size %d: report %+v", size, r)
			}
			var sw uint32
			if size == 4 {
				sw = binary.BigEndian.Uint32(r.Value) >> 12
			} else {
				sw = binary.BigEndian.Uint32(r.Value[13:])
				if r.Value[17] < 1 || r.Value[17] > 5 {
					t.Fatalf("drop reason %d", r.Value[17])
				}
			}
			if !switchOK(sw, DefaultFatTreeK) {
				t.Fatalf("entry %x: switch %#x", r.Value, sw)
			}
			lists[r.List]++
		}
		if len(lists) < 4 {
			t.Errorf("entry size %d: events went to %d lists, want several", size, len(lists))
		}
	}
}

func TestCountersAreCompatKeyIncrementsPerHost(t *testing.T) {
	g, err := NewGenerator(GenConfig{Kind: Counters, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]dta.Report, 5000)
	g.Fill(rs)
	perHost := map[uint32]uint64{}
	var total uint64
	for _, r := range rs {
		if r.Opcode != dta.OpKeyIncrement || len(r.Key) != 4 || !hostOK(r.Key, DefaultFatTreeK) || r.Delta == 0 || r.Delta > 64*1500 {
			t.Fatalf("report %+v", r)
		}
		perHost[r.Key32()] += r.Delta
		total += r.Delta
	}
	// Heavy hitters: the busiest 1 % of hosts send well over 1 % of bytes.
	var top uint64
	for range len(perHost) / 100 {
		var best uint32
		for h, v := range perHost {
			if v >= perHost[best] {
				best = h
			}
		}
		top += perHost[best]
		delete(perHost, best)
	}
	if top*10 < total {
		t.Errorf("the top 1 %% of hosts send %d of %d bytes, want heavy hitters", top, total)
	}
}

func TestFillDoesNotAllocate(t *testing.T) {
	for _, k := range Kinds {
		g, err := NewGenerator(GenConfig{Kind: k, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rs := make([]dta.Report, 64)
		g.Fill(rs)
		if n := testing.AllocsPerRun(100, func() { g.Fill(rs) }); n != 0 {
			t.Errorf("%v: Fill allocates %v times per call", k, n)
		}
	}
}

func TestGenConfigValidate(t *testing.T) {
	bad := []GenConfig{
		{},
		{Kind: INTPath, FatTreeK: 5},
		{Kind: INTPath, FatTreeK: 2},
		{Kind: INTPath, FatTreeK: MaxFatTreeK + 2},
		{Kind: INTPath, Redundancy: dta.MaxRedundancy + 1},
		{Kind: Events, EntrySize: 8},
		{Kind: Events, Lists: -1},
		{Kind: INTPath, Flows: MaxFlows + 1},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v validates", c)
		}
	}
	for _, k := range Kinds {
		if err := (GenConfig{Kind: k}).Validate(); err != nil {
			t.Errorf("%v: %v", k, err)
		}
		if got, err := ParseKind(k.String()); got != k || err != nil {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("nope"); err == nil {
		t.Error(`ParseKind("nope") succeeded`)
	}
}

func BenchmarkGeneratorFill(b *testing.B) {
	for _, k := range Kinds {
		b.Run(k.String(), func(b *testing.B) {
			g, _ := NewGenerator(GenConfig{Kind: k, Seed: 1})
			rs := make([]dta.Report, 64)
			b.ReportAllocs()
			for b.Loop() {
				g.Fill(rs)
			}
			b.ReportMetric(float64(b.N*len(rs))/b.Elapsed().Seconds(), "reports/s")
		})
	}
}
