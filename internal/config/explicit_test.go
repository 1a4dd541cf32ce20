package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestBadSizesAndDurationsNameTheirKeyAndLine(t *testing.T) {
	const units = "want a whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB (powers of 1024)"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a negative size in a flow mapping", "collector: {history_max_bytes: -1GiB}\n",
			`collector.history_max_bytes (line 1): size "-1GiB": ` + units},
		{"a negative receive buffer", "translator: {recv_buffer: -1}\n",
			`translator.recv_buffer (line 1): size "-1": ` + units},
		{"a size in potatoes", "collector:\n  history_max_bytes: 10 potatoes\n",
			`collector.history_max_bytes (line 2): size "10 potatoes": unknown unit "potatoes": ` + units},
		{"a bad size before another key on its line", "translator: {recv_buffer: lots, readers: 2}\n",
			`translator.recv_buffer (line 1): size "lots"`},
		{"a bad size after another key on its line", "translator: {readers: 2, recv_buffer: lots}\n",
			`translator.recv_buffer (line 1): size "lots"`},
		{"a bad store memory in a list", "stores:\n  - {name: a, id: 1, primitive: keywrite}\n  - {name: b, id: 2, primitive: append, memory: 1 PiB}\n",
			`stores[1].memory (line 3): size "1 PiB": unknown unit "PiB"`},
		{"a bad HTTP body limit", "http:\n  max_body_bytes: 4 megabytes\n", `http.max_body_bytes (line 2): size "4 megabytes"`},
		{"a bad export shadow bound", "export:\n  max_shadow_bytes: 1.5GiB\n", `export.max_shadow_bytes (line 2): size "1.5GiB"`},
		{"a bad size through an alias", "http:\n  max_header_bytes: &s 64KiB\nexport:\n  max_shadow_bytes: &t lots\ntranslator:\n  recv_buffer: *t\n",
			`export.max_shadow_bytes (line 4): size "lots"`},
		{"a store memory in GB", "stores:\n  - {name: a, id: 1, primitive: keywrite, memory: 1GB}\n",
			`stores[0].memory (line 2): size "1GB": decimal units (KB, MB, GB, TB) are not accepted: write 1GiB for 1073741824 bytes, or 1000000000 for 1×10^9; the units are B, KiB, MiB, GiB or TiB (powers of 1024)`},
		{"a receive buffer in M", "translator:\n  recv_buffer: 64M\n", `translator.recv_buffer (line 2): size "64M": decimal units (KB, MB, GB, TB) are not accepted: write 64MiB`},
		{"a size unit in the wrong case", "http:\n  max_header_bytes: 64kib\n", `http.max_header_bytes (line 2): size "64kib": write 64KiB (units are case-sensitive`},
		{"a duration in potatoes", "collector:\n  history_max_age: 10 potatoes\n",
			`collector.history_max_age (line 2): duration "10 potatoes": want a number with a unit (ns, us, ms, s, m or h)`},
		{"a duration without a unit", "http: {read_timeout: 5}\n", `http.read_timeout (line 1): duration "5": want a number with a unit`},
		{"an XDP pause without a unit", "collector:\n  xdp:\n    coalesce: 150\n", `collector.xdp.coalesce (line 3): duration "150"`},
		{"a count with a fraction, which the decoder would cut", "collector:\n  read_loops: 2.7\n", `collector.read_loops (line 2): 2.7 is not a whole number`},
		{"a store's slots with a fraction", "stores:\n  - {name: a, id: 1, primitive: keywrite, slots: 1000.5}\n", `stores[0].slots (line 2): 1000.5 is not a whole number`},
	} {
		t.Run(tc.name+" is refused on one line naming the key", func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line", err)
			}
		})
	}
}

