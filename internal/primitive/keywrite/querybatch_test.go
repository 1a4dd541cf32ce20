package keywrite_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
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

	for _, vs := range []int{4, 6} {
		t.Run(fmt.Sprintf("it allocates nothing, %d-byte values", vs), func(t *testing.T) {
			spec := keywrite.Spec{Slots: 1 << 12, ValueSize: vs, MaxRedundancy: 2, Hash: hashing.CRC32}
			cat, s := open(t, spec)
			keys := make([][]byte, 40)
			for i := range keys {
				k := keywrite.CompatKey(uint32(i))
				keys[i] = k[:]
				write(t, cat, s, keys[i], value(vs, byte(i)), 2)
			}
			res := make([]keywrite.Result, len(keys))
			vals := make([]byte, vs*len(keys))
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
}

// TestQueryBatchIsQueryOverRandomStores compares QueryBatch with one Query
// per key over random stores: both hash families, one-word slots (1..4-byte
// values, the inline vote) and wider ones, power-of-two and other slot
// counts, crowded enough that copies are overwritten by other keys (empty
// answers), keys written twice with different values (conflicts), compat
// 4-byte keys (hashed by Key32) beside longer ones, keys never written, the
// same key more than once in a batch, and batch lengths around the pipeline's
// group (8) and distance (32).
func TestQueryBatchIsQueryOverRandomStores(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 3))
	lengths := []int{0, 1, 2, 7, 8, 9, 31, 32, 33, 40, 64, 65, 100, 257}
	outcomes := map[keywrite.Status]int{}
	for trial := range 48 {
		h := []hashing.Algorithm{hashing.CRC32, hashing.CRC32C}[trial%2]
		vs := []int{1, 2, 3, 4, 6, 20}[trial/2%6]
		slots := uint64(1) << (6 + rng.IntN(5))
		if h == hashing.CRC32C && trial%4 == 1 {
			slots = 100 + uint64(rng.IntN(900)) // the multiply-shift reduction
		}
		spec := keywrite.Spec{Slots: slots, ValueSize: vs, MaxRedundancy: 1 + rng.IntN(hashing.MaxCopies), Hash: h}
		t.Run(fmt.Sprintf("trial %d: %s, %d slots, %d-byte values, N up to %d", trial, h, slots, vs, spec.MaxRedundancy), func(t *testing.T) {
			cat, s := open(t, spec)
			var keys [][]byte
			for i := range int(slots) / 2 {
				var key []byte
				if rng.IntN(2) == 0 {
					k := keywrite.CompatKey(rng.Uint32())
					key = k[:]
				} else {
					key = make([]byte, 1+rng.IntN(40))
					for j := range key {
						key[j] = byte(rng.Uint32())
					}
				}
				keys = append(keys, key)
				if i%5 == 4 {
					continue // never written
				}
				n := 1 + rng.IntN(spec.MaxRedundancy)
				write(t, cat, s, key, value(vs, byte(rng.IntN(3))), n)
				if i%7 == 0 { // a second value over some of the copies
					write(t, cat, s, key, value(vs, byte(3+rng.IntN(3))), 1+rng.IntN(n))
				}
			}
			for range 20 {
				batch := make([][]byte, lengths[rng.IntN(len(lengths))])
				for i := range batch {
					batch[i] = keys[rng.IntN(len(keys))]
				}
				n := rng.IntN(spec.MaxRedundancy + 1) // 0: the store's maximum
				copies := n
				if n == 0 {
					copies = spec.MaxRedundancy
				}
				threshold := rng.IntN(copies + 1)
				res := make([]keywrite.Result, len(batch)+1)
				vals := make([]byte, (len(batch)+1)*vs)
				res[len(batch)].Votes = -1 // beyond the keys: must stay untouched
				for i := range vals {
					vals[i] = 0xEE
				}
				if err := s.KeyWrite.QueryBatch(batch, n, threshold, res, vals); err != nil {
					t.Fatal(err)
				}
				for i, key := range batch {
					want := query(t, s, key, n, threshold)
					got := res[i]
					if got.Status != want.Status || !bytes.Equal(got.Value, want.Value) || got.Votes != want.Votes ||
						got.Checks != want.Checks || got.Copies != want.Copies {
						t.Fatalf("n=%d threshold=%d key %d of %d (% x): QueryBatch %+v, Query %+v", n, threshold, i, len(batch), key, got, want)
					}
					if got.Status == keywrite.Found && &got.Value[0] != &vals[i*vs] {
						t.Fatalf("key %d: value does not alias vals[%d:]", i, i*vs)
					}
					outcomes[got.Status]++
				}
				if res[len(batch)].Votes != -1 || !bytes.Equal(vals[len(batch)*vs:], bytes.Repeat([]byte{0xEE}, vs)) {
					t.Fatalf("QueryBatch of %d keys wrote past them: %+v % x", len(batch), res[len(batch)], vals[len(batch)*vs:])
				}
			}
		})
	}
	if outcomes[keywrite.Found] == 0 || outcomes[keywrite.Empty] == 0 || outcomes[keywrite.Conflict] == 0 {
		t.Errorf("outcomes %v: want found, empty and conflict among them", outcomes)
	}
}

