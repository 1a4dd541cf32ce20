package tea_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

func TestRangesAreContiguousAndSizedByMemory(t *testing.T) {
	spec := tea.Spec{Buckets: 1000, Cells: 4, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	rs := spec.RowSize()
	for _, tc := range []struct {
		name     string
		memory   []uint64 // in rows
		replicas int
		want     []uint64 // rows per range
	}{
		{"equal servers get equal ranges", []uint64{500, 500}, 1, []uint64{500, 500}},
		{"a server with twice the memory gets twice the buckets", []uint64{300, 600, 300}, 1, []uint64{250, 500, 250}},
		{"remainders go to the largest fractions", []uint64{1000, 1000, 1000}, 1, []uint64{334, 333, 333}},
		{"with two replicas each server holds its range and its neighbour's", []uint64{1000, 1000, 1000, 1000}, 2, []uint64{250, 250, 250, 250}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := make([]tea.ServerSpec, len(tc.memory))
			for i, m := range tc.memory {
				servers[i] = tea.ServerSpec{Name: string(rune('a' + i)), Memory: m * rs}
			}
			p, err := tea.Place(spec, servers, tc.replicas)
			if err != nil {
				t.Fatal(err)
			}
			var lo uint64
			for s, r := range p.Ranges() {
				if r.Lo != lo || r.Hi-r.Lo != tc.want[s] {
					t.Errorf("range %d = [%d, %d), want %d rows from %d", s, r.Lo, r.Hi, tc.want[s], lo)
				}
				lo = r.Hi
				for k, h := range r.Holders {
					if h.Server != (s+k)%len(servers) {
						t.Errorf("range %d copy %d on server %d", s, k, h.Server)
					}
				}
			}
			if lo != spec.Buckets {
				t.Errorf("ranges end at %d of %d buckets", lo, spec.Buckets)
			}
			for b := range spec.Buckets {
				r := p.Ranges()[p.Locate(b)]
				if b < r.Lo || b >= r.Hi {
					t.Fatalf("bucket %d located in [%d, %d)", b, r.Lo, r.Hi)
				}
			}
			for s := range servers {
				if p.Used(s) > servers[s].Memory {
					t.Errorf("server %d uses %d of %d bytes", s, p.Used(s), servers[s].Memory)
				}
			}
		})
	}
}

func TestAPlacementThatDoesNotFitNamesTheServer(t *testing.T) {
	spec := tea.Spec{Buckets: 100, Cells: 4, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	rs := spec.RowSize()
	servers := []tea.ServerSpec{{Name: "big", Memory: 100 * rs}, {Name: "small", Memory: 10 * rs}}
	_, err := tea.Place(spec, servers, 2)
	if err == nil || !strings.Contains(err.Error(), "(small)") {
		t.Errorf("err = %v, want one naming server small (it also holds the replica of big's large range)", err)
	}
	for _, tc := range []struct {
		name     string
		servers  []tea.ServerSpec
		replicas int
		field    string
	}{
		{"no servers", nil, 1, "servers"},
		{"more replicas than servers", servers, 3, "replicas"},
		{"a server without memory", []tea.ServerSpec{{Name: "x"}}, 1, "servers[0]"},
	} {
		if _, err := tea.Place(spec, tc.servers, tc.replicas); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// failingMemory fails every access.
type failingMemory struct{}

func (failingMemory) Write(uint64, []byte) error { return errors.New("down") }
func (failingMemory) Read(uint64, []byte) error  { return errors.New("down") }

func TestClusterMemoryWritesEveryReplicaAndReadsAnyOne(t *testing.T) {
	spec := tea.Spec{Buckets: 64, Cells: 2, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	p, err := tea.PlaceEqual(spec, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	local := []*tea.LocalMemory{tea.NewLocalMemory(p.Used(0)), tea.NewLocalMemory(p.Used(1)), tea.NewLocalMemory(p.Used(2))}
	mems := []tea.Memory{local[0], local[1], local[2]}
	cm, _ := tea.NewClusterMemory(p, mems)
	tab, err := tea.NewTable(spec, cm, tea.TableConfig{MaxTries: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ks := keys(110, 8, 3)
	for _, k := range ks {
		if err := tab.Insert(k, valueOf(k, 8)); err != nil {
			t.Fatal(err)
		}
	}
	checkTable(t, tab, cm)
	row := make([]byte, spec.RowSize())
	other := make([]byte, spec.RowSize())
	for b := range spec.Buckets {
		s0, o0 := p.RowAddr(b, 0)
		s1, o1 := p.RowAddr(b, 1)
		_ = local[s0].Read(o0, row)
		_ = local[s1].Read(o1, other)
		if s0 == s1 || !bytes.Equal(row, other) {
			t.Fatalf("row %d: servers %d and %d hold different copies", b, s0, s1)
		}
	}
	t.Run("reads fall back to the replica", func(t *testing.T) {
		down := []tea.Memory{failingMemory{}, local[1], local[2]}
		cm2, _ := tea.NewClusterMemory(p, down)
		checkTable(t, tab, cm2)
	})
	t.Run("an access across two rows is refused", func(t *testing.T) {
		if err := cm.Write(spec.RowSize()-1, []byte{1, 2}); !errors.Is(err, tea.ErrCrossesRow) {
			t.Errorf("%v", err)
		}
		if err := cm.Read(spec.TableSize(), []byte{1}); !errors.Is(err, tea.ErrOutOfBounds) {
			t.Errorf("%v", err)
		}
	})
}

func TestPlacingOverMoreThanMaxServersIsRefusedBeforeAllocating(t *testing.T) {
	spec := tea.Spec{Buckets: tea.MaxBuckets, Cells: 4, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	for _, n := range []int{0, -1, tea.MaxServers + 1, 99999999999} {
		if _, err := tea.PlaceEqual(spec, n, 1); err == nil || !strings.HasPrefix(err.Error(), "servers:") {
			t.Errorf("PlaceEqual over %d servers: %v, want an error naming servers", n, err)
		}
	}
	servers := make([]tea.ServerSpec, tea.MaxServers+1)
	for i := range servers {
		servers[i] = tea.ServerSpec{Name: "s", Memory: 1 << 40}
	}
	if _, err := tea.Place(spec, servers, 1); err == nil || !strings.HasPrefix(err.Error(), "servers:") {
		t.Errorf("Place over %d servers: %v, want an error naming servers", len(servers), err)
	}
	if _, err := tea.PlaceEqual(spec, tea.MaxServers, 1); err != nil {
		t.Errorf("PlaceEqual over MaxServers: %v", err)
	}
}
