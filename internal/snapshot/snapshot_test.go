package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/wire/dta"
)

// testConfig is a durable config in a new directory, with 4 KiB blocks so
// that the small test stores span many.
func testConfig(t testing.TB) Config {
	c := DefaultConfig()
	c.Dir = t.TempDir()
	c.BlockSize = 4096
	c.Region.HugePages = region.HugePagesOff
	return c
}

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openDurable(t testing.TB, cat *store.Catalog, cfg Config) (*Durable, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	d, err := Open(cat, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, logs
}

// scribble writes random bytes and adds random deltas all over every store
// except the Append ones.
func scribble(t testing.TB, cat *store.Catalog, rng *rand.Rand, n int) {
	t.Helper()
	var ops []memop.Op
	for _, s := range cat.Stores() {
		if s.Primitive == dta.Append {
			continue
		}
		size := s.Region.Size()
		for range n {
			off := rng.Uint64N(size/8) * 8
			if s.Primitive == dta.KeyIncrement {
				ops = append(ops, memop.Op{Kind: memop.FetchAdd, Store: s.Index, Offset: off, Delta: rng.Uint64N(100) + 1})
				continue
			}
			b := make([]byte, 8)
			binary.LittleEndian.PutUint64(b, rng.Uint64()|1)
			ops = append(ops, memop.Op{Kind: memop.Write, Store: s.Index, Offset: off, Data: b})
		}
	}
	if err := cat.Apply(ops); err != nil {
		t.Fatal(err)
	}
}

// appendEntries appends n entries to every list of every Append store; an
// entry holds its list and index.
func appendEntries(t testing.TB, cat *store.Catalog, writers map[uint16]*appendlist.Writer, n int) {
	t.Helper()
	b := memop.NewBatch(64, 4096)
	for _, s := range cat.Stores() {
		if s.Append == nil {
			continue
		}
		w := writers[s.Index]
		if w == nil {
			var err error
			if w, err = appendlist.NewWriter(s.Append.Spec(), s.Index); err != nil {
				t.Fatal(err)
			}
			writers[s.Index] = w
		}
		sp := s.Append.Spec()
		for l := range sp.Lists {
			for range n {
				h, _ := s.Append.Head(l)
				if err := w.Add(l, entry(sp.EntrySize, l, h), true, 0, b, cat); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// entry is the entry of list l at index i: l and i, little-endian, cut or
// zero-padded to size bytes.
func entry(size int, l uint32, i uint64) []byte {
	var full [12]byte
	binary.LittleEndian.PutUint32(full[:], l)
	binary.LittleEndian.PutUint64(full[4:], i)
	e := make([]byte, size)
	copy(e, full[:])
	return e
}

func contents(t testing.TB, cat *store.Catalog) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, s := range cat.Stores() {
		b := make([]byte, s.Region.Size())
		if err := s.Region.Read(0, b); err != nil {
			t.Fatal(err)
		}
		out[s.Name] = b
	}
	return out
}

func sameContents(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if !bytes.Equal(g, w) {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("store %s differs (first at byte %d of %d)", name, i, len(w))
		}
	}
}

func TestCheckpointsRestoreEveryStoreByteForByte(t *testing.T) {
	cfg := testConfig(t)
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	writers := map[uint16]*appendlist.Writer{}
	var want map[string][]byte
	for round := range 5 { // a full checkpoint, then deltas
		scribble(t, cat, rng, 50)
		appendEntries(t, cat, writers, 3+round*7)
		e, err := d.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 && !e.Full() {
			t.Errorf("the first checkpoint is a delta")
		}
		want = contents(t, cat)
	}
	d.Close()

	cat2 := storetest.Open(t)
	d2, logs := openDurable(t, cat2, cfg)
	sameContents(t, contents(t, cat2), want)
	if got := d2.Stats().Restored.Load(); got != 5 {
		t.Errorf("restored epoch %d, want 5\n%s", got, logs)
	}
}

func TestACheckpointWithNothingNewWritesNoFile(t *testing.T) {
	cfg := testConfig(t)
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	scribble(t, cat, rand.New(rand.NewPCG(1, 2)), 10)
	e1, err := d.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	e2, err := d.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if e2.Epoch != e1.Epoch || d.Stats().Checkpoints.Load() != 1 {
		t.Errorf("an idle checkpoint wrote epoch %d after %d (%d written)", e2.Epoch, e1.Epoch, d.Stats().Checkpoints.Load())
	}
}

func checkpointFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "ckpt-*.dta"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestACorruptCheckpointIsReportedAndThePreviousOneIsUsed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"a flipped bit in an extent", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-100] ^= 0x10
			os.WriteFile(path, b, 0o600)
		}},
		{"a file cut short", func(t *testing.T, path string) {
			st, _ := os.Stat(path)
			os.Truncate(path, st.Size()-30)
		}},
		{"a damaged header", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[20] ^= 1
			os.WriteFile(path, b, 0o600)
		}},
		{"garbage", func(t *testing.T, path string) { os.WriteFile(path, []byte("hello"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cat := storetest.Open(t)
			d, _ := openDurable(t, cat, cfg)
			rng := rand.New(rand.NewPCG(3, 4))
			scribble(t, cat, rng, 40)
			if _, err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			want := contents(t, cat)
			scribble(t, cat, rng, 40)
			e2, err := d.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			tc.damage(t, e2.path)

			cat2 := storetest.Open(t)
			d2, logs := openDurable(t, cat2, cfg)
			sameContents(t, contents(t, cat2), want)
			if !strings.Contains(logs.String(), filepath.Base(e2.path)) || !strings.Contains(logs.String(), "corrupt") {
				t.Errorf("the log does not name the corrupt file:\n%s", logs)
			}
			if _, err := os.Stat(e2.path + corruptSuffix); err != nil {
				t.Errorf("the corrupt file was not set aside: %v", err)
			}
			if d2.Stats().CorruptFiles.Load() != 1 {
				t.Errorf("corrupt files counted %d, want 1", d2.Stats().CorruptFiles.Load())
			}
			// The next checkpoint continues from the good one, under a new number.
			scribble(t, cat2, rng, 5)
			e3, err := d2.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if e3.Epoch <= e2.Epoch {
				t.Errorf("new checkpoint %d reuses the number of corrupt %d", e3.Epoch, e2.Epoch)
			}
		})
	}
}

