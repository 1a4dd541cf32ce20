package roce_test

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hx decodes hex written for people: spaces, newlines, '|' and '.' are
// ignored.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\n', '\t', '|', '.':
			return -1
		}
		return r
	}, s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// pcapRecord is one frame of a classic pcap file.
type pcapRecord struct {
	ts   time.Time
	orig int // original length on the wire
	data []byte
}

// readPcap is a minimal classic-pcap reader (either byte order, micro- or
// nanosecond timestamps) for the reference captures.
func readPcap(t testing.TB, path string) (linkType uint32, recs []pcapRecord) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 {
		t.Fatalf("%s: %d bytes, too short for a pcap header", path, len(b))
	}
	var bo binary.ByteOrder = binary.LittleEndian
	nanos := false
	switch binary.LittleEndian.Uint32(b) {
	case 0xA1B2C3D4:
	case 0xA1B23C4D:
		nanos = true
	default:
		bo = binary.BigEndian
		switch binary.BigEndian.Uint32(b) {
		case 0xA1B2C3D4:
		case 0xA1B23C4D:
			nanos = true
		default:
			t.Fatalf("%s: not a classic pcap file (magic %x)", path, b[:4])
		}
	}
	if major := bo.Uint16(b[4:]); major != 2 {
		t.Fatalf("%s: pcap version %d, want 2", path, major)
	}
	linkType = bo.Uint32(b[20:])
	for off := 24; off < len(b); {
		if len(b)-off < 16 {
			t.Fatalf("%s: truncated record header at %d", path, off)
		}
		sec, frac := bo.Uint32(b[off:]), bo.Uint32(b[off+4:])
		incl, orig := int(bo.Uint32(b[off+8:])), int(bo.Uint32(b[off+12:]))
		off += 16
		if incl > len(b)-off {
			t.Fatalf("%s: truncated record at %d", path, off)
		}
		ns := int64(frac) * 1000
		if nanos {
			ns = int64(frac)
		}
		recs = append(recs, pcapRecord{ts: time.Unix(int64(sec), ns), orig: orig, data: b[off : off+incl]})
		off += incl
	}
	return linkType, recs
}

// sharedDir locates the project's shared/ directory: $DTA_SHARED, or
// ../shared next to the module root.
func sharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("DTA_SHARED"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root (go.mod) not found above the test directory")
		}
		dir = parent
	}
}

// sharedFile returns a file under shared/, skipping the test if it is absent.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not available (set DTA_SHARED to the shared/ directory): %v", rel, err)
	}
	return p
}
