package store_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

func advertised(t testing.TB) []store.Advertised {
	t.Helper()
	cfgs := append(store.DefaultConfigs(), store.Config{Name: "tea", ID: 20, Primitive: "teatable", Buckets: 1000, Cells: 4, Scratchpad: 1500})
	descs, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.Advertised, len(descs))
	for i, d := range descs {
		out[i] = store.Advertised{Descriptor: d, VA: 0x7f0000000000 + uint64(i)<<32, RKey: 0x1234 + uint32(i), Length: d.RegionSize()}
	}
	return out
}

func TestAdvertisementRoundTrips(t *testing.T) {
	in := advertised(t)
	b, err := store.AppendAdvertisement(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := store.ParseAdvertisement(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the stores:\n in %+v\nout %+v", in, out)
	}
	if tt := out[len(out)-1]; tt.Primitive != dta.TeaTable || tt.TeaTable.Buckets != 1000 || tt.TeaTable.Scratchpad != 1500 || tt.Length != tt.TeaTable.TableSize() {
		t.Errorf("the TEA table came back as %+v", tt)
	}
}

func TestAdvertisementRejectsWhatItCannotTrust(t *testing.T) {
	good, err := store.AppendAdvertisement(nil, advertised(t))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(s []store.Advertised)) []byte {
		s := advertised(t)
		f(s)
		b, _ := store.AppendAdvertisement(nil, s)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"an empty message", nil},
		{"a wrong magic", append([]byte("XXXX"), good[4:]...)},
		{"an unknown version", append(append([]byte("DTAS"), 9), good[5:]...)},
		{"trailing bytes", append(append([]byte(nil), good...), 0)},
		{"a region too small for its geometry", mutate(func(s []store.Advertised) { s[0].Length = 8 })},
		{"a repeated id", mutate(func(s []store.Advertised) { s[1].ID = s[0].ID })},
		{"a repeated name", mutate(func(s []store.Advertised) { s[1].Name = s[0].Name })},
		{"invalid geometry", mutate(func(s []store.Advertised) { s[0].KeyWrite.Slots = 1 })},
		{"a TEA table of one bucket", mutate(func(s []store.Advertised) { s[len(s)-1].TeaTable.Buckets = 1 })},
		{"a TEA table of an unknown hash", mutate(func(s []store.Advertised) { s[len(s)-1].TeaTable.Hash = 2 })},
		{"a region too small for its TEA table", mutate(func(s []store.Advertised) { s[len(s)-1].Length-- })},
	} {
		t.Run(tc.name+" is rejected", func(t *testing.T) {
			if _, err := store.ParseAdvertisement(tc.b); !errors.Is(err, store.ErrAdvert) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	for i := range good {
		if _, err := store.ParseAdvertisement(good[:i]); err == nil {
			t.Fatalf("a message cut at %d bytes was accepted", i)
		}
	}
}

func FuzzParseAdvertisement(f *testing.F) {
	good, err := store.AppendAdvertisement(nil, advertised(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		stores, err := store.ParseAdvertisement(b)
		if err != nil {
			return
		}
		again, err := store.AppendAdvertisement(nil, stores)
		if err != nil {
			t.Fatalf("a parsed advertisement does not encode: %v", err)
		}
		back, err := store.ParseAdvertisement(again)
		if err != nil || !reflect.DeepEqual(back, stores) {
			t.Fatalf("re-encoding changed the stores: %v", err)
		}
	})
}
