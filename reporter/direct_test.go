package reporter_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// testCollector is a collector's stores behind a real RoCEv2 responder on
// loopback, as `dta collector` serves them.
type testCollector struct {
	cat  *store.Catalog
	addr netip.AddrPort
}

// startCollector serves a default Key-Write store of slots slots and 4-byte
// values, and a Key-Write store "wide" of valueSize-byte values.
func startCollector(t testing.TB, slots uint64, valueSize int) *testCollector {
	t.Helper()
	descs, err := store.DescribeAll([]store.Config{
		{Name: "keywrite", ID: 1, Primitive: "keywrite", Default: true, Slots: slots, ValueSize: 4, Redundancy: 4},
		{Name: "wide", ID: 2, Primitive: "keywrite", Slots: slots, ValueSize: valueSize, Redundancy: 4},
		{Name: "counters", ID: 3, Primitive: "keyincrement", Default: true, Slots: 64, Redundancy: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Timeout = 20 * time.Millisecond
	resp, err := collector.NewResponder(cat, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	t.Cleanup(func() {
		resp.Close()
		<-done
	})
	return &testCollector{cat: cat, addr: resp.LocalAddr()}
}

// query looks key up in store name the way the query API does.
func (c *testCollector) query(t testing.TB, name string, key dta.Key, n int) keywrite.Result {
	t.Helper()
	b := key.Bytes
	if key.Compat {
		kb := keywrite.CompatKey(key.U32())
		b = kb[:]
	}
	r, err := c.cat.ByName(name).KeyWrite.Query(b, n, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dialDirect(t testing.TB, cas bool, store string, cols ...*testCollector) *reporter.Direct {
	t.Helper()
	cfg := reporter.DefaultDirectConfig()
	for i, c := range cols {
		cfg.Collectors = append(cfg.Collectors, partition.Member{Name: fmt.Sprintf("c%d", i+1), Addr: c.addr})
	}
	cfg.CompareSwap, cfg.Store = cas, store
	cfg.Requester.Timeout = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := reporter.DialDirect(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func flushDirect(t testing.TB, d *reporter.Direct) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func compatKey(k uint32) dta.Key { return dta.Key{Compat: true, Bytes: u32(k)} }

func TestDirectKeysLandOnTheCollectorThePartitionNames(t *testing.T) {
	for _, cas := range []bool{false, true} {
		t.Run(fmt.Sprintf("compare-swap %v", cas), func(t *testing.T) {
			c1, c2 := startCollector(t, 4096, 12), startCollector(t, 4096, 12)
			d := dialDirect(t, cas, "", c1, c2)
			byName := map[string]*testCollector{"c1": c1, "c2": c2}
			keys := []dta.Key{compatKey(7), compatKey(1 << 30), {Bytes: []byte("a longer, extended key")}}
			for i := range uint32(40) {
				keys = append(keys, compatKey(1000+i))
			}
			for i, k := range keys {
				if err := d.KeyWrite(k, u32(uint32(i)+100), 2); err != nil {
					t.Fatal(err)
				}
			}
			flushDirect(t, d)
			for i, k := range keys {
				owner := d.Owner(k)
				for name, c := range byName {
					r := c.query(t, "keywrite", k, 2)
					switch {
					case name == owner && (r.Status != keywrite.Found || binary.BigEndian.Uint32(r.Value) != uint32(i)+100 || r.Votes != 2):
						t.Errorf("key %v on its owner %s: %v %x (%d votes)", k, name, r.Status, r.Value, r.Votes)
					case name != owner && r.Status != keywrite.Empty:
						t.Errorf("key %v found on %s, which does not own it", k, name)
					}
				}
			}
			cs := d.Collectors()
			if cs[0].Keys+cs[1].Keys != uint64(len(keys)) || cs[0].Keys == 0 || cs[1].Keys == 0 {
				t.Errorf("keys per collector %+v", cs)
			}
			if st := d.Stats(); cas && (st.Swaps.Load() != uint64(len(keys)) || st.SwapsWon.Load() != uint64(len(keys))) {
				t.Errorf("%d swaps, %d won; want %d each (a nearly empty store)", st.Swaps.Load(), st.SwapsWon.Load(), len(keys))
			}
		})
	}
}

// The reporter's slots are the translator's: the same offsets and bytes as
// keywrite.Spec.Translate, for both hash families, compat and extended
// keys, power-of-two slot counts and others, and every value size class.
func TestDirectSlotsAreTheTranslatorsSlots(t *testing.T) {
	for _, vs := range []int{1, 4, 5, 12, 20} {
		for _, slots := range []uint64{1024, 1000} {
			c := startCollectorHash(t, slots, vs, "crc32c")
			d := dialDirect(t, false, "wide", c)
			spec := c.cat.ByName("wide").KeyWrite.Spec()
			var b memop.Batch
			for i := range 50 {
				key := compatKey(uint32(i * 7919))
				hk := keywrite.CompatKey(key.U32())
				hashed := hk[:]
				if i%2 == 1 {
					key = dta.Key{Bytes: []byte(fmt.Sprintf("flow-%d", i))}
					hashed = key.Bytes
				}
				value := make([]byte, vs)
				for j := range value {
					value[j] = byte(i + j + 1)
				}
				before := snapshot(t, c.cat.ByName("wide").Region)
				if err := d.KeyWrite(key, value, 3); err != nil {
					t.Fatal(err)
				}
				flushDirect(t, d)
				// What a translator would have written, applied to the
				// memory as it was.
				b.Reset()
				if err := spec.Translate(&b, 0, hashed, value, 3, false); err != nil {
					t.Fatal(err)
				}
				for _, op := range b.Ops {
					copy(before[op.Offset:], op.Data)
				}
				if got := snapshot(t, c.cat.ByName("wide").Region); string(got) != string(before) {
					t.Fatalf("value size %d, %d slots, key %v: memory differs from the translator's writes", vs, slots, key)
				}
			}
		}
	}
	// The prototype's crc32 family, on a power-of-two store.
	c := startCollectorHash(t, 1024, 4, "crc32")
	d := dialDirect(t, false, "wide", c)
	if err := d.KeyWrite(compatKey(42), u32(4242), 2); err != nil {
		t.Fatal(err)
	}
	flushDirect(t, d)
	if r := c.query(t, "wide", compatKey(42), 2); r.Status != keywrite.Found || r.Votes != 2 {
		t.Fatalf("crc32 store: %+v", r)
	}
}

func startCollectorHash(t testing.TB, slots uint64, valueSize int, hash string) *testCollector {
	t.Helper()
	descs, err := store.DescribeAll([]store.Config{
		{Name: "wide", ID: 2, Primitive: "keywrite", Default: true, Slots: slots, ValueSize: valueSize, Redundancy: 4, Hash: hash},
	})
	if err != nil {
		t.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	resp, err := collector.NewResponder(cat, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	t.Cleanup(func() {
		resp.Close()
		<-done
	})
	return &testCollector{cat: cat, addr: resp.LocalAddr()}
}

func snapshot(t testing.TB, r *region.Region) []byte {
	t.Helper()
	b := make([]byte, r.Size())
	if err := r.Read(0, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// DART's §7 rule, over RoCEv2: the first copy always, later copies only
// into empty slots; a long slot is written whole after its swap won; a key
// written again replaces its own copies.
func TestDirectCompareSwapWritesLaterCopiesOnlyIntoEmptySlots(t *testing.T) {
	c := startCollector(t, 1024, 12)
	d := dialDirect(t, true, "wide", c)
	wide := c.cat.ByName("wide")
	spec := wide.KeyWrite.Spec()
	key := compatKey(77)
	hk := keywrite.CompatKey(77)
	k := spec.Hash.Key(hk[:])
	off0, off1 := spec.Offset(k, 0), spec.Offset(k, 1)
	if off0 == off1 {
		t.Skip("key 77's copies share a slot")
	}
	// Copy 1's slot holds another key.
	other := make([]byte, 16)
	binary.LittleEndian.PutUint32(other, 0xDEADBEEF)
	copy(other[4:], "someone else")
	if err := wide.Region.Write(off1, other); err != nil {
		t.Fatal(err)
	}
	value := []byte("twelve bytes")
	if err := d.KeyWrite(key, value, 2); err != nil {
		t.Fatal(err)
	}
	flushDirect(t, d)
	got := make([]byte, 16)
	wide.Region.Read(off1, got)
	if string(got) != string(other) {
		t.Errorf("the taken slot was overwritten: % x", got)
	}
	wide.Region.Read(off0, got)
	if binary.LittleEndian.Uint32(got) != k.Checksum() || string(got[4:]) != string(value) {
		t.Errorf("copy 0: % x", got)
	}
	st := d.Stats()
	if st.SwapsTaken.Load() != 1 || st.SwapsWon.Load() != 0 {
		t.Errorf("swaps: %d taken, %d won; want 1 and 0", st.SwapsTaken.Load(), st.SwapsWon.Load())
	}
	// Freed, the slot is taken whole by the next write; written again, the
	// key's copies all carry the new value.
	wide.Region.Write(off1, make([]byte, 16))
	for _, v := range []string{"first value!", "second value"} {
		if err := d.KeyWrite(key, []byte(v), 2); err != nil {
			t.Fatal(err)
		}
		flushDirect(t, d)
		r := c.query(t, "wide", key, 2)
		if r.Status != keywrite.Found || string(r.Value) != v || r.Votes != 2 {
			t.Errorf("after writing %q: %v %q (%d votes)", v, r.Status, r.Value, r.Votes)
		}
	}
	if st.SwapsWon.Load() != 1 || st.SwapsRewritten.Load() != 1 {
		t.Errorf("swaps: %d won, %d rewritten; want 1 and 1", st.SwapsWon.Load(), st.SwapsRewritten.Load())
	}
}

func TestDirectRefusesWhatTheStoreCannotTake(t *testing.T) {
	c := startCollector(t, 1024, 8) // "wide" has 12-byte slots
	d := dialDirect(t, false, "", c)
	if err := d.KeyWrite(compatKey(1), []byte{1, 2, 3}, 2); !errors.Is(err, reporter.ErrValueSize) {
		t.Errorf("a 3-byte value: %v", err)
	}
	if err := d.KeyWrite(compatKey(1), u32(1), 5); !errors.Is(err, reporter.ErrRedundancy) {
		t.Errorf("5 copies of a store of 4: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := reporter.DefaultDirectConfig()
	cfg.Collectors = []partition.Member{{Name: "c1", Addr: c.addr}}
	cfg.Store = "nope"
	if _, err := reporter.DialDirect(ctx, cfg, nil); !errors.Is(err, reporter.ErrNoStore) {
		t.Errorf("a missing store: %v", err)
	}
	cfg.Store, cfg.CompareSwap = "wide", true
	if _, err := reporter.DialDirect(ctx, cfg, nil); err == nil {
		t.Error("compare-and-swap on 12-byte slots was accepted")
	}
	cfg.Store = "counters"
	if _, err := reporter.DialDirect(ctx, cfg, nil); !errors.Is(err, reporter.ErrNoStore) {
		t.Errorf("a Key-Increment store as the Key-Write store: %v", err)
	}
	cfg.Store, cfg.CompareSwap = "", false
	for id, ok := range map[uint16]bool{2: true, 3: false, 9: false} {
		cfg.StoreID = id
		d, err := reporter.DialDirect(ctx, cfg, nil)
		if (err == nil) != ok {
			t.Errorf("store id %d: %v", id, err)
		}
		if err == nil {
			if err := d.KeyWrite(compatKey(1), make([]byte, 8), 2); err != nil {
				t.Errorf("store id %d takes 8-byte values: %v", id, err)
			}
			d.Close()
		}
	}
	if err := (reporter.DirectConfig{}).Validate(); err == nil {
		t.Error("a configuration without collectors validated")
	}
	d.Close()
	if err := d.KeyWrite(compatKey(1), u32(1), 2); !errors.Is(err, reporter.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestDirectKeyWriteDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	for _, cas := range []bool{false, true} {
		c1, c2 := startCollector(t, 1<<14, 12), startCollector(t, 1<<14, 12)
		d := dialDirect(t, cas, "", c1, c2)
		var i uint32
		key := dta.Key{Compat: true, Bytes: make([]byte, 4)}
		value := make([]byte, 4)
		write := func() {
			i++
			binary.BigEndian.PutUint32(key.Bytes, i)
			binary.BigEndian.PutUint32(value, i)
			if err := d.KeyWrite(key, value, 2); err != nil {
				t.Fatal(err)
			}
		}
		for range 3000 { // warm: windows wrap, pending swaps and queues grow
			write()
		}
		if n := testing.AllocsPerRun(3000, write); n != 0 {
			t.Errorf("compare-swap %v: KeyWrite allocates %v times per key", cas, n)
		}
		flushDirect(t, d)
	}
}
