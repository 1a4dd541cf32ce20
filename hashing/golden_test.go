package hashing_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dta-go/dta/hashing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current code")

const goldenPath = "testdata/golden.json"

// golden is the file format of testdata/golden.json. Hashes are hex strings
// so that the file reads like the spec's tables.
type golden struct {
	Comment string         `json:"comment"`
	CRC32C  []goldenKeyed  `json:"crc32c"`
	CRC32   []goldenKeyed  `json:"crc32"`
	Hops    []goldenPerHop `json:"hops"`
}

type goldenKeyed struct {
	Key      string   `json:"key"`
	Checksum string   `json:"checksum"`
	Slots    []string `json:"slots"` // raw slot hashes n = 0..MaxCopies-1
}

type goldenPerHop struct {
	Key  string   `json:"key"`
	Hops []string `json:"hops"` // HopChecksum(1..MaxHops, key)
}

// goldenKeys covers compat keys (LE and BE), the empty key, every length
// around the 8-byte loop boundary, 5-tuples and the longest key.
func goldenKeys() [][]byte {
	keys := [][]byte{
		{},
		{0x00},
		le32(0), le32(1), le32(2), le32(1000),
		be32(1), be32(0x0A000065),
		[]byte("dta"),
		{1, 2, 3, 4, 5, 6, 7},
		{1, 2, 3, 4, 5, 6, 7, 8},
		{1, 2, 3, 4, 5, 6, 7, 8, 9},
		// IPv4 5-tuple 10.0.0.1:8080 → 10.0.0.2:80, TCP.
		{10, 0, 0, 1, 10, 0, 0, 2, 0x1F, 0x90, 0x00, 0x50, 6},
	}
	v6 := make([]byte, 37) // IPv6 5-tuple 2001:db8::1 → 2001:db8::2
	copy(v6, []byte{0x20, 0x01, 0x0d, 0xb8})
	v6[15] = 1
	copy(v6[16:], []byte{0x20, 0x01, 0x0d, 0xb8})
	v6[31] = 2
	copy(v6[32:], []byte{0x1F, 0x90, 0x00, 0x50, 17})
	keys = append(keys, v6)
	long := make([]byte, 64)
	for i := range long {
		long[i] = byte(i)
	}
	return append(keys, long)
}

func hex32(v uint32) string { return fmt.Sprintf("%08x", v) }

func computeGolden() golden {
	g := golden{Comment: "Golden vectors of hashing. Regenerate with: go test ./hashing -run TestGolden -update. " +
		"Any change here changes where stores place data: it breaks every existing store and remote translator."}
	for _, key := range goldenKeys() {
		g.CRC32C = append(g.CRC32C, keyedVector(hashing.CRC32C, key))
		g.CRC32 = append(g.CRC32, keyedVector(hashing.CRC32, key))
		hop := goldenPerHop{Key: hex.EncodeToString(key)}
		for h := 1; h <= hashing.MaxHops; h++ {
			hop.Hops = append(hop.Hops, hex32(hashing.HopChecksum(h, key)))
		}
		g.Hops = append(g.Hops, hop)
	}
	return g
}

func keyedVector(a hashing.Algorithm, key []byte) goldenKeyed {
	k := a.Key(key)
	v := goldenKeyed{Key: hex.EncodeToString(key), Checksum: hex32(k.Checksum())}
	for n := range hashing.MaxCopies {
		v.Slots = append(v.Slots, hex32(k.Slot(n)))
	}
	return v
}

// TestGolden compares every hash family's outputs with testdata/golden.json.
// The CRC32 and hop 1..5 entries are also pinned literally by the prototype's
// vectors (TestPrototype*), so -update cannot silently move them.
func TestGolden(t *testing.T) {
	want := computeGolden()
	got, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", goldenPath)
		return
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var file golden
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s: %v", goldenPath, err)
	}
	if bytes.Equal(data, got) {
		return
	}
	// Say which vector moved.
	for _, fam := range []struct {
		name      string
		file, now []goldenKeyed
	}{{"crc32c", file.CRC32C, want.CRC32C}, {"crc32", file.CRC32, want.CRC32}} {
		if len(fam.file) != len(fam.now) {
			t.Errorf("%s: %d vectors in the file, %d computed", fam.name, len(fam.file), len(fam.now))
			continue
		}
		for i := range fam.now {
			f, n := fam.file[i], fam.now[i]
			if f.Key != n.Key || f.Checksum != n.Checksum || fmt.Sprint(f.Slots) != fmt.Sprint(n.Slots) {
				t.Errorf("%s key %s: file has checksum %s slots %v, code gives %s %v",
					fam.name, n.Key, f.Checksum, f.Slots, n.Checksum, n.Slots)
			}
		}
	}
	if len(file.Hops) != len(want.Hops) {
		t.Errorf("hops: %d vectors in the file, %d computed", len(file.Hops), len(want.Hops))
	} else {
		for i := range want.Hops {
			if f, n := file.Hops[i], want.Hops[i]; f.Key != n.Key || fmt.Sprint(f.Hops) != fmt.Sprint(n.Hops) {
				t.Errorf("hop checksums of key %s: file has %v, code gives %v", n.Key, f.Hops, n.Hops)
			}
		}
	}
	if !t.Failed() {
		t.Errorf("%s differs from the computed vectors only in formatting; rerun with -update", goldenPath)
	}
}
