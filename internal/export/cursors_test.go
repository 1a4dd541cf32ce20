package export

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

func TestARestartedExporterResumesFromItsCursorFile(t *testing.T) {
	f := newFixture(t, 2, 1024)
	cursor := filepath.Join(t.TempDir(), "export-cursors.json")
	cfg := Config{Topics: Topics{Append: topicAppend}, CursorFile: cursor}
	_, stop := f.start(t, cfg)
	for i := range 100 {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 2), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	if recs := consume(t, f.cluster.ListenAddrs(), topicAppend, 100, 20*time.Second); len(recs) != 100 {
		t.Fatalf("consumed %d, want 100", len(recs))
	}
	stop() // saves the cursors: 50 and 50
	b, err := os.ReadFile(cursor)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != `{"version":1,"stores":{"append":[50,50]}}` {
		t.Fatalf("cursor file %s", got)
	}
	// Ten more entries while no exporter runs; the next one sends only those.
	for i := 100; i < 110; i++ {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 2), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	e, _ := f.start(t, cfg)
	recs := consume(t, f.cluster.ListenAddrs(), topicAppend, 111, 3*time.Second)
	if len(recs) != 110 {
		t.Fatalf("consumed %d records in all, want 110 (100 + the 10 new ones, none resent)", len(recs))
	}
	if n := e.Stats().Records[StreamAppend].Load(); n != 10 {
		t.Errorf("the restarted exporter sent %d records, want 10", n)
	}
}

func TestADamagedCursorFileIsRefusedByName(t *testing.T) {
	f := newFixture(t, 2, 1024)
	cursor := filepath.Join(t.TempDir(), "export-cursors.json")
	for _, bad := range []string{`{"version":1,"stores":{"append":[1,2]}}x`, `{"version":9,"stores":{}}`, `{"version":1,"extra":1}`, `[`} {
		os.WriteFile(cursor, []byte(bad), 0o644)
		_, err := New(Config{Brokers: f.cluster.ListenAddrs(), Topics: Topics{Append: topicAppend}, CursorFile: cursor}, f.cat, nil)
		if err == nil || !strings.Contains(err.Error(), cursor) {
			t.Errorf("cursor file %q: error %v, want one naming the file", bad, err)
		}
	}
}

func TestACursorFileOfAnotherGeometryStartsTheListsOver(t *testing.T) {
	f := newFixture(t, 2, 1024)
	cursor := filepath.Join(t.TempDir(), "export-cursors.json")
	os.WriteFile(cursor, []byte(`{"version":1,"stores":{"append":[5,5,5]}}`), 0o644)
	e, err := New(Config{Brokers: f.cluster.ListenAddrs(), Topics: Topics{Append: topicAppend}, CursorFile: cursor}, f.cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.cl.Close()
	if e.Stats().CursorResets.Load() != 1 || e.tails[0].lists[0].next != 0 {
		t.Errorf("cursor resets %d, list 0 at %d: want 1 and 0", e.Stats().CursorResets.Load(), e.tails[0].lists[0].next)
	}
}

func FuzzParseCursors(f *testing.F) {
	for _, s := range []string{`{"version":1,"stores":{"append":[50,50]}}`, `{"version":1,"stores":{}}`, `{"version":1}`, `{}`, `null`, `{"version":1,"stores":{"":[1]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCursors(b)
		if err != nil {
			return
		}
		for name, c := range m {
			if name == "" || len(name) > 255 || len(c) > maxCursorLists {
				t.Fatalf("accepted store %q with %d lists", name, len(c))
			}
		}
	})
}

func TestThePathObserverNeitherBlocksNorAllocates(t *testing.T) {
	e := &Exporter{paths: make(chan pathItem, 4)}
	obs := e.PathObserver([]string{"postcard"})
	var vals [hashing.MaxHops]uint32
	p := postcard.Path{Store: 0, Key: []byte{0, 0, 0, 7}, Values: &vals, Present: 1, Cause: postcard.Complete}
	allocs := testing.AllocsPerRun(100, func() { obs(p) })
	if allocs != 0 {
		t.Errorf("%v allocations per path, want 0", allocs)
	}
	// 101 paths into a queue of 4: 4 queued, 97 dropped and counted.
	if got := e.Stats().Dropped[StreamPaths][DropQueueFull].Load(); got != 97 {
		t.Errorf("%d paths dropped, want 97", got)
	}
}
