package store_test

import (
	"strings"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/wire/dta"
)

func u32(v uint32) *uint32 { return &v }

func TestDescribeRejectsBadConfigs(t *testing.T) {
	kw := func(mod func(*store.Config)) store.Config {
		c := store.Config{Name: "kw", ID: 1, Primitive: "keywrite"}
		mod(&c)
		return c
	}
	for _, tt := range []struct {
		name string
		cfg  store.Config
		key  string // the YAML key the error must start with
	}{
		{"an empty name", kw(func(c *store.Config) { c.Name = "" }), "name"},
		{"a name with capitals", kw(func(c *store.Config) { c.Name = "KW" }), "name"},
		{"a name starting with a dash", kw(func(c *store.Config) { c.Name = "-kw" }), "name"},
		{"a name of 64 characters", kw(func(c *store.Config) { c.Name = strings.Repeat("a", 64) }), "name"},
		{"id 0", kw(func(c *store.Config) { c.ID = 0 }), "id"},
		{"an unknown primitive", kw(func(c *store.Config) { c.Primitive = "sketch" }), "primitive"},
		{"a missing primitive", kw(func(c *store.Config) { c.Primitive = "" }), "primitive"},
		{"an unknown hash", kw(func(c *store.Config) { c.Hash = "md5" }), "hash"},
		{"both memory and slots", kw(func(c *store.Config) { c.Memory = 1 << 20; c.Slots = 1024 }), "memory"},
		{"memory too small for two slots", kw(func(c *store.Config) { c.Memory = 8 }), "memory"},
		{"a slot count that is not a power of two with crc32", kw(func(c *store.Config) { c.Slots = 1000; c.Hash = "crc32" }), "slots"},
		{"one slot", kw(func(c *store.Config) { c.Slots = 1; c.Hash = "crc32c" }), "slots"},
		{"a value size over the wire's maximum", kw(func(c *store.Config) { c.ValueSize = 2000 }), "value_size"},
		{"redundancy 9", kw(func(c *store.Config) { c.Redundancy = 9 }), "redundancy"},
		{"a postcard key in a keywrite store", kw(func(c *store.Config) { c.Hops = 5 }), "hops"},
		{"an append key in a keywrite store", kw(func(c *store.Config) { c.Batch = 4 }), "batch"},
		{"min_value in a keywrite store", kw(func(c *store.Config) { c.MinValue = u32(1) }), "min_value"},
		{"value_size in a keyincrement store", store.Config{Name: "ki", ID: 1, Primitive: "keyincrement", ValueSize: 8}, "value_size"},
		{"memory too small for a keyincrement store", store.Config{Name: "ki", ID: 1, Primitive: "keyincrement", Memory: 15}, "memory"},
		{"slots in a postcard store", store.Config{Name: "pc", ID: 1, Primitive: "postcard", Slots: 8}, "slots"},
		{"9 hops", store.Config{Name: "pc", ID: 1, Primitive: "postcard", Hops: 9}, "hops"},
		{"min_value above max_value", store.Config{Name: "pc", ID: 1, Primitive: "postcard", MinValue: u32(10), MaxValue: u32(5)}, "min_value"},
		{"min_value above the default max_value", store.Config{Name: "pc", ID: 1, Primitive: "postcard", MinValue: u32(1 << 21)}, "min_value"},
		{"max_value equal to the blank encoding", store.Config{Name: "pc", ID: 1, Primitive: "postcard", MaxValue: u32(0xFFFFFFFF)}, "max_value"},
		{"chunks not a power of two with crc32", store.Config{Name: "pc", ID: 1, Primitive: "postcard", Chunks: 1000, Hash: "crc32"}, "chunks"},
		{"memory too small for a postcard store", store.Config{Name: "pc", ID: 1, Primitive: "postcard", Memory: 39}, "memory"},
		{"hash in an append store", store.Config{Name: "ap", ID: 1, Primitive: "append", Hash: "crc32"}, "hash"},
		{"a crc32 hash in a teatable store", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Hash: "crc32"}, "hash"},
		{"65 cells per bucket", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Cells: 65}, "cells"},
		{"a key of 65 bytes", store.Config{Name: "tt", ID: 1, Primitive: "teatable", KeySize: 65}, "key_size"},
		{"one bucket", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Buckets: 1}, "buckets"},
		{"both memory and buckets", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Buckets: 8, Memory: 1 << 20}, "memory"},
		{"memory too small for two buckets", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Memory: 64}, "memory"},
		{"a negative key size with memory", store.Config{Name: "tt", ID: 1, Primitive: "teatable", KeySize: -7, Memory: 1 << 20}, "key_size"},
		{"redundancy in a teatable store", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Redundancy: 2}, "redundancy"},
		{"slots in a teatable store", store.Config{Name: "tt", ID: 1, Primitive: "teatable", Slots: 8}, "slots"},
		{"buckets in a keywrite store", kw(func(c *store.Config) { c.Buckets = 8 }), "buckets"},
		{"redundancy in an append store", store.Config{Name: "ap", ID: 1, Primitive: "append", Redundancy: 2}, "redundancy"},
		{"batch 32", store.Config{Name: "ap", ID: 1, Primitive: "append", Batch: 32}, "batch"},
		{"a ring smaller than two batches", store.Config{Name: "ap", ID: 1, Primitive: "append", Capacity: 7, Batch: 4}, "capacity"},
		{"memory too small for the lists", store.Config{Name: "ap", ID: 1, Primitive: "append", Lists: 4, Memory: 4 << 10 / 16}, "memory"},
		{"entry_size 0 is the default, 1025 too large", store.Config{Name: "ap", ID: 1, Primitive: "append", EntrySize: 1025}, "entry_size"},
		{"memory above 1TiB", store.Config{Name: "ap", ID: 1, Primitive: "append", Lists: 1, Memory: 2 << 40}, "memory"},
		{"capacity and memory", store.Config{Name: "ap", ID: 1, Primitive: "append", Capacity: 64, Memory: 1 << 20}, "memory"},
	} {
		t.Run(tt.name+" is rejected naming "+tt.key, func(t *testing.T) {
			_, err := tt.cfg.Describe()
			if err == nil {
				t.Fatal("Describe succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.key+":") {
				t.Errorf("error %q does not start with %q", err, tt.key+":")
			}
		})
	}
}

