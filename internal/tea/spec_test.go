package tea_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current code")

const goldenPath = "testdata/golden.json"

// figure5 is the paper's Figure 5 geometry: 6 buckets of 2 cells, with an
// MTU-size scratchpad; 4-byte keys and values.
var figure5 = tea.Spec{Buckets: 6, Cells: 2, KeySize: 4, ValueSize: 4, Scratchpad: 1500, Hash: tea.CRC64}

func TestSpecValidateNamesTheField(t *testing.T) {
	ok := figure5
	for _, tc := range []struct {
		name  string
		spec  func(s *tea.Spec)
		field string
	}{
		{"one bucket is too few", func(s *tea.Spec) { s.Buckets = 1 }, "buckets"},
		{"2^40+1 buckets are too many", func(s *tea.Spec) { s.Buckets = 1<<40 + 1 }, "buckets"},
		{"zero cells are too few", func(s *tea.Spec) { s.Cells = 0 }, "cells"},
		{"65 cells are too many", func(s *tea.Spec) { s.Cells = 65 }, "cells"},
		{"an empty key is refused", func(s *tea.Spec) { s.KeySize = 0 }, "key_size"},
		{"a 65-byte key is refused", func(s *tea.Spec) { s.KeySize = 65 }, "key_size"},
		{"a negative value size is refused", func(s *tea.Spec) { s.ValueSize = -1 }, "value_size"},
		{"a scratchpad above the path MTU is refused", func(s *tea.Spec) { s.Scratchpad = 9001 }, "scratchpad"},
		{"an unset hash is refused", func(s *tea.Spec) { s.Hash = 0 }, "hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.spec(&s)
			err := s.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	t.Run("the figure 5 geometry is valid, and so is a value-less set", func(t *testing.T) {
		s := ok
		s.ValueSize = 0
		if err := ok.Validate(); err != nil {
			t.Error(err)
		}
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
	})
}

func TestCRC64IsCRC64XZ(t *testing.T) {
	// The CRC catalogue's check value for CRC-64/XZ: an implementation
	// independent of Go's hash/crc64.
	if got := tea.CRC64.Sum([]byte("123456789")); got != 0x995DC9BBDF1939FA {
		t.Errorf("Sum(123456789) = %#x, want 0x995dc9bbdf1939fa", got)
	}
}

func TestFigure5LayoutByHand(t *testing.T) {
	s := figure5
	// cell 1+4+4 = 9; bucket 18; scratchpad 16+1500 = 1516; row 18+18+1516 = 1552.
	for _, tc := range []struct {
		name      string
		got, want uint64
	}{
		{"a cell is flag, key and value", s.CellSize(), 9},
		{"a bucket is two cells", s.BucketSize(), 18},
		{"a scratchpad is its header and an MTU", s.ScratchpadSize(), 1516},
		{"a row is two buckets and a scratchpad", s.RowSize(), 1552},
		{"the table is six rows", s.TableSize(), 6 * 1552},
		{"bucket 2 starts row 2", s.BucketOffset(2), 2 * 1552},
		{"bucket 2's shadow follows bucket 1", s.ShadowOffset(2), 1552 + 18},
		{"bucket 0's shadow follows bucket 5, the last", s.ShadowOffset(0), 5*1552 + 18},
		{"cell 1 of bucket 3", s.CellOffset(3, 1), 3*1552 + 9},
		{"cell 1 of bucket 3's shadow", s.ShadowCellOffset(3, 1), 2*1552 + 18 + 9},
		{"row 4's scratchpad follows its two buckets", s.ScratchpadOffset(4), 4*1552 + 36},
		{"a lookup without a packet reads two buckets", s.ReadLen(0), 36},
		{"a lookup with a 64-byte packet reads it back", s.ReadLen(64), 36 + 16 + 64},
		{"the next bucket of the last is the first", s.Next(5), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	noPad := s
	noPad.Scratchpad = 0
	noPad.KeySize = 3 // cell 8, bucket 16, row 32: already a multiple of 8
	odd := s
	odd.Scratchpad, odd.KeySize = 0, 5 // cell 10, bucket 20, row 40
	odd.Cells = 3                      // bucket 30, row 60 → 64
	if noPad.RowSize() != 32 || odd.RowSize() != 64 {
		t.Errorf("rows without a scratchpad: %d and %d, want 32 and 64 (padded to 8)", noPad.RowSize(), odd.RowSize())
	}
}

func TestHomeIsUniformAndInRange(t *testing.T) {
	s := tea.Spec{Buckets: 1000, Cells: 4, KeySize: 8, Hash: tea.CRC64}
	counts := make([]int, s.Buckets)
	key := make([]byte, 8)
	const n = 200000
	for i := range n {
		for j := range key {
			key[j] = byte(uint64(i*2654435761) >> (8 * j))
		}
		h := s.HomeOf(key)
		if h >= s.Buckets {
			t.Fatalf("home %d of %d buckets", h, s.Buckets)
		}
		counts[h]++
	}
	for b, c := range counts {
		if c < n/1000/2 || c > n/1000*2 {
			t.Fatalf("bucket %d got %d keys of %d, want about %d", b, c, n, n/1000)
		}
	}
}

func TestCellsRoundTrip(t *testing.T) {
	s := figure5
	cell := make([]byte, s.CellSize())
	s.PutCell(cell, []byte{1, 2, 3, 4}, []byte{5, 6, 7, 8})
	if want := "010102030405060708"; hex.EncodeToString(cell) != want {
		t.Errorf("cell = %x, want %s", cell, want)
	}
	c, err := s.DecodeCell(cell)
	if err != nil || !c.Valid || !bytes.Equal(c.Key, []byte{1, 2, 3, 4}) || !bytes.Equal(c.Value, []byte{5, 6, 7, 8}) {
		t.Errorf("DecodeCell = %+v, %v", c, err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"a short cell is truncated", cell[:8], tea.ErrTruncated},
		{"reserved flag bits are refused", append([]byte{0x03}, cell[1:]...), tea.ErrFlags},
		{"an empty cell decodes to nothing whatever it holds", append([]byte{0}, cell[1:]...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.DecodeCell(tc.b)
			if err != tc.want || c.Valid {
				t.Errorf("DecodeCell = %+v, %v; want invalid, %v", c, err, tc.want)
			}
		})
	}
}

func TestMatchFindsTheKeyInEitherBucketAndNothingElse(t *testing.T) {
	s := figure5
	row := make([]byte, s.ReadLen(0))
	put := func(j int, k, v byte) {
		s.PutCell(row[j*9:(j+1)*9], []byte{k, k, k, k}, []byte{v, v, v, v})
	}
	put(0, 1, 10)
	put(3, 2, 20) // the next bucket's second cell
	put(1, 3, 30)
	row[9] = 0 // cell 1 emptied: key 3 is gone
	for _, tc := range []struct {
		name string
		key  byte
		cell int
		val  byte
	}{
		{"a key in the home bucket", 1, 0, 10},
		{"a key in the next bucket", 2, 3, 20},
		{"a key in an emptied cell is not found", 3, -1, 0},
		{"an absent key is not found", 9, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, v := s.Match(row, []byte{tc.key, tc.key, tc.key, tc.key})
			if j != tc.cell || (j >= 0 && v[0] != tc.val) {
				t.Errorf("Match = %d % x, want %d", j, v, tc.cell)
			}
		})
	}
}

func TestScratchpadRoundTrip(t *testing.T) {
	b := make([]byte, tea.ScratchpadHeaderLen+5)
	tea.PutScratchpadHeader(b, 0x0102030405060708, 5)
	copy(b[16:], "hello")
	if want := "0102030405060708000500000000000068656c6c6f"; hex.EncodeToString(b) != want {
		t.Errorf("scratchpad = %x, want %s", b, want)
	}
	tag, p, err := tea.DecodeScratchpad(b, 1500)
	if err != nil || tag != 0x0102030405060708 || string(p) != "hello" {
		t.Errorf("DecodeScratchpad = %x %q %v", tag, p, err)
	}
	if _, _, err := tea.DecodeScratchpad(b[:20], 1500); err != tea.ErrTruncated {
		t.Errorf("a cut packet: %v, want ErrTruncated", err)
	}
	if _, _, err := tea.DecodeScratchpad(b, 4); err != tea.ErrPacketSize {
		t.Errorf("a packet above the scratchpad: %v, want ErrPacketSize", err)
	}
}

func FuzzDecodeCell(f *testing.F) {
	f.Add([]byte{1, 1, 2, 3, 4, 5, 6, 7, 8}, uint8(4), uint8(4))
	f.Add([]byte{0}, uint8(0), uint8(0))
	f.Add([]byte{2, 0}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, k, v uint8) {
		s := tea.Spec{Buckets: 2, Cells: 1, KeySize: int(k%tea.MaxKeySize) + 1, ValueSize: int(v), Hash: tea.CRC64}
		c, err := s.DecodeCell(b)
		if err != nil {
			return
		}
		if !c.Valid {
			return
		}
		out := make([]byte, s.CellSize())
		s.PutCell(out, c.Key, c.Value)
		if !bytes.Equal(out, b[:s.CellSize()]) {
			t.Fatalf("re-encoded %x, decoded from %x", out, b[:s.CellSize()])
		}
		if j, _ := s.Match(append(out, make([]byte, s.CellSize())...), c.Key); j != 0 {
			t.Fatalf("Match of a decoded key = %d, want 0", j)
		}
	})
}

func FuzzDecodeScratchpad(f *testing.F) {
	f.Add(make([]byte, 16), 100)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		tag, p, err := tea.DecodeScratchpad(b, max)
		if err != nil {
			return
		}
		out := make([]byte, tea.ScratchpadHeaderLen+len(p))
		tea.PutScratchpadHeader(out, tag, len(p))
		copy(out[16:], p)
		if !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("re-encoded %x from %x", out, b)
		}
	})
}