func TestOnlyCorruptCheckpointsLeaveTheStoresEmpty(t *testing.T) {
	cfg := testConfig(t)
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	scribble(t, cat, rand.New(rand.NewPCG(3, 4)), 40)
	e, err := d.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	os.WriteFile(e.path, []byte("not a checkpoint at all, but long enough to have a header........................"), 0o600)
	cat2 := storetest.Open(t)
	openDurable(t, cat2, cfg)
	for name, b := range contents(t, cat2) {
		if !bytes.Equal(b, make([]byte, len(b))) {
			t.Errorf("store %s is not empty", name)
		}
	}
}

func TestChangedGeometryIsRefusedWithAnErrorNamingTheStore(t *testing.T) {
	cfg := testConfig(t)
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	scribble(t, cat, rand.New(rand.NewPCG(5, 6)), 5)
	if _, err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, tc := range []struct {
		name   string
		change func([]store.Config) []store.Config
		want   string
	}{
		{"more slots", func(c []store.Config) []store.Config { c[0].Slots *= 2; return c }, `store "keywrite" changed geometry`},
		{"another entry size", func(c []store.Config) []store.Config { c[3].EntrySize = 8; return c }, `store "append" changed geometry`},
		{"a store removed", func(c []store.Config) []store.Config { return c[1:] }, `store "keywrite", which the configuration no longer has`},
		{"a TEA table with larger values", func(c []store.Config) []store.Config { c[5].ValueSize = 8; return c }, `store "tea" changed geometry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			descs, err := store.DescribeAll(tc.change(storetest.Configs()))
			if err != nil {
				t.Fatal(err)
			}
			rc := region.DefaultConfig()
			rc.HugePages = region.HugePagesOff
			cat2, err := store.Open(descs, rc, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cat2.Close()
			d2, err := Open(cat2, cfg, nil)
			if err == nil {
				d2.Close()
				t.Fatal("Open accepted a checkpoint of another geometry")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			for name, b := range contents(t, cat2) {
				if !bytes.Equal(b, make([]byte, len(b))) {
					t.Errorf("store %s was written to", name)
				}
			}
		})
	}
}

func TestAStoreAddedToTheConfigurationStartsEmpty(t *testing.T) {
	cfg := testConfig(t)
	cfgs := storetest.Configs()
	descs, _ := store.DescribeAll(cfgs[1:])
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	d, _ := openDurable(t, cat, cfg)
	scribble(t, cat, rand.New(rand.NewPCG(5, 6)), 20)
	if _, err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	want := contents(t, cat)
	d.Close()
	cat2 := storetest.Open(t) // with the keywrite store added
	d2, _ := openDurable(t, cat2, cfg)
	got := contents(t, cat2)
	sameContents(t, got, want)
	if b := got["keywrite"]; !bytes.Equal(b, make([]byte, len(b))) {
		t.Error("the added store is not empty")
	}
	scribble(t, cat2, rand.New(rand.NewPCG(7, 8)), 5)
	if e, err := d2.Checkpoint(); err != nil || !e.Full() {
		t.Errorf("the first checkpoint after a store was added: full %v, err %v; want a full one", e.Full(), err)
	}
}

func TestASecondProcessCannotUseTheDataDirectory(t *testing.T) {
	cfg := testConfig(t)
	openDurable(t, storetest.Open(t), cfg)
	if d, err := Open(storetest.Open(t), cfg, nil); err == nil {
		d.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

// Entries the writer overwrites while a checkpoint copies its list must not
// come back as older entries: every entry a restored list returns holds its
// own index.
func TestAppendListsLappedDuringACheckpointNeverReadBackWrong(t *testing.T) {
	cfg := testConfig(t)
	cfg.History = 100
	descs, err := store.DescribeAll([]store.Config{{Name: "ap", ID: 1, Primitive: "append", Default: true,
		Lists: 2, Capacity: 64, EntrySize: 12, Batch: 4}})
	if err != nil {
		t.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	d, _ := openDurable(t, cat, cfg)
	w, _ := appendlist.NewWriter(cat.Stores()[0].Append.Spec(), 0)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // laps the 64-entry rings again and again
		defer close(done)
		b := memop.NewBatch(16, 1024)
		for i := uint64(0); !stop.Load(); i++ {
			for l := range uint32(2) {
				w.Add(l, entry(12, l, i), false, 0, b, cat)
			}
			if i%4 == 0 {
				time.Sleep(20 * time.Microsecond) // about a lap per checkpoint
			}
		}
	}()
	var epochs []Epoch
	for range 20 {
		e, err := d.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, e)
	}
	stop.Store(true)
	<-done
	d.Close()
	checked, lowered := 0, 0
	for _, e := range epochs {
		cat2, err := store.Open(descs, rc, nil)
		if err != nil {
			t.Fatal(err)
		}
		restore(t, d, cat2, e.Epoch)
		st := cat2.Stores()[0].Append
		for l := range uint32(2) {
			if low, _ := st.Low(l); low > 0 {
				lowered++
			}
			res, err := st.Poll(l, 0, 1000, nil)
			if err != nil {
				t.Fatal(err)
			}
			for j := range res.Count {
				got := res.Data[j*12 : j*12+12]
				if want := entry(12, l, res.First+uint64(j)); !bytes.Equal(got, want) {
					t.Fatalf("epoch %d list %d: entry %d reads % x, want % x", e.Epoch, l, res.First+uint64(j), got, want)
				}
				checked++
			}
		}
		cat2.Close()
	}
	if checked == 0 || lowered == 0 {
		t.Fatalf("%d entries read back, %d lists with a low watermark: the test did not exercise both", checked, lowered)
	}
	t.Logf("%d entries read back from %d epochs; %d lists restored with a low watermark", checked, len(epochs), lowered)
}

// Every write that landed before Checkpoint was called is in it, whatever
// writers do meanwhile.
func TestEveryWriteBeforeACheckpointIsInIt(t *testing.T) {
	cfg := testConfig(t)
	cfg.History = 100
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	ki := cat.ByName("keyincrement")
	var acked atomic.Uint64 // adds to counter 0 that returned
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			op := []memop.Op{{Kind: memop.FetchAdd, Store: ki.Index, Offset: 0, Delta: 1}}
			for !stop.Load() {
				if err := cat.Apply(op); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		})
	}
	type point struct {
		epoch uint64
		acked uint64
	}
	var points []point
	for range 15 {
		before := acked.Load()
		e, err := d.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		points = append(points, point{e.Epoch, before})
	}
	stop.Store(true)
	wg.Wait()
	for _, p := range points {
		cat2 := storetest.Open(t)
		restore(t, d, cat2, p.epoch)
		if v, _ := cat2.ByName("keyincrement").Region.Load64(0); v < p.acked {
			t.Errorf("epoch %d holds %d adds; %d had returned before it began", p.epoch, v, p.acked)
		}
		cat2.Close()
	}
}

// restore applies epoch e's chain to cat.
func restore(t *testing.T, d *Durable, cat *store.Catalog, e uint64) {
	t.Helper()
	chain := d.chain(e)
	if chain == nil {
		t.Fatalf("epoch %d has no chain", e)
	}
	if _, err := d.apply(cat, chain); err != nil {
		t.Fatal(err)
	}
}

func TestHistoryKeepsTheNewestEpochsAndTheFilesTheyNeed(t *testing.T) {
	cfg := testConfig(t)
	cfg.History = 3
	cfg.MaxChain = 2
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	rng := rand.New(rand.NewPCG(9, 10))
	values := map[uint64][]byte{}
	for range 8 {
		scribble(t, cat, rng, 20)
		e, err := d.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		values[e.Epoch] = contents(t, cat)["keywrite"]
	}
	kept := d.Epochs()
	if len(kept) != 3 || kept[2].Epoch != 8 {
		t.Fatalf("kept epochs %v, want 6, 7, 8", epochNumbers(kept))
	}
	// Files: the kept epochs' chains (MaxChain 2: full every third), nothing else.
	files := checkpointFiles(t, cfg.Dir)
	need := d.needed(kept)
	if len(files) != len(need) {
		t.Errorf("%d files on disk, %d needed: %v", len(files), len(need), files)
	}
	for _, e := range kept {
		got, release, err := d.OpenEpoch(e)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, got.ByName("keywrite").Region.Size())
		got.ByName("keywrite").Region.Read(0, b)
		if !bytes.Equal(b, values[e.Epoch]) {
			t.Errorf("epoch %d does not read as it was", e.Epoch)
		}
		release()
	}
	if n := d.Stats().OpenEpochs.Load(); n > int64(cfg.MaxOpenEpochs) {
		t.Errorf("%d epochs held open, at most %d", n, cfg.MaxOpenEpochs)
	}
}

func epochNumbers(es []Epoch) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Epoch)
	}
	return out
}

func TestHistoryIsBoundedByAgeAndBytes(t *testing.T) {
	t.Run("by age", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.History = 100
		cfg.HistoryMaxAge = time.Hour
		cat := storetest.Open(t)
		d, _ := openDurable(t, cat, cfg)
		for range 4 {
			scribble(t, cat, rand.New(rand.NewPCG(1, 1)), 5)
			d.Checkpoint()
		}
		d.retain(time.Now().Add(2 * time.Hour))
		if kept := d.Epochs(); len(kept) != 1 || kept[0].Epoch != 4 {
			t.Errorf("two hours later, kept %v; want only the newest, 4", epochNumbers(kept))
		}
	})
	t.Run("by bytes", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.History = 100
		cfg.MaxChain = 0 // every checkpoint full: each epoch needs only its own file
		cat := storetest.Open(t)
		d, _ := openDurable(t, cat, cfg)
		var size int64
		for i := range 6 {
			scribble(t, cat, rand.New(rand.NewPCG(uint64(i), 1)), 50)
			e, _ := d.Checkpoint()
			size = max(size, e.Bytes)
		}
		d.cfg.HistoryMaxBytes = uint64(3*size + size/2)
		d.retain(time.Now())
		if kept := d.Epochs(); len(kept) != 3 {
			t.Errorf("kept %v within %d bytes; want the newest three", epochNumbers(kept), d.cfg.HistoryMaxBytes)
		}
		if got := d.Stats().DiskBytes.Load(); got > d.cfg.HistoryMaxBytes {
			t.Errorf("disk bytes %d above the bound %d", got, d.cfg.HistoryMaxBytes)
		}
		if n := len(checkpointFiles(t, cfg.Dir)); n != 3 {
			t.Errorf("%d files left, want 3", n)
		}
	})
}

func TestResolveFindsEpochsByNumberAndTime(t *testing.T) {
	cfg := testConfig(t)
	cfg.History = 10
	cat := storetest.Open(t)
	d, _ := openDurable(t, cat, cfg)
	var es []Epoch
	for i := range 3 {
		scribble(t, cat, rand.New(rand.NewPCG(uint64(i), 2)), 5)
		e, _ := d.Checkpoint()
		es = append(es, e)
		time.Sleep(5 * time.Millisecond)
	}
	now := time.Now()
	for _, tc := range []struct {
		at   string
		want uint64
		err  error
	}{
		{"2", 2, nil},
		{"9", 0, ErrNoEpoch},
		{es[1].Time.Format(time.RFC3339Nano), 2, nil},
		{es[1].Time.Add(time.Millisecond).Format(time.RFC3339Nano), 2, nil},
		{es[0].Time.Add(-time.Second).Format(time.RFC3339Nano), 0, ErrNoEpoch},
		{now.Add(time.Minute).UTC().Format("15:04:05"), 3, nil},
		{"yesterday", 0, ErrBadAt},
	} {
		e, err := d.Resolve(tc.at, now, time.UTC)
		if !errors.Is(err, tc.err) || err == nil && e.Epoch != tc.want {
			t.Errorf("Resolve(%q) = %d, %v; want %d, %v", tc.at, e.Epoch, err, tc.want, tc.err)
		}
	}
}

// FuzzReader: no input makes the reader panic, allocate beyond its bounds
// or return an extent outside its store.
func FuzzReader(f *testing.F) {
	cfg := testConfig(f)
	// Small seeds: one store of each kind, a few KiB each.
	descs, err := store.DescribeAll([]store.Config{
		{Name: "kw", ID: 1, Primitive: "keywrite", Default: true, Slots: 512, ValueSize: 4, Redundancy: 2},
		{Name: "ki", ID: 2, Primitive: "keyincrement", Default: true, Slots: 512, Redundancy: 2},
		{Name: "ap", ID: 3, Primitive: "append", Default: true, Lists: 2, Capacity: 64, EntrySize: 4, Batch: 4},
	})
	if err != nil {
		f.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer cat.Close()
	cfg.History = 10
	d, err := Open(cat, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	scribble(f, cat, rand.New(rand.NewPCG(1, 1)), 3)
	e1, _ := d.Checkpoint()
	scribble(f, cat, rand.New(rand.NewPCG(2, 1)), 3)
	e2, _ := d.Checkpoint()
	d.Close()
	for _, e := range []Epoch{e1, e2} {
		b, _ := os.ReadFile(e.path)
		f.Add(b)
	}
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd, err := NewReader(bytes.NewReader(b), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		for {
			s, off, data, err := rd.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				return
			}
			if size := rd.Header.Stores[s].RegionSize(); off+uint64(len(data)) > size || len(data) > MaxExtent {
				t.Fatalf("extent [%d, +%d) outside store of %d bytes", off, len(data), size)
			}
		}
	})
}