func TestDescribeFillsDefaults(t *testing.T) {
	t.Run("a keywrite store gets 2^20 slots of 4-byte values, N=2, crc32c", func(t *testing.T) {
		d, err := (&store.Config{Name: "kw", ID: 7, Primitive: "key-write", Default: true}).Describe()
		want := keywrite.Spec{Slots: 1 << 20, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32C}
		if err != nil || d.KeyWrite != want || d.Primitive != dta.KeyWrite || d.Name != "kw" || d.ID != 7 || !d.Default {
			t.Errorf("Describe = %+v, %v", d, err)
		}
		if d.RegionSize() != 8<<20 {
			t.Errorf("region size %d", d.RegionSize())
		}
	})
	t.Run("a keyincrement store gets 2^20 counters, N=2", func(t *testing.T) {
		d, err := (&store.Config{Name: "ki", ID: 1, Primitive: "keyincrement"}).Describe()
		want := keyincrement.Spec{Slots: 1 << 20, Redundancy: 2, Hash: hashing.CRC32C}
		if err != nil || d.KeyIncrement != want {
			t.Errorf("Describe = %+v, %v", d.KeyIncrement, err)
		}
	})
	t.Run("a postcard store gets 2^18 chunks of 5 hops, N=2, values below 2^20", func(t *testing.T) {
		d, err := (&store.Config{Name: "pc", ID: 1, Primitive: "postcarding"}).Describe()
		want := postcard.Spec{Chunks: 1 << 18, Hops: 5, Redundancy: 2, MinValue: 0, MaxValue: 1<<20 - 1, Hash: hashing.CRC32C}
		if err != nil || d.Postcard != want {
			t.Errorf("Describe = %+v, %v", d.Postcard, err)
		}
	})
	t.Run("an explicit min_value 0 and max_value are kept", func(t *testing.T) {
		d, err := (&store.Config{Name: "pc", ID: 1, Primitive: "postcard", MinValue: u32(0), MaxValue: u32(0xFFFFFFFD), Hash: "crc32c", Chunks: 1000}).Describe()
		if err != nil || d.Postcard.MinValue != 0 || d.Postcard.MaxValue != 0xFFFFFFFD || d.Postcard.Chunks != 1000 || d.Postcard.Hash != hashing.CRC32C {
			t.Errorf("Describe = %+v, %v", d.Postcard, err)
		}
	})
	t.Run("an append store gets 16 lists of 2^16 4-byte entries in batches of 4", func(t *testing.T) {
		d, err := (&store.Config{Name: "ap", ID: 1, Primitive: "append"}).Describe()
		want := appendlist.Spec{Lists: 16, Capacity: 1 << 16, EntrySize: 4, Batch: 4}
		if err != nil || d.Append != want {
			t.Errorf("Describe = %+v, %v", d.Append, err)
		}
	})
	t.Run("the default configs describe one default store per primitive", func(t *testing.T) {
		descs, err := store.DescribeAll(store.DefaultConfigs())
		if err != nil {
			t.Fatal(err)
		}
		seen := map[dta.Primitive]bool{}
		for _, d := range descs {
			if !d.Default || d.Name != d.Primitive.String() || seen[d.Primitive] {
				t.Errorf("%+v", d)
			}
			seen[d.Primitive] = true
			if d.RegionSize() > 16<<20 {
				t.Errorf("default %s store needs %d bytes", d.Name, d.RegionSize())
			}
		}
		if len(seen) != len(dta.Primitives) {
			t.Errorf("%d primitives", len(seen))
		}
	})
}

