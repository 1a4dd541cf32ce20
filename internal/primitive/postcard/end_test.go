package postcard_test

import (
	"encoding/binary"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/postcard"
)

func TestPathEndIsKnownOnlyWhenCarriedOrFull(t *testing.T) {
	t.Run("a 3-hop path whose postcards carry its length is complete", func(t *testing.T) {
		f := newFixture(t, spec5, 64)
		for hop := 1; hop <= 3; hop++ {
			f.add(t, []byte("short"), hop, 3, uint32(10*hop), 1)
		}
		res := f.query(t, []byte("short"))
		if res.Status != postcard.Found || !res.Complete || res.PathLen != 3 || !sameHops(res.Hops, hops(10, 20, 30)) {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("a known 3-hop path missing hop 2 shows the hole and is not complete", func(t *testing.T) {
		f := newFixture(t, spec5, 64)
		f.add(t, []byte("holey"), 1, 3, 10, 1)
		f.add(t, []byte("holey"), 3, 3, 30, 1)
		if _, err := f.cache.Flush(2, 0, f.b, f.sink); err != nil {
			t.Fatal(err)
		}
		res := f.query(t, []byte("holey"))
		if res.Status != postcard.Found || res.Complete || res.PathLen != 3 || !sameHops(res.Hops, hops(10, 0, 30)) {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("a full 5-hop path without a carried length is complete", func(t *testing.T) {
		f := newFixture(t, spec5, 64)
		for hop := 1; hop <= 5; hop++ {
			f.add(t, []byte("full"), hop, 0, uint32(hop), 1)
		}
		if res := f.query(t, []byte("full")); !res.Complete || res.PathLen != 5 {
			t.Fatalf("%+v", res)
		}
	})
}

func TestAnEndMarkerBeforeAValueIsNotAPath(t *testing.T) {
	spec := postcard.Spec{Chunks: 16, Hops: 3, Redundancy: 1, MinValue: 1, MaxValue: 1000, Hash: hashing.CRC32C}
	f := newFixture(t, spec, 8)
	key := []byte("forged")
	chunk := make([]byte, spec.ChunkSize())
	for i, v := range []uint32{5, postcard.End, 7} {
		binary.BigEndian.PutUint32(chunk[4*i:], hashing.HopChecksum(i+1, key)^v)
	}
	if err := f.st.Region.Write(spec.Offset(spec.Hash.Key(key), 0), chunk); err != nil {
		t.Fatal(err)
	}
	if res := f.query(t, key); res.Status != postcard.Empty {
		t.Fatalf("a chunk with a value after its end decoded: %+v", res)
	}
}