func TestExplicitZerosThatWouldMeanTheDefaultAreRefused(t *testing.T) {
	store := func(prim, kv string) string {
		return "stores:\n  - name: a\n    id: 1\n    primitive: " + prim + "\n    " + kv + "\n"
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a store of 0 slots", "stores:\n  - {name: a, id: 1, primitive: keywrite, slots: 0}\n",
			"stores[0].slots (line 2): 0 is refused: omit the key for the default, 1048576 (keywrite and keyincrement stores; or give memory)"},
		{"a store of 0x0 slots", store("keyincrement", "slots: 0x0"), "stores[0].slots (line 5): 0x0 is refused"},
		{"a store with slots and nothing after", store("keywrite", "slots:"), "stores[0].slots (line 5): an empty value is refused: omit the key for the default, 1048576"},
		{"a store of 0 bytes of memory", store("keywrite", "memory: 0KiB"), "stores[0].memory (line 5): 0KiB is refused: omit the key for a store sized by its count"},
		{"a value size of 0", store("keywrite", "value_size: 0"), "stores[0].value_size (line 5): 0 is refused: omit the key for the default, 4 bytes (6 in a teatable store)"},
		{"a redundancy of 0", store("keywrite", "redundancy: 0"), "stores[0].redundancy (line 5): 0 is refused: omit the key for the default, 2"},
		{"an empty hash", store("keywrite", `hash: ""`), `stores[0].hash (line 5): "" is refused: omit the key for the default, crc32c`},
		{"0 chunks", store("postcard", "chunks: 0"), "stores[0].chunks (line 5): 0 is refused: omit the key for the default, 262144"},
		{"0 hops", store("postcard", "hops: 0"), "stores[0].hops (line 5): 0 is refused: omit the key for the default, 5"},
		{"0 lists", store("append", "lists: 0"), "stores[0].lists (line 5): 0 is refused: omit the key for the default, 16"},
		{"a capacity of 0", store("append", "capacity: 0"), "stores[0].capacity (line 5): 0 is refused: omit the key for the default, 65536"},
		{"an entry size of 0", store("append", "entry_size: 0"), "stores[0].entry_size (line 5): 0 is refused: omit the key for the default, 4"},
		{"a batch of 0", store("append", "batch: 0"), "stores[0].batch (line 5): 0 is refused: omit the key for the default, 4"},
		{"0 rows", store("sketchmerge", "rows: 0"), "stores[0].rows (line 5): 0 is refused: omit the key for the default, 4"},
		{"0 columns", store("sketchmerge", "columns: 0"), "stores[0].columns (line 5): 0 is refused: omit the key for the default, 65536"},
		{"0 epochs", store("sketchmerge", "epochs: 0"), "stores[0].epochs (line 5): 0 is refused: omit the key for the default, 3"},
		{"an empty sketch kind", store("sketchmerge", "kind: ''"), `stores[0].kind (line 5): "" is refused: omit the key for the default, countmin`},
		{"0 buckets", store("teatable", "buckets: 0"), "stores[0].buckets (line 5): 0 is refused: omit the key for the default, 16384"},
		{"0 cells", store("teatable", "cells: 0"), "stores[0].cells (line 5): 0 is refused: omit the key for the default, 8"},
		{"a key size of 0", store("teatable", "key_size: 0"), "stores[0].key_size (line 5): 0 is refused: omit the key for the default, 13"},
		{"a key of another primitive set to 0", store("keywrite", "chunks: 0"), "stores[0].chunks (line 5): 0 is refused: omit the key for the default, 262144 (postcard stores"},
		{"an empty stores key", "log:\n  level: info\nstores:\n", "stores (line 3): an empty value is refused: omit the key for the default stores"},
		{"an empty stores list", "stores: []\n", "stores (line 1): an empty list is refused: omit the key for the default stores"},
		{"a batch size of 0", "translator:\n  batch_size: 0\n", "translator.batch_size (line 2): 0 is refused: omit the key for the default, 64"},
		{"an empty translator transport", "translator:\n  transport: ''\n", `translator.transport (line 2): "" is refused: omit the key for the default, udp`},
		{"an empty collector transport", "collector: {transport: ''}\n", `collector.transport (line 1): "" is refused: omit the key for the default, udp`},
		{"an AF_XDP frame size of 0", "translator:\n  xdp:\n    frame_size: 0\n", "translator.xdp.frame_size (line 3): 0 is refused: omit the key for the default, 2048"},
		{"0 AF_XDP frames", "collector:\n  xdp:\n    frames: 0\n", "collector.xdp.frames (line 3): 0 is refused: omit the key for the default, 4096"},
		{"an AF_XDP ring of 0", "collector:\n  xdp:\n    rx_ring: 0\n", "collector.xdp.rx_ring (line 3): 0 is refused: omit the key for the default, 4096"},
		{"an empty attach mode", "translator:\n  xdp: {attach_mode: ''}\n", `translator.xdp.attach_mode (line 2): "" is refused: omit the key for the default, auto`},
		{"an empty bind mode", "collector:\n  xdp: {bind_mode: ''}\n", `collector.xdp.bind_mode (line 2): "" is refused: omit the key for the default, auto`},
		{"a frame size of 0 merged in", "translator:\n  xdp:\n    <<: {frame_size: 0}\n", "translator.xdp.frame_size (line 3): 0 is refused"},
		{"an empty list of initial TTLs", "int:\n  initial_ttls: []\n", "int.initial_ttls (line 2): an empty list is refused: omit the key for the default, [64, 128, 255]"},
		{"an empty export client id", "export:\n  client_id: ''\n", `export.client_id (line 2): "" is refused: omit the key for the default, dta`},
		{"an empty export format", "export:\n  format: ''\n", `export.format (line 2): "" is refused: omit the key for the default, protobuf`},
		{"an empty export compression", "export:\n  compression: ''\n", `export.compression (line 2): "" is refused: omit the key for the default, snappy`},
		{"no records in flight", "export:\n  max_in_flight: 0\n", "export.max_in_flight (line 2): 0 is refused: omit the key for the default, 100000"},
		{"an export path queue of 0", "export:\n  path_queue: 0\n", "export.path_queue (line 2): 0 is refused: omit the key for the default, 65536"},
		{"an export poll interval of 0s", "export:\n  poll_interval: 0s\n", "export.poll_interval (line 2): 0s is refused: omit the key for the default, 100ms"},
		{"an export shadow of 0 bytes", "export:\n  max_shadow_bytes: 0\n", "export.max_shadow_bytes (line 2): 0 is refused: omit the key for the default, 1GiB"},
		{"an export linger of 0s", "export:\n  linger: 0s\n", "export.linger (line 2): 0s is refused: omit the key for the default, 5ms"},
		{"an export shutdown timeout of 0s", "export:\n  shutdown_timeout: 0s\n", "export.shutdown_timeout (line 2): 0s is refused: omit the key for the default, 5s"},
	} {
		t.Run(tc.name+" is refused saying what leaving it out gives", func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestZerosWithAMeaningOfTheirOwnAreAccepted(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(f *File) bool
	}{
		{"readers 0 is one per CPU", "translator:\n  readers: 0\n", func(f *File) bool { return f.Translator.Readers == 0 }},
		{"recv_buffer 0 is the kernel's buffer", "translator:\n  recv_buffer: 0\n", func(f *File) bool { return f.IngestConfig().UDP.RecvBuffer == 0 }},
		{"ack_port 0 is the report's source port", "translator:\n  ack_port: 0\n", func(f *File) bool { return f.Translator.AckPort == 0 }},
		{"source_rate 0 is no limit", "translator:\n  source_rate: 0\n  source_burst: 0\n", func(f *File) bool { return f.Translator.SourceRate == 0 }},
		{"xdp queues 0 is all", "translator:\n  xdp:\n    queues: 0\n", func(f *File) bool { return f.Translator.XDP.Queues == 0 }},
		{"xdp coalesce 0s is no pause", "translator:\n  xdp:\n    coalesce: 0s\n", func(f *File) bool { return *f.Translator.XDP.Coalesce == 0 }},
		{"collector tx_frames 0 is the UDP socket", "collector:\n  xdp:\n    tx_frames: 0\n", func(f *File) bool { return *f.Collector.XDP.TXFrames == 0 }},
		{"history_max_bytes 0 is no bound", "collector:\n  history_max_bytes: 0\n  history_max_age: 0s\n", func(f *File) bool { return f.Collector.HistoryMaxBytes == 0 }},
		{"changes_interval 0s is the checkpoint interval", "export:\n  changes_interval: 0s\n", func(f *File) bool { return f.Export.ChangesInterval == 0 }},
		{"max_streams 0 is no streams", "http:\n  max_streams: 0\n", func(f *File) bool { return f.HTTPLimits().MaxStreams == 0 }},
		{"an empty INT store leaves that part out", "int:\n  drop_store: ''\n", func(f *File) bool { return f.INT.DropStore == "" }},
		{"a postcard min_value of 0 is a value", "stores:\n  - {name: p, id: 1, primitive: postcard, min_value: 0, max_value: 7}\n",
			func(f *File) bool { return *f.Stores[0].MinValue == 0 }},
		{"a TEA scratchpad of 0 is none", "stores:\n  - {name: t, id: 1, primitive: teatable, scratchpad: 0}\n", func(f *File) bool { return f.Stores[0].Scratchpad == 0 }},
		{"a zero merged in and set again is the value set", "translator:\n  xdp:\n    <<: {frame_size: 0}\n    frame_size: 4096\n",
			func(f *File) bool { return f.Translator.XDP.FrameSize == 4096 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(f) {
				t.Errorf("the value did not reach the configuration")
			}
		})
	}
}

func TestPrintedStoresReadBack(t *testing.T) {
	src := "stores:\n" +
		"  - {name: kw, id: 1, primitive: keywrite, memory: 1MiB, value_size: 8}\n" +
		"  - {name: ki, id: 2, primitive: keyincrement, slots: 1024, hash: crc32}\n" +
		"  - {name: pc, id: 3, primitive: postcard, chunks: 1024, min_value: 0, max_value: 255}\n" +
		"  - {name: ap, id: 4, primitive: append, lists: 2, capacity: 64}\n" +
		"  - {name: sm, id: 5, primitive: sketchmerge, rows: 2, columns: 64, kind: countsketch}\n" +
		"  - {name: tt, id: 6, primitive: teatable, buckets: 64, scratchpad: 0}\n"
	for _, tc := range []struct {
		name string
		f    func() (*File, error)
	}{
		{"the embedded defaults", func() (*File, error) { return Default(), nil }},
		{"stores of every primitive", func() (*File, error) { return Parse([]byte(src)) }},
	} {
		t.Run(tc.name+" print as YAML that reads back", func(t *testing.T) {
			f, err := tc.f()
			if err != nil {
				t.Fatal(err)
			}
			b, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(b)
			if err != nil {
				t.Fatalf("the printed configuration does not read back: %v\n%s", err, b)
			}
			if !reflect.DeepEqual(back.Stores, f.Stores) {
				t.Errorf("stores changed on the way back:\n%+v\n%+v", f.Stores, back.Stores)
			}
		})
	}
}

// A value out of range (checked after decoding) is refused with the line
// its key is set on, as a value the decoder refuses is; an error about a
// key the file does not set (a default's) has no line to give.
func TestValuesOutOfRangeNameTheirLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a receive buffer above 1GiB", "collector:\n  prefault: false\ntranslator:\n  recv_buffer: 2GiB\n", "translator.recv_buffer: 2147483648 bytes (want 0 for the kernel's default, or up to 1GiB) (line 4)"},
		{"a redundancy above 8 in the second store", "stores:\n  - {name: a, id: 1, primitive: keywrite}\n  - {name: b, id: 2, primitive: keywrite, redundancy: 300}\n", "redundancy: 300 out of range [1, 8] (line 3)"},
		{"an XDP ring that is no power of two", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    rx_ring: 1000\n", "collector.xdp: rx_ring: 1000, want a power of two from 64 to 65536 (line 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
