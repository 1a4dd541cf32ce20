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
	first := consume(t, f.cluster.ListenAddrs(), topicAppend, 100, 20*time.Second)
	stop() // saves the cursors: 50 and 50, clean
	b, err := os.ReadFile(cursor)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := parseCursors(b)
	if err != nil {
		t.Fatalf("cursor file %s: %v", b, err)
	}
	gen := decodeAppend(t, Protobuf, first[0]).Generation
	if c := saved.stores["append"]; !saved.clean || len(c) != 2 || c[0].acked != 50 || c[1].acked != 50 || c[0].sent != 50 || c[0].gen != gen {
		t.Fatalf("cursor file %s: want both lists at 50, clean, generation %d", b, gen)
	}
	// Ten more entries while no exporter runs; the next one sends only those.
	for i := 100; i < 110; i++ {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 2), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	e, _ := f.start(t, cfg)
	// And ten once it runs: the numbering goes on past the head it found.
	for i := 110; i < 120; i++ {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 2), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	recs := consume(t, f.cluster.ListenAddrs(), topicAppend, 121, 3*time.Second)
	if len(recs) != 120 {
		t.Fatalf("consumed %d records in all, want 120 (100 + the 20 new ones, none resent)", len(recs))
	}
	if n := e.Stats().Records[StreamAppend].Load(); n != 20 {
		t.Errorf("the restarted exporter sent %d records, want 20", n)
	}
	for _, r := range recs {
		if a := decodeAppend(t, Protobuf, r); a.Generation != gen {
			t.Errorf("list %d entry %d in generation %d, want %d: a clean stop goes on with the same numbering", a.List, a.Index, a.Generation, gen)
		}
	}
}

func TestADamagedCursorFileIsRefusedByName(t *testing.T) {
	f := newFixture(t, 2, 1024)
	cursor := filepath.Join(t.TempDir(), "export-cursors.json")
	for _, bad := range []string{`{"version":1,"stores":{"append":[1,2]}}x`, `{"version":9,"stores":{}}`, `{"version":1,"extra":1}`, `[`,
		`{"version":2,"stores":{"append":{"cursors":[1,2],"generations":[7]}}}`,
		`{"version":2,"clean":true,"stores":{"append":{"cursors":[1,2],"generations":[7,7]}}}`,
		`{"version":2,"clean":true,"stores":{"append":{"cursors":[5],"generations":[7],"sent":[4]}}}`,
		`{"version":2,"stores":{"append":{"cursors":[1],"generations":[7],"extra":[1]}}}`} {
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
	f.Add([]byte(`{"version":2,"clean":true,"stores":{"append":{"cursors":[5,6],"generations":[7,7],"starts":[0,3],"previous":[0,6],"sent":[5,9]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCursors(b)
		if err != nil {
			return
		}
		for name, c := range m.stores {
			if name == "" || len(name) > 255 || len(c) > maxCursorLists {
				t.Fatalf("accepted store %q with %d lists", name, len(c))
			}
			for l := range c {
				if m.clean && c[l].sent < c[l].acked {
					t.Fatalf("accepted a clean file with list %d sent %d below its cursor %d", l, c[l].sent, c[l].acked)
				}
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
