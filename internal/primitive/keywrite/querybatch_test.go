package keywrite_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/keywrite"
)

func TestQueryBatchAnswersAsQueryDoes(t *testing.T) {
	for _, c := range []struct {
		h  hashing.Algorithm
		vs int // 6: slots of 12 bytes; 2 and 4: one-word slots, loaded whole
	}{{hashing.CRC32, 6}, {hashing.CRC32C, 6}, {hashing.CRC32, 4}, {hashing.CRC32C, 2}} {
		h := c.h
		t.Run(fmt.Sprintf("%s, %d-byte values: every key of a crowded store gets Query's answer", h, c.vs), func(t *testing.T) {
			// 600 keys × 3 copies in 1024 slots, 50 keys holding two values
			// and 50 never written: found, empty and conflicting answers.
			spec := keywrite.Spec{Slots: 1 << 10, ValueSize: c.vs, MaxRedundancy: 4, Hash: h}
			cat, s := open(t, spec)
			var keys [][]byte
			for i := range 700 {
				key := []byte(fmt.Sprintf("flow-%d", i))
				keys = append(keys, key)
				switch {
				case i < 600:
					write(t, cat, s, key, value(c.vs, byte(i)), 3)
				case i < 650: // two copies of each of two values: a conflict
					write(t, cat, s, key, value(c.vs, 1), 4)
					write(t, cat, s, key, value(c.vs, 2), 2)
				}
			}
			statuses := map[keywrite.Status]int{}
			for _, n := range []int{0, 1, 3} {
				for _, threshold := range []int{0, min(2, n)} {
					res := make([]keywrite.Result, len(keys))
					vals := make([]byte, len(keys)*spec.ValueSize)
					if err := s.KeyWrite.QueryBatch(keys, n, threshold, res, vals); err != nil {
						t.Fatal(err)
					}
					for i, key := range keys {
						want := query(t, s, key, n, threshold)
						got := res[i]
						if got.Status != want.Status || !bytes.Equal(got.Value, want.Value) || got.Votes != want.Votes ||
							got.Checks != want.Checks || got.Copies != want.Copies {
							t.Fatalf("n=%d threshold=%d key %q: QueryBatch %+v, Query %+v", n, threshold, key, got, want)
						}
						if got.Status == keywrite.Found && &got.Value[0] != &vals[i*spec.ValueSize] {
							t.Fatalf("key %q: value does not alias vals[%d:]", key, i*spec.ValueSize)
						}
						statuses[got.Status]++
					}
				}
			}
			if statuses[keywrite.Found] == 0 || statuses[keywrite.Empty] == 0 || statuses[keywrite.Conflict] == 0 {
				t.Errorf("outcomes %v: want found, empty and conflict among them", statuses)
			}
		})
	}

	t.Run("bad arguments are refused", func(t *testing.T) {
		spec := keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}
		_, s := open(t, spec)
		keys := [][]byte{{1}, {2}}
		for _, tc := range []struct {
			name         string
			n, threshold int
			res, vals    int
		}{
			{"redundancy above the maximum", 3, 0, 2, 8},
			{"threshold above n", 2, 3, 2, 8},
			{"too few results", 2, 0, 1, 8},
			{"too few value bytes", 2, 0, 2, 7},
		} {
			if err := s.KeyWrite.QueryBatch(keys, tc.n, tc.threshold, make([]keywrite.Result, tc.res), make([]byte, tc.vals)); err == nil {
				t.Errorf("%s: no error", tc.name)
			}
		}
	})

	t.Run("no keys is no work", func(t *testing.T) {
		spec := keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}
		_, s := open(t, spec)
		if err := s.KeyWrite.QueryBatch(nil, 0, 0, nil, nil); err != nil {
			t.Error(err)
		}
	})

	t.Run("it allocates nothing", func(t *testing.T) {
		spec := keywrite.Spec{Slots: 1 << 12, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}
		cat, s := open(t, spec)
		keys := make([][]byte, 40)
		for i := range keys {
			k := keywrite.CompatKey(uint32(i))
			keys[i] = k[:]
			write(t, cat, s, keys[i], value(4, byte(i)), 2)
		}
		res := make([]keywrite.Result, len(keys))
		vals := make([]byte, 4*len(keys))
		allocs := testing.AllocsPerRun(100, func() {
			if err := s.KeyWrite.QueryBatch(keys, 2, 0, res, vals); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("QueryBatch: %v allocs, want 0", allocs)
		}
	})
}
