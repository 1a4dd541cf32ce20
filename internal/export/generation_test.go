package export

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// manual builds an exporter over the fixture that does not run: the test
// polls it (pollAppend) when it wants, so it decides what each poll sees.
// crash closes its client without the final send or save, as kill -9 would.
func (f *fixture) manual(t *testing.T, cfg Config) (e *Exporter, crash func()) {
	t.Helper()
	cfg.Brokers = f.cluster.ListenAddrs()
	if cfg.Topics == (Topics{}) {
		cfg.Topics = Topics{Append: topicAppend}
	}
	cfg.Collector = "test-collector"
	e, err := New(cfg, f.cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	crash = func() {
		if !closed {
			closed = true
			e.closing.Store(true)
			e.cl.Close()
		}
	}
	t.Cleanup(crash)
	return e, crash
}

// pollAcked polls e once and waits until the brokers acknowledged what it
// sent.
func pollAcked(t *testing.T, e *Exporter) {
	t.Helper()
	e.pollAppend()
	deadline := time.Now().Add(20 * time.Second)
	for e.Stats().InFlight.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d records still unacknowledged", e.Stats().InFlight.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// appendValues appends each value (4 big-endian bytes) to list 1 and
// flushes.
func (f *fixture) appendValues(t *testing.T, vals ...uint32) {
	t.Helper()
	for _, v := range vals {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: 1, Value: binary.BigEndian.AppendUint32(nil, v)})
	}
	f.flush()
}

// rewindList sets list 1's head to head in the store and in the
// translator, as restoring an older checkpoint (or a reset, for 0) leaves
// them.
func (f *fixture) rewindList(t *testing.T, head uint64) {
	t.Helper()
	st := f.cat.ByName("append")
	if err := st.Region.Store64(st.Append.Spec().HeadOffset(1), head); err != nil {
		t.Fatal(err)
	}
	for i, d := range f.tr.Stores() {
		if d.Name == "append" {
			f.mu.Lock()
			f.tr.ResumeAppend(i, 1, head)
			f.mu.Unlock()
		}
	}
}

// names reads every Append record of list 1 and returns the value each
// name (generation, index) carries, failing the test if one name carries
// two values; gens lists the generations in the order they first appear.
func names(t *testing.T, f *fixture, want int) (byName map[[2]uint64]uint32, gens []uint64) {
	t.Helper()
	recs := consume(t, f.cluster.ListenAddrs(), topicAppend, want, 20*time.Second)
	byName = map[[2]uint64]uint32{}
	for _, r := range recs {
		a := decodeAppend(t, Protobuf, r)
		v := binary.BigEndian.Uint32(a.Data)
		n := [2]uint64{a.Generation, a.Index}
		if old, ok := byName[n]; ok && old != v {
			t.Fatalf("generation %d index %d names two entries: %d and %d", a.Generation, a.Index, old, v)
		}
		if _, ok := byName[n]; !ok && (len(gens) == 0 || gens[len(gens)-1] != a.Generation) {
			gens = append(gens, a.Generation)
		}
		byName[n] = v
	}
	if len(recs) < want {
		t.Fatalf("consumed %d records, want at least %d", len(recs), want)
	}
	return byName, gens
}

// entries renders what generation g holds, by index.
func entries(byName map[[2]uint64]uint32, g uint64) string {
	var s string
	for i := uint64(0); ; i++ {
		v, ok := byName[[2]uint64{g, i}]
		if !ok {
			return s
		}
		s += fmt.Sprintf("%d:%d ", i, v)
	}
}

func TestAResetListStartsANewGenerationSoNoNameIsReused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reset   func(t *testing.T, f *fixture, e *Exporter)
		records int    // records the topic holds in the end
		after   string // what the new generation holds
	}{
		{"a reset the exporter polls before new entries arrive", func(t *testing.T, f *fixture, e *Exporter) {
			f.cat.ByName("append").Append.Reset()
			f.rewindList(t, 0)
			e.pollAppend() // the head is below the cursor
			f.appendValues(t, 7, 8)
		}, 5, "0:7 1:8 "},
		{"a reset whose writer wrote other entries past the cursor before the poll", func(t *testing.T, f *fixture, e *Exporter) {
			f.cat.ByName("append").Append.Reset()
			f.rewindList(t, 0)
			f.appendValues(t, 7, 8, 9, 10) // entry 2 is now 9, not 3
		}, 7, "0:7 1:8 2:9 3:10 "},
		{"a reset whose writer wrote the same entry past the cursor, told through AfterReset", func(t *testing.T, f *fixture, e *Exporter) {
			st := f.cat.ByName("append")
			st.Append.Reset()
			f.rewindList(t, 0)
			f.appendValues(t, 1, 2, 3, 4) // entry 2 is 3 again: only AfterReset tells
			e.AfterReset(st)
		}, 7, "0:1 1:2 2:3 3:4 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2, 64)
			e, _ := f.manual(t, Config{})
			f.appendValues(t, 1, 2, 3)
			pollAcked(t, e)
			tc.reset(t, f, e)
			pollAcked(t, e)
			byName, gens := names(t, f, tc.records)
			if len(gens) != 2 {
				t.Fatalf("generations %v, want 2 (before and after the reset)", gens)
			}
			if got := entries(byName, gens[0]); got != "0:1 1:2 2:3 " {
				t.Errorf("first generation holds %q, want %q", got, "0:1 1:2 2:3 ")
			}
			if got := entries(byName, gens[1]); got != tc.after {
				t.Errorf("generation after the reset holds %q, want %q", got, tc.after)
			}
			if gens[1] <= gens[0] {
				t.Errorf("generation %d after %d: generations only grow", gens[1], gens[0])
			}
			if n := e.Stats().CursorResets.Load(); n != 1 {
				t.Errorf("%d cursor resets counted, want 1", n)
			}
		})
	}
}