// golden is testdata/golden.json: the hash, home buckets, layouts and cells
// pinned. Any change here moves entries: every stored table breaks.
type golden struct {
	Comment string         `json:"comment"`
	Hashes  []goldenHash   `json:"hashes"`
	Layouts []goldenLayout `json:"layouts"`
	Cells   []goldenCell   `json:"cells"`
}

type goldenHash struct {
	Key   string            `json:"key"`
	CRC64 string            `json:"crc64"`
	Homes map[string]uint64 `json:"homes"` // buckets → home bucket
}

type goldenLayout struct {
	Spec    tea.Spec          `json:"spec"`
	Sizes   map[string]uint64 `json:"sizes"`
	Offsets map[string]uint64 `json:"offsets"`
}

type goldenCell struct {
	KeySize   int    `json:"key_size"`
	ValueSize int    `json:"value_size"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Cell      string `json:"cell"`
}

func goldenKeys() [][]byte {
	keys := [][]byte{
		{0x00},
		{0, 0, 0, 1},
		[]byte("123456789"),
		// IPv4 5-tuple 10.0.0.1:8080 → 10.0.0.2:80, TCP.
		{10, 0, 0, 1, 10, 0, 0, 2, 0x1F, 0x90, 0x00, 0x50, 6},
	}
	v6 := make([]byte, 37) // IPv6 5-tuple 2001:db8::1:8080 → 2001:db8::2:80, UDP
	copy(v6, []byte{0x20, 0x01, 0x0d, 0xb8})
	v6[15] = 1
	copy(v6[16:], []byte{0x20, 0x01, 0x0d, 0xb8})
	v6[31] = 2
	copy(v6[32:], []byte{0x1F, 0x90, 0x00, 0x50, 17})
	long := make([]byte, 64)
	for i := range long {
		long[i] = byte(i)
	}
	return append(keys, v6, long)
}

func computeGolden() golden {
	g := golden{Comment: "Golden vectors of internal/tea: CRC-64/XZ, home buckets, table layouts, cells. " +
		"Regenerate with: go test ./internal/tea -run TestGolden -update. A change here moves every entry of every stored table."}
	for _, k := range goldenKeys() {
		h := goldenHash{Key: hex.EncodeToString(k), CRC64: fmt.Sprintf("%016x", tea.CRC64.Sum(k)), Homes: map[string]uint64{}}
		for _, n := range []uint64{6, 1000, 1 << 20, 80_000_000 / 8} {
			s := tea.Spec{Buckets: n, Cells: 8, KeySize: len(k), Hash: tea.CRC64}
			h.Homes[fmt.Sprint(n)] = s.HomeOf(k)
		}
		g.Hashes = append(g.Hashes, h)
	}
	for _, s := range []tea.Spec{
		figure5,
		{Buckets: 1 << 20, Cells: 8, KeySize: 13, ValueSize: 6, Hash: tea.CRC64},                      // IPv4 NAT, no scratchpad
		{Buckets: 1_250_000, Cells: 8, KeySize: 37, ValueSize: 18, Scratchpad: 1500, Hash: tea.CRC64}, // IPv6 NAT, 10 M entries
	} {
		last := s.Buckets - 1
		g.Layouts = append(g.Layouts, goldenLayout{
			Spec: s,
			Sizes: map[string]uint64{
				"cell": s.CellSize(), "bucket": s.BucketSize(), "scratchpad": s.ScratchpadSize(),
				"row": s.RowSize(), "table": s.TableSize(), "read": s.ReadLen(0), "read_1500": s.ReadLen(1500),
			},
			Offsets: map[string]uint64{
				"bucket_1": s.BucketOffset(1), "shadow_0": s.ShadowOffset(0), "shadow_1": s.ShadowOffset(1),
				"shadow_last": s.ShadowOffset(last), "cell_last_1": s.CellOffset(last, 1),
				"shadow_cell_last_1": s.ShadowCellOffset(last, 1), "scratchpad_last": s.ScratchpadOffset(last),
			},
		})
	}
	for _, c := range []struct{ k, v int }{{4, 4}, {13, 6}, {37, 0}} {
		key, val := make([]byte, c.k), make([]byte, c.v)
		for i := range key {
			key[i] = byte(0xA0 + i)
		}
		for i := range val {
			val[i] = byte(0x10 + i)
		}
		s := tea.Spec{Buckets: 2, Cells: 1, KeySize: c.k, ValueSize: c.v, Hash: tea.CRC64}
		cell := make([]byte, s.CellSize())
		s.PutCell(cell, key, val)
		g.Cells = append(g.Cells, goldenCell{KeySize: c.k, ValueSize: c.v, Key: hex.EncodeToString(key),
			Value: hex.EncodeToString(val), Cell: hex.EncodeToString(cell)})
	}
	return g
}

func TestGolden(t *testing.T) {
	got, err := json.MarshalIndent(computeGolden(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the layout or hash changed: %s differs from the code (go test -run TestGolden -update rewrites it; every stored table breaks)", goldenPath)
	}
}