func TestDescribeSizesFromMemory(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  store.Config
		got  func(store.Descriptor) uint64
		want uint64
	}{
		{"keywrite 1MiB of 8-byte slots is 2^17 slots",
			store.Config{Name: "a", ID: 1, Primitive: "keywrite", Memory: 1 << 20},
			func(d store.Descriptor) uint64 { return d.KeyWrite.Slots }, 1 << 17},
		{"keywrite 1MiB of 12-byte slots rounds down to 2^16 with crc32",
			store.Config{Name: "a", ID: 1, Primitive: "keywrite", Memory: 1 << 20, ValueSize: 8, Hash: "crc32"},
			func(d store.Descriptor) uint64 { return d.KeyWrite.Slots }, 1 << 16},
		{"keywrite 1MiB of 12-byte slots is 87381 slots with crc32c",
			store.Config{Name: "a", ID: 1, Primitive: "keywrite", Memory: 1 << 20, ValueSize: 8, Hash: "crc32c"},
			func(d store.Descriptor) uint64 { return d.KeyWrite.Slots }, 87381},
		{"keyincrement 100KiB is 8192 counters with crc32",
			store.Config{Name: "a", ID: 1, Primitive: "keyincrement", Memory: 100 << 10, Hash: "crc32"},
			func(d store.Descriptor) uint64 { return d.KeyIncrement.Slots }, 8192},
		{"postcard 1MiB of 5-hop chunks is 52428 chunks with crc32c",
			store.Config{Name: "a", ID: 1, Primitive: "postcard", Memory: 1 << 20, Hash: "crc32c"},
			func(d store.Descriptor) uint64 { return d.Postcard.Chunks }, 52428},
		{"append 1MiB over 16 lists of 4-byte entries",
			store.Config{Name: "a", ID: 1, Primitive: "append", Memory: 1 << 20},
			func(d store.Descriptor) uint64 { return d.Append.Capacity }, (1<<16 - 64 - 63) / 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.cfg.Describe()
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.got(d); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
			if d.RegionSize() > uint64(tt.cfg.Memory) {
				t.Errorf("region of %d bytes exceeds memory %d", d.RegionSize(), tt.cfg.Memory)
			}
		})
	}
}

func TestATeaTableStoreIsSizedByItsGeometry(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  store.Config
		want tea.Spec
	}{
		{"the defaults are 2^14 buckets of 8 cells of 13-byte keys and 6-byte values",
			store.Config{Name: "tt", ID: 9, Primitive: "teatable"},
			tea.Spec{Buckets: 1 << 14, Cells: 8, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}},
		{"every field given is kept",
			store.Config{Name: "tt", ID: 9, Primitive: "teatable", Buckets: 1000, Cells: 4, KeySize: 37, ValueSize: 2, Scratchpad: 1500, Hash: "crc64"},
			tea.Spec{Buckets: 1000, Cells: 4, KeySize: 37, ValueSize: 2, Scratchpad: 1500, Hash: tea.CRC64}},
		{"memory gives as many whole rows as fit",
			store.Config{Name: "tt", ID: 9, Primitive: "teatable", Memory: 1 << 20, Cells: 4},
			tea.Spec{Buckets: (1 << 20) / ((2*4*20 + 7) &^ 7), Cells: 4, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.cfg.Describe()
			if err != nil {
				t.Fatal(err)
			}
			if d.Primitive != dta.TeaTable || d.TeaTable != tt.want {
				t.Fatalf("got %v %+v, want %+v", d.Primitive, d.TeaTable, tt.want)
			}
			if d.RegionSize() != tt.want.TableSize() {
				t.Errorf("region of %d bytes for a table of %d", d.RegionSize(), tt.want.TableSize())
			}
			if tt.cfg.Memory != 0 && d.RegionSize() > uint64(tt.cfg.Memory) {
				t.Errorf("region of %d bytes exceeds memory %v", d.RegionSize(), tt.cfg.Memory)
			}
		})
	}
}