func TestARestartNeverGivesOneNameToTwoEntries(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs the first exporter and leaves the store as the
		// second finds it.
		before  func(t *testing.T, f *fixture, e *Exporter, crash func())
		newVals []uint32
		records int    // records the topic holds in the end
		gens    int    // generations the records show
		resets  uint64 // cursor resets the second exporter counts
		last    string // what the last generation holds
	}{
		{"a crash before the checkpoint: the restored head is below the cursor", func(t *testing.T, f *fixture, e *Exporter, crash func()) {
			f.appendValues(t, 1, 2, 3, 4, 5)
			pollAcked(t, e)
			e.saveCursors(false)
			crash()
			f.rewindList(t, 0) // no checkpoint held the five
		}, []uint32{7, 8}, 7, 2, 1, "0:7 1:8 "},
		{"a crash after a checkpoint newer than the saved cursor: entries beyond the head were sent", func(t *testing.T, f *fixture, e *Exporter, crash func()) {
			f.appendValues(t, 1, 2, 3)
			pollAcked(t, e)
			e.saveCursors(false) // cursor 3
			f.appendValues(t, 4, 5)
			pollAcked(t, e) // 3 and 4 sent, the save to come never happens
			crash()
			f.rewindList(t, 3) // the checkpoint held three
		}, []uint32{7, 8}, 7, 2, 0, "3:7 4:8 "},
		{"a crash with the brokers behind: the entries past the cursor are sent again under their names", func(t *testing.T, f *fixture, e *Exporter, crash func()) {
			f.appendValues(t, 1, 2)
			pollAcked(t, e)
			e.saveCursors(false) // cursor 2
			f.appendValues(t, 3, 4)
			pollAcked(t, e)
			crash()
			// The checkpoint held all four; the second exporter sends 2
			// and 3 again: the same names, exact duplicates.
		}, []uint32{7}, 7, 2, 0, "4:7 "},
		{"a clean stop whose final checkpoint is older than what was sent", func(t *testing.T, f *fixture, e *Exporter, crash func()) {
			f.appendValues(t, 1, 2, 3, 4, 5)
			pollAcked(t, e)
			crash()
			// As a stop leaves it when 3 and 4 were still in flight at the
			// shutdown timeout (sent, maybe delivered, not acknowledged),
			// and the final checkpoint then failed: the one restored holds
			// four entries.
			g := e.tails[0].lists[1].seg.Load().gen
			file := fmt.Sprintf(`{"version":2,"clean":true,"stores":{"append":{"cursors":[0,3],"generations":[%d,%d],"sent":[0,5]}}}`, g, g)
			if err := os.WriteFile(e.cfg.CursorFile, []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
			f.rewindList(t, 4)
		}, []uint32{7}, 7, 2, 0, "4:7 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2, 64)
			cfg := Config{CursorFile: filepath.Join(t.TempDir(), "export-cursors.json")}
			e1, crash := f.manual(t, cfg)
			tc.before(t, f, e1, crash)
			e2, _ := f.manual(t, cfg)
			pollAcked(t, e2)
			f.appendValues(t, tc.newVals...)
			pollAcked(t, e2)
			byName, gens := names(t, f, tc.records)
			if len(gens) != tc.gens {
				t.Fatalf("generations %v, want %d", gens, tc.gens)
			}
			last := gens[len(gens)-1]
			got := ""
			for i := uint64(0); i < 64; i++ {
				if v, ok := byName[[2]uint64{last, i}]; ok {
					got += fmt.Sprintf("%d:%d ", i, v)
				}
			}
			if got != tc.last {
				t.Errorf("the second exporter's generation holds %q, want %q", got, tc.last)
			}
			if n := e2.Stats().CursorResets.Load(); n != tc.resets {
				t.Errorf("%d cursor resets counted, want %d", n, tc.resets)
			}
		})
	}
}
