package advert_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/advert"
	"github.com/dta-go/dta/wire/dta"
)

// sample has one store of every primitive and two Append heads.
func sample() []advert.Store {
	return []advert.Store{
		{ID: 1, Primitive: dta.KeyWrite, Default: true, Hash: hashing.CRC32, Name: "keywrite", VA: 0x100000000000, RKey: 0x11, Length: 8 << 10,
			KeyWrite: advert.KeyWrite{Slots: 1024, ValueSize: 4, MaxRedundancy: 4}},
		{ID: 2, Primitive: dta.KeyIncrement, Default: true, Hash: hashing.CRC32, Name: "keyincrement", VA: 0x100000400000, RKey: 0x22, Length: 8 << 10,
			KeyIncrement: advert.KeyIncrement{Slots: 1024, Redundancy: 2}},
		{ID: 3, Primitive: dta.Postcard, Default: true, Hash: hashing.CRC32C, Name: "postcard", VA: 0x100000800000, RKey: 0x33, Length: 20 << 10,
			Postcard: advert.Postcard{Chunks: 1024, Hops: 5, Redundancy: 2, MinValue: 0, MaxValue: 1<<20 - 1}},
		{ID: 4, Primitive: dta.Append, Default: true, Name: "append", VA: 0x100000c00000, RKey: 0x44, Length: 4 << 10,
			Append: advert.Append{Lists: 4, Capacity: 256, EntrySize: 4, Batch: 4},
			Heads:  []advert.ListHead{{List: 1, Head: 7}, {List: 3, Head: 1 << 40}}},
		{ID: 5, Primitive: dta.SketchMerge, Name: "sketch", VA: 0x100001000000, RKey: 0x55, Length: 64 << 10,
			SketchMerge: advert.SketchMerge{Rows: 4, Columns: 2048, Epochs: 2, Kind: 1}},
		{ID: 6, Primitive: dta.TeaTable, Name: "tea", VA: 0x100001400000, RKey: 0x66, Length: 1 << 20,
			TeaTable: advert.TeaTable{Buckets: 4096, Cells: 8, KeySize: 13, ValueSize: 6, Scratchpad: 1500, TableHash: 1}},
	}
}

// golden is the encoding of a one-store advertisement, written out by hand
// from docs/PROTOCOL.md ("Store advertisement").
const golden = "44544153" + "02" + "00" + "0001" + // magic, version, reserved, 1 store
	"0001" + "01" + "01" + "01" + "02" + "6b77" + // id 1, Key-Write, default, crc32, name "kw"
	"0000100000000000" + "00000011" + "0000000000002000" + // va, rkey, length
	"0000000000000400" + "0004" + "04" + // slots 1024, value_size 4, redundancy 4
	"00" + "00000000" // heads: complete, none

func TestEncodingMatchesTheDocumentedBytes(t *testing.T) {
	s := sample()[:1]
	s[0].Name = "kw"
	b, err := advert.Encode(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != golden {
		t.Fatalf("encoding\n got %s\nwant %s", got, golden)
	}
	want, _ := hex.DecodeString(golden)
	back, err := advert.Decode(want)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("decoding the documented bytes: %v\n got %+v\nwant %+v", err, back, s)
	}
}

// goldenTea is a one-store advertisement of a TEA table, written out by hand
// from docs/PROTOCOL.md ("Store advertisement").
const goldenTea = "44544153" + "02" + "00" + "0001" + // magic, version, reserved, 1 store
	"0006" + "06" + "00" + "00" + "03" + "746561" + // id 6, TEA table, not default, hash byte 0, name "tea"
	"0000100001400000" + "00000066" + "0000000000100000" + // va, rkey, length
	"0000000000001000" + "08" + "0d" + "0006" + "05dc" + "01" + // 4096 buckets, 8 cells, key 13, value 6, scratchpad 1500, crc64
	"00" + "00000000" // heads: complete, none

func TestATeaTableRecordMatchesTheDocumentedBytes(t *testing.T) {
	s := sample()[5:]
	b, err := advert.Encode(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != goldenTea {
		t.Fatalf("encoding\n got %s\nwant %s", got, goldenTea)
	}
	back, err := advert.Decode(b)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("decoding the documented bytes: %v\n got %+v\nwant %+v", err, back, s)
	}
}