func TestDescribeAll(t *testing.T) {
	base := func() []store.Config {
		return []store.Config{
			{Name: "a", ID: 1, Primitive: "keywrite", Default: true, Slots: 256},
			{Name: "b", ID: 2, Primitive: "keywrite", Slots: 256},
			{Name: "c", ID: 3, Primitive: "append", Default: true, Capacity: 64},
		}
	}
	t.Run("distinct stores are described in order", func(t *testing.T) {
		descs, err := store.DescribeAll(base())
		if err != nil || len(descs) != 3 || descs[1].Name != "b" || descs[2].Primitive != dta.Append {
			t.Errorf("DescribeAll = %+v, %v", descs, err)
		}
	})
	for _, tt := range []struct {
		name   string
		modify func([]store.Config) []store.Config
		want   string
	}{
		{"no stores", func([]store.Config) []store.Config { return nil }, "stores:"},
		{"a duplicate name", func(c []store.Config) []store.Config { c[1].Name = "a"; return c }, "stores[1] (a): name:"},
		{"a duplicate id", func(c []store.Config) []store.Config { c[2].ID = 1; return c }, "stores[2] (c): id:"},
		{"two defaults for one primitive", func(c []store.Config) []store.Config { c[1].Default = true; return c }, "stores[1] (b): default:"},
		{"an invalid store", func(c []store.Config) []store.Config { c[2].Batch = 99; return c }, "stores[2] (c): batch:"},
		{"more than 1024 stores", func([]store.Config) []store.Config { return make([]store.Config, 1025) }, "stores:"},
	} {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			_, err := store.DescribeAll(tt.modify(base()))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestByteSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want store.ByteSize
	}{
		{"0", 0}, {"4096", 4096}, {"4096B", 4096}, {"64KiB", 64 << 10}, {"512MiB", 512 << 20}, {"3GiB", 3 << 30},
		{"1TiB", 1 << 40}, {" 8 MiB ", 8 << 20}, {"16777215TiB", 16777215 << 40},
	} {
		t.Run("parses "+tt.in, func(t *testing.T) {
			got, err := store.ParseByteSize(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
			var u store.ByteSize
			if err := u.UnmarshalText([]byte(tt.in)); err != nil || u != tt.want {
				t.Errorf("UnmarshalText(%q) = %d, %v", tt.in, u, err)
			}
		})
	}
	for _, tt := range []struct{ in, want string }{
		{"", "want a whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB"},
		{"MiB", "want a whole number"},
		{"-1", "want a whole number"},
		{"-1GiB", "want a whole number"},
		{"1.5GiB", "want a whole number"},
		{"0x10", "want a whole number"},
		{"1e6", "want a whole number"},
		{"1 PiB", `unknown unit "PiB"`},
		{"12 bytes", `unknown unit "bytes"`},
		{"10 potatoes", `unknown unit "potatoes"`},
		{"64kib", "write 64KiB (units are case-sensitive"},
		{"16777216TiB", "too large"},
		// Decimal units are refused, not read as binary ones.
		{"1GB", "decimal units (KB, MB, GB, TB) are not accepted: write 1GiB for 1073741824 bytes, or 1000000000 for 1×10^9"},
		{"3G", "write 3GiB for 3221225472 bytes, or 3000000000 for 3×10^9"},
		{"64KB", "write 64KiB for 65536 bytes, or 64000"},
		{"64K", "write 64KiB"},
		{"64kB", "write 64KiB"},
		{"512MB", "write 512MiB"},
		{"2TB", "write 2TiB"},
		{"1t", "write 1TiB"},
		{"18446744073709551615TB", "decimal units"},
	} {
		t.Run("refuses "+tt.in+" saying what is accepted", func(t *testing.T) {
			got, err := store.ParseByteSize(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseByteSize(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), "B, KiB, MiB, GiB or TiB") && !strings.Contains(err.Error(), "too large") {
				t.Errorf("ParseByteSize(%q): %v does not list the accepted units", tt.in, err)
			}
			u := store.ByteSize(7)
			if err := u.UnmarshalText([]byte(tt.in)); err == nil || u != 7 {
				t.Errorf("UnmarshalText(%q) changed the value or succeeded", tt.in)
			}
		})
	}
	t.Run("String uses the largest exact binary unit and parses back", func(t *testing.T) {
		for v, want := range map[store.ByteSize]string{
			0: "0B", 1: "1B", 1023: "1023B", 1024: "1KiB", 1536: "1536B", 3 << 30: "3GiB", 1<<40 + 1<<30: "1025GiB", 5 << 40: "5TiB",
		} {
			if got := v.String(); got != want {
				t.Errorf("%d.String() = %q, want %q", uint64(v), got, want)
			}
			if back, err := store.ParseByteSize(v.String()); err != nil || back != v {
				t.Errorf("ParseByteSize(%q) = %d, %v", v.String(), back, err)
			}
		}
	})
}

func TestMemoryBeyondAPrimitivesLargestGeometryIsRefused(t *testing.T) {
	c := store.Config{Name: "a", ID: 1, Primitive: "keywrite", Memory: 1 << 40}
	_, err := c.Describe()
	if err == nil || !strings.Contains(err.Error(), "more than a keywrite store can use") {
		t.Errorf("1 TiB for a keywrite store: %v, want a refusal (it would silently be 32 GiB)", err)
	}
}
