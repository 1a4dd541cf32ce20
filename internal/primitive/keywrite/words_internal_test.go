package keywrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/region"
)

// TestWordQueriesVoteAsSliceQueries checks the one-word fast path against the
// general vote on the same slots: random mixes of empty copies, copies of
// other keys, and copies of up to three values (with garbage in the padding
// the value mask must ignore), for every N and threshold.
func TestWordQueriesVoteAsSliceQueries(t *testing.T) {
	for _, vs := range []int{1, 3, 4} {
		t.Run(fmt.Sprintf("%d-byte values answer as the general vote", vs), func(t *testing.T) {
			spec := Spec{Slots: 64, ValueSize: vs, MaxRedundancy: hashing.MaxCopies, Hash: hashing.CRC32C}
			mem, err := region.New(region.Config{Size: spec.RegionSize()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mem.Close() })
			s, err := NewStore(spec, mem)
			if err != nil {
				t.Fatal(err)
			}
			if !s.words {
				t.Fatalf("a %d-byte value store does not use one-word slots", vs)
			}
			rng := rand.New(rand.NewPCG(1, uint64(vs)))
			outcomes := map[Status]int{}
			for trial := range 3000 {
				key := []byte(fmt.Sprintf("key-%d", trial))
				k := spec.Hash.Key(key)
				n := 1 + rng.IntN(hashing.MaxCopies)
				var offs [hashing.MaxCopies]uint64
				for i := range n {
					offs[i] = spec.Offset(k, i)
					slot := make([]byte, 8)
					switch c := rng.IntN(5); c {
					case 0: // empty
					case 1: // another key's copy
						binary.LittleEndian.PutUint32(slot, k.Checksum()^1)
						slot[4] = byte(rng.IntN(3))
					default: // one of three values, garbage in the padding
						binary.LittleEndian.PutUint32(slot, k.Checksum())
						for j := 4; j < 8; j++ {
							if j < 4+vs {
								slot[j] = byte(c*7 + j)
							} else {
								slot[j] = byte(rng.Uint32())
							}
						}
					}
					if err := mem.Write(offs[i], slot); err != nil {
						t.Fatal(err)
					}
				}
				for threshold := 0; threshold <= n; threshold++ {
					want, err := s.vote(k.Checksum(), offs[:n], allCopies, threshold, nil)
					if err != nil {
						t.Fatal(err)
					}
					got, err := s.queryWords(k.Checksum(), &offs, n, threshold, nil)
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != want.Status || !bytes.Equal(got.Value, want.Value) || got.Votes != want.Votes ||
						got.Checks != want.Checks || got.Copies != want.Copies {
						t.Fatalf("trial %d n=%d threshold=%d: words %+v, vote %+v", trial, n, threshold, got, want)
					}
					outcomes[got.Status]++
				}
			}
			if outcomes[Found] == 0 || outcomes[Empty] == 0 || outcomes[Conflict] == 0 {
				t.Errorf("outcomes %v: want found, empty and conflict among them", outcomes)
			}
		})
	}
}