// TestQueryBatchKeepsOrder checks each answer against the value written for
// its own key (every key has a different one), not against Query: a pipeline
// that voted one query's slots into another's place, or shifted the answers
// by a group, fails it even if Query shared the mistake.
func TestQueryBatchKeepsOrder(t *testing.T) {
	for _, vs := range []int{4, 6} {
		t.Run(fmt.Sprintf("%d-byte values: answer i is key i's value", vs), func(t *testing.T) {
			spec := keywrite.Spec{Slots: 1 << 16, ValueSize: vs, MaxRedundancy: 2, Hash: hashing.CRC32}
			cat, s := open(t, spec)
			const written = 3000
			valueOf := func(i uint32) []byte {
				v := make([]byte, vs)
				binary.LittleEndian.PutUint32(v, i*2654435761+1)
				return v
			}
			for i := range uint32(written) {
				k := keywrite.CompatKey(i)
				write(t, cat, s, k[:], valueOf(i), 2)
			}
			rng := rand.New(rand.NewPCG(uint64(vs), 9))
			for _, size := range []int{1, 8, 31, 33, 64, 1000} {
				ids := make([]uint32, size)
				keys := make([][]byte, size)
				for i := range keys {
					ids[i] = uint32(rng.IntN(written + written/10)) // a tenth never written
					k := keywrite.CompatKey(ids[i])
					keys[i] = k[:]
				}
				res := make([]keywrite.Result, size)
				vals := make([]byte, size*vs)
				if err := s.KeyWrite.QueryBatch(keys, 2, 0, res, vals); err != nil {
					t.Fatal(err)
				}
				lost := 0
				for i, id := range ids {
					switch {
					case id >= written && res[i].Status == keywrite.Found:
						t.Fatalf("batch of %d, answer %d: key %d was never written, got % x", size, i, id, res[i].Value)
					case id < written && res[i].Status == keywrite.Found && !bytes.Equal(res[i].Value, valueOf(id)):
						t.Fatalf("batch of %d, answer %d: key %d has % x, got % x", size, i, id, valueOf(id), res[i].Value)
					case id < written && res[i].Status != keywrite.Found:
						lost++ // both copies overwritten: rare at this load
					}
				}
				if lost > size/50+1 {
					t.Errorf("batch of %d: %d written keys not found", size, lost)
				}
			}
		})
	}
}

// TestQueryBatchDuringWrites runs QueryBatch while another goroutine rewrites
// the queried keys' copies between two values, each copy with one atomic
// store: every answer is one of the two values or a conflict between them,
// never a torn or foreign value. Run with -race.
func TestQueryBatchDuringWrites(t *testing.T) {
	spec := keywrite.Spec{Slots: 1 << 12, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}
	_, s := open(t, spec)
	// 64 keys whose copies share no slot, so that the only writes to a
	// key's copies are its own.
	var keys [][]byte
	used := map[uint64]bool{}
	for i := uint32(0); len(keys) < 64; i++ {
		k := keywrite.CompatKey(i)
		h := spec.Hash.Key(k[:])
		o0, o1 := spec.Offset(h, 0), spec.Offset(h, 1)
		if o0 == o1 || used[o0] || used[o1] {
			continue
		}
		used[o0], used[o1] = true, true
		keys = append(keys, k[:])
	}
	word := func(key []byte, v uint32) uint64 {
		return uint64(v)<<32 | uint64(spec.Hash.Checksum(key))
	}
	a, b := uint32(0xA1A2A3A4), uint32(0xB1B2B3B4)
	// Every copy holds a before the queries start: a key with one copy
	// written and the other still empty would be found with one vote.
	for _, key := range keys {
		k := spec.Hash.Key(key)
		for i := range 2 {
			if err := s.Region.Store64(spec.Offset(k, i), word(key, a)); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	// The writer stops before the test returns, even when it fails (the
	// store is closed after the test).
	defer wg.Wait()
	defer close(done)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; ; round++ {
			select {
			case <-done:
				return
			default:
			}
			v := a
			if round%2 == 1 {
				v = b
			}
			for _, key := range keys {
				k := spec.Hash.Key(key)
				for i := range 2 {
					if err := s.Region.Store64(spec.Offset(k, i), word(key, v)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}
	}()
	res := make([]keywrite.Result, len(keys))
	vals := make([]byte, 4*len(keys))
	for range 2000 {
		if err := s.KeyWrite.QueryBatch(keys, 2, 0, res, vals); err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			v := binary.LittleEndian.Uint32(append(r.Value, 0, 0, 0, 0))
			switch {
			case r.Status == keywrite.Found && (v == a || v == b) && r.Votes == 2:
			case r.Status == keywrite.Conflict && r.Checks == 2 && r.Votes == 1:
			default:
				t.Fatalf("key %d: %+v", i, r)
			}
		}
	}
}