func TestTeaTableGeometryBeyondItsWireWidthsIsNotEncoded(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    advert.TeaTable
	}{
		{"cells above 255", advert.TeaTable{Buckets: 2, Cells: 256, KeySize: 4, TableHash: 1}},
		{"a key of 256 bytes", advert.TeaTable{Buckets: 2, Cells: 1, KeySize: 256, TableHash: 1}},
		{"a value of 64 KiB", advert.TeaTable{Buckets: 2, Cells: 1, KeySize: 4, ValueSize: 1 << 16, TableHash: 1}},
		{"a negative scratchpad", advert.TeaTable{Buckets: 2, Cells: 1, KeySize: 4, Scratchpad: -1, TableHash: 1}},
	} {
		t.Run(tc.name+" is an error", func(t *testing.T) {
			s := sample()[5:]
			s[0].TeaTable = tc.g
			if _, err := advert.Encode(nil, s); !errors.Is(err, advert.ErrAdvert) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestEveryPrimitiveRoundTrips(t *testing.T) {
	in := sample()
	b, err := advert.Encode(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := advert.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the stores:\n in %+v\nout %+v", in, out)
	}
	if i := advert.Find(out, dta.KeyWrite, ""); i != 0 {
		t.Errorf("default Key-Write store at %d", i)
	}
	if i := advert.Find(out, dta.SketchMerge, "sketch"); i != 4 {
		t.Errorf("store sketch at %d", i)
	}
	if i := advert.Find(out, dta.TeaTable, "tea"); i != 5 {
		t.Errorf("store tea at %d", i)
	}
	if i := advert.Find(out, dta.SketchMerge, ""); i != -1 {
		t.Errorf("a default Sketch-Merge store found at %d, there is none", i)
	}
	if i := advert.Find(out, dta.KeyWrite, "append"); i != -1 {
		t.Errorf("store append found as a Key-Write store at %d", i)
	}
}

func TestDecodeRejectsWhatTheFormatForbids(t *testing.T) {
	good, err := advert.Encode(nil, sample())
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(s []advert.Store)) []byte {
		s := sample()
		f(s)
		b, err := advert.Encode(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	flip := func(off int, v byte) []byte {
		b := bytes.Clone(good)
		b[off] = v
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"an empty message", nil},
		{"a wrong magic", append([]byte("XXXX"), good[4:]...)},
		{"an unknown version", flip(4, 9)},
		{"zero stores", flip(7, 0)},
		{"more stores than bytes", flip(6, 0x03)},
		{"an unknown primitive", flip(10, 9)},
		{"unknown flag bits", flip(11, 0x81)},
		{"trailing bytes", append(bytes.Clone(good), 0)},
		{"a repeated id", mutate(func(s []advert.Store) { s[1].ID = s[0].ID })},
		{"id zero", mutate(func(s []advert.Store) { s[2].ID = 0 })},
		{"a repeated name", mutate(func(s []advert.Store) { s[1].Name = s[0].Name })},
		{"a second default of a primitive", mutate(func(s []advert.Store) { s[1].Primitive, s[1].KeyWrite = dta.KeyWrite, s[0].KeyWrite })},
		{"a head of a list beyond the store's", mutate(func(s []advert.Store) { s[3].Heads[1].List = 4 })},
		{"heads out of list order", mutate(func(s []advert.Store) { s[3].Heads[0].List = 3 })},
		{"a head of a store that is not Append", mutate(func(s []advert.Store) { s[0].Heads = []advert.ListHead{{List: 0, Head: 1}} })},
	} {
		t.Run(tc.name+" is rejected", func(t *testing.T) {
			if _, err := advert.Decode(tc.b); !errors.Is(err, advert.ErrAdvert) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	for i := range good {
		if _, err := advert.Decode(good[:i]); !errors.Is(err, advert.ErrAdvert) {
			t.Fatalf("a message cut at %d bytes: err = %v", i, err)
		}
	}
}

func TestTooManyHeadsAreMarkedAndRefused(t *testing.T) {
	s := sample()
	s[3].Append.Lists = advert.MaxHeads + 1
	s[3].Heads = make([]advert.ListHead, advert.MaxHeads+1)
	for i := range s[3].Heads {
		s[3].Heads[i] = advert.ListHead{List: uint32(i), Head: 1}
	}
	b, err := advert.Encode(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := advert.Decode(b); !errors.Is(err, advert.ErrTooManyHeads) || !errors.Is(err, advert.ErrAdvert) {
		t.Fatalf("err = %v, want ErrTooManyHeads", err)
	}
}

func TestEncodeRefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(s []advert.Store)
	}{
		{"no stores", nil},
		{"an empty name", func(s []advert.Store) { s[0].Name = "" }},
		{"a value size beyond 16 bits", func(s []advert.Store) { s[0].KeyWrite.ValueSize = 1 << 16 }},
		{"a redundancy beyond a byte", func(s []advert.Store) { s[1].KeyIncrement.Redundancy = 256 }},
		{"an unknown primitive", func(s []advert.Store) { s[2].Primitive = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s []advert.Store
			if tc.f != nil {
				s = sample()
				tc.f(s)
			}
			if _, err := advert.Encode(nil, s); !errors.Is(err, advert.ErrAdvert) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	good, err := advert.Encode(nil, sample())
	if err != nil {
		f.Fatal(err)
	}
	one, _ := hex.DecodeString(golden)
	f.Add(good)
	f.Add(one)
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		stores, err := advert.Decode(b)
		if err != nil {
			if !errors.Is(err, advert.ErrAdvert) {
				t.Fatalf("error %v does not wrap ErrAdvert", err)
			}
			return
		}
		again, err := advert.Encode(nil, stores)
		if err != nil {
			t.Fatalf("a decoded advertisement does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding changed the bytes:\n in %x\nout %x", b, again)
		}
	})
}
