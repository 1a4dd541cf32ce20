package translator

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/wire/dta"
)

var reporter = netip.MustParseAddrPort("192.0.2.7:40041")

// newTestTranslator returns a translator over small default stores whose
// local sink is a real catalogue of mmap'd regions.
func newTestTranslator(t testing.TB, mod func(*Config)) (*Translator, *store.Catalog) {
	t.Helper()
	cat := storetest.Open(t)
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg, cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr, cat
}

// memory returns a copy of every store's bytes.
func memory(t *testing.T, cat *store.Catalog) [][]byte {
	t.Helper()
	var out [][]byte
	for _, s := range cat.Stores() {
		b, err := s.Region.Slice(0, s.Region.Size())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(b))
	}
	return out
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func TestPrototypeBytesAreAnswered(t *testing.T) {
	tr, cat := newTestTranslator(t, nil)
	w := tr.NewWorker()
	// Hand-built in the prototype's layout (3-byte base header), not by our encoder.
	kw := []byte{0x01, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0xDE, 0xAD, 0xBE, 0xEF}
	ki := []byte{0x03, 0x06, 0x00, 0x04, 0x00, 0x00, 0x00, 0x09, 0, 0, 0, 0, 0, 0, 0, 7}
	w.Handle(kw, reporter, 1)
	w.Handle(ki, reporter, 2)
	w.Handle(ki, reporter, 3)
	kb := keywrite.CompatKey(1)
	res, err := cat.ByName("keywrite").KeyWrite.Query(kb[:], 2, 0, nil)
	if err != nil || res.Status != keywrite.Found || !bytes.Equal(res.Value, []byte{0xDE, 0xAD, 0xBE, 0xEF}) {
		t.Fatalf("Key-Write answer %+v %v, want found DEADBEEF", res, err)
	}
	kb = keywrite.CompatKey(9)
	n, err := cat.ByName("keyincrement").KeyIncrement.Query(kb[:], 4)
	if err != nil || n != 14 {
		t.Fatalf("Key-Increment sum %d %v, want 14", n, err)
	}
	st := tr.Stats()
	if st.Reports[dta.KeyWrite] != 1 || st.Reports[dta.KeyIncrement] != 2 || st.Dropped() != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPostcardsAndAppendThroughTheTranslator(t *testing.T) {
	tr, cat := newTestTranslator(t, nil)
	w := tr.NewWorker()
	for hop := byte(1); hop <= 5; hop++ {
		pkt := append([]byte{0x04, hop, 0x00, 0, 0, 0, 42, hop}, be32(uint32(hop)*10)...)
		w.Handle(pkt, reporter, 1)
	}
	res, err := cat.ByName("postcard").Postcard.Query([]byte{0, 0, 0, 42}, nil)
	if err != nil || res.Status.String() != "found" || len(res.Hops) != 5 || !res.Complete {
		t.Fatalf("postcard answer %+v %v", res, err)
	}
	for i, h := range res.Hops {
		if h.Value != uint32(i+1)*10 {
			t.Fatalf("hop %d = %d, want %d", i+1, h.Value, (i+1)*10)
		}
	}
	// Three entries: less than a batch of 4, so only a tick writes them.
	for i := range uint32(3) {
		w.Handle(append([]byte{0x02, byte(i), 0x00, 0, 0, 0, 1}, be32(100+i)...), reporter, 10)
	}
	app := cat.ByName("append").Append
	if h, _ := app.Head(1); h != 0 {
		t.Fatalf("head %d before the flush delay, want 0", h)
	}
	tr.Tick(10 + int64(DefaultConfig().AppendFlushDelay))
	p, err := app.Poll(1, 0, 10, nil)
	if err != nil || p.Count != 3 || p.Lost != 0 {
		t.Fatalf("poll %+v %v", p, err)
	}
	for i := range 3 {
		if got := binary.BigEndian.Uint32(p.Data[i*4:]); got != 100+uint32(i) {
			t.Fatalf("entry %d = %d", i, got)
		}
	}
}

func TestMalformedReportsAreCountedAndChangeNothing(t *testing.T) {
	ext := func(op dta.Opcode, body ...byte) []byte { return append([]byte{byte(op), 0, 0}, body...) }
	tests := []struct {
		name   string
		pkt    []byte
		reason Reason
	}{
		{"an empty datagram is truncated", nil, ReasonTruncated},
		{"a base header alone is truncated", []byte{0x01, 0, 0}, ReasonTruncated},
		{"an unknown opcode is rejected", []byte{0x09, 0, 0, 1, 2, 3}, ReasonUnknownOpcode},
		{"a Key-Write with N = 0 is rejected", []byte{0x01, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}, ReasonRedundancy},
		{"a Key-Write with N = 9 is rejected", []byte{0x01, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1}, ReasonRedundancy},
		{"a Key-Write with N above the store's 4 is rejected", []byte{0x01, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 1}, ReasonRedundancy},
		{"a Key-Write with trailing bytes is rejected", []byte{0x01, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0xFF}, ReasonTrailing},
		{"a postcard for hop 0 is rejected", []byte{0x04, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, ReasonHop},
		{"a postcard for hop 6 of a 5-hop store is rejected", []byte{0x04, 0, 0, 0, 0, 0, 1, 6, 0, 0, 0, 1}, ReasonHop},
		{"a postcard value outside the value set is rejected", []byte{0x04, 0, 0, 0, 0, 0, 1, 1, 0xFF, 0, 0, 1}, ReasonValueSet},
		{"an append to list 16 of 16 is rejected", []byte{0x02, 0, 0, 0, 0, 0, 16, 0, 0, 0, 1}, ReasonList},
		{"an extended key-write whose key length lies is rejected", ext(dta.OpKeyWriteExt, 0, 1, 2, 60, 0, 4, 1, 2, 3), ReasonLength},
		{"an extended key-write to an unknown store is rejected", ext(dta.OpKeyWriteExt, 0, 99, 2, 1, 0, 4, 7, 1, 2, 3, 4), ReasonUnknownStore},
		{"an extended key-write to an append store is rejected", ext(dta.OpKeyWriteExt, 0, 4, 2, 1, 0, 4, 7, 1, 2, 3, 4), ReasonWrongPrimitive},
		{"an extended key-write to a TEA table store is rejected", ext(dta.OpKeyWriteExt, 0, 60, 2, 1, 0, 4, 7, 1, 2, 3, 4), ReasonWrongPrimitive},
		{"an extended append to a TEA table store is rejected", ext(dta.OpAppendExt, 0, 60, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4), ReasonWrongPrimitive},
		{"an extended key-write with a 5-byte value into a 4-byte store is rejected", ext(dta.OpKeyWriteExt, 0, 1, 2, 1, 0, 5, 7, 1, 2, 3, 4, 5), ReasonValueSize},
		{"an extended append with an 8-byte entry into a 4-byte store is rejected", ext(dta.OpAppendExt, 0, 4, 0, 0, 0, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8), ReasonValueSize},
		{"an empty batch is rejected", []byte{0x20, 0, 0, 0}, ReasonBatch},
		{"a batch record whose length lies is rejected", []byte{0x20, 0, 0, 1, 0x01, 0x00, 0x40, 1}, ReasonLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, cat := newTestTranslator(t, nil)
			before := memory(t, cat)
			w := tr.NewWorker()
			if reply := w.Handle(tc.pkt, reporter, 1); reply != nil {
				t.Fatalf("a report without the retransmit flag got a reply %x", reply)
			}
			tr.FlushAll()
			st := tr.Stats()
			if st.Drops[tc.reason] != 1 || st.Dropped() != 1 {
				t.Fatalf("drops %v, want exactly one %s", st.Drops, tc.reason)
			}
			after := memory(t, cat)
			for i := range before {
				if !bytes.Equal(before[i], after[i]) {
					t.Fatalf("store %d changed", i)
				}
			}
		})
	}
}

func TestABatchKeepsItsGoodReportsAroundABadOne(t *testing.T) {
	tr, cat := newTestTranslator(t, nil)
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 256), dta.Header{})
	good := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(5), Value: be32(55)}
	bad := dta.Report{Opcode: dta.OpAppend, List: 999, Value: be32(1)}
	good2 := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(6), Value: be32(66)}
	for _, r := range []*dta.Report{&good, &bad, &good2} {
		if err := bw.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	tr.NewWorker().Handle(bw.Bytes(), reporter, 1)
	for k, v := range map[uint32]uint32{5: 55, 6: 66} {
		kb := keywrite.CompatKey(k)
		res, _ := cat.ByName("keywrite").KeyWrite.Query(kb[:], 2, 0, nil)
		if res.Status != keywrite.Found || binary.BigEndian.Uint32(res.Value) != v {
			t.Fatalf("key %d: %+v", k, res)
		}
	}
	if st := tr.Stats(); st.Drops[ReasonList] != 1 || st.Reports[dta.KeyWrite] != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRetransmittableReportsFollowGoBackN(t *testing.T) {
	tr, cat := newTestTranslator(t, nil)
	w := tr.NewWorker()
	pkt := func(seq uint8, delta byte) []byte {
		return []byte{0x03, seq, byte(dta.FlagRetransmit), 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, delta}
	}
	steps := []struct {
		name string
		seq  uint8
		want dta.Ack
	}{
		{"the first report of a reporter is accepted as its start", 200, dta.Ack{Seq: 200}},
		{"the next in order is ACKed", 201, dta.Ack{Seq: 201}},
		{"a duplicate is re-ACKed with the last accepted seq", 200, dta.Ack{Seq: 201}},
		{"a gap is NACKed with the last accepted seq", 203, dta.Ack{Seq: 201, NACK: true}},
		{"the missing one is then accepted", 202, dta.Ack{Seq: 202}},
		{"and the resent one after it", 203, dta.Ack{Seq: 203}},
	}
	for _, s := range steps {
		var a dta.Ack
		if err := a.Decode(w.Handle(pkt(s.seq, 1), reporter, 1)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if a != s.want {
			t.Fatalf("%s: got %+v, want %+v", s.name, a, s.want)
		}
	}
	kb := keywrite.CompatKey(1)
	if n, _ := cat.ByName("keyincrement").KeyIncrement.Query(kb[:], 1); n != 4 {
		t.Fatalf("counter %d: the duplicate or the gap was applied (want 4 applied reports)", n)
	}
	var unknown dta.Ack
	if err := unknown.Decode(w.Handle([]byte{0x7F, 204, byte(dta.FlagRetransmit)}, reporter, 1)); err != nil || unknown != (dta.Ack{Seq: 204}) {
		t.Fatalf("a malformed datagram in sequence must consume its seq and be ACKed: %+v %v", unknown, err)
	}
	other := netip.MustParseAddrPort("192.0.2.8:40041")
	var a dta.Ack
	if err := a.Decode(w.Handle(pkt(7, 1), other, 1)); err != nil || a != (dta.Ack{Seq: 7}) {
		t.Fatalf("a second reporter has its own sequence space: %+v %v", a, err)
	}
}

func TestLegacyHeaderIsASetting(t *testing.T) {
	tr, cat := newTestTranslator(t, func(c *Config) { c.LegacyHeader = true })
	tr.NewWorker().Handle([]byte{0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x2A}, reporter, 1)
	kb := keywrite.CompatKey(3)
	res, _ := cat.ByName("keywrite").KeyWrite.Query(kb[:], 2, 0, nil)
	if res.Status != keywrite.Found || binary.BigEndian.Uint32(res.Value) != 42 {
		t.Fatalf("legacy Key-Write: %+v", res)
	}
}

func TestHandleAllocatesNothing(t *testing.T) {
	tr, _ := newTestTranslator(t, nil)
	w := tr.NewWorker()
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 512), dta.Header{})
	for _, r := range []dta.Report{
		{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(1), Value: be32(2)},
		{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(1), Delta: 3},
		{Opcode: dta.OpPostcard, Key: be32(1), Hop: 1, Value: be32(2)},
		{Opcode: dta.OpAppend, List: 1, Value: be32(2)},
		{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 2, Key: []byte("thirteen-byte"), Value: be32(2)},
	} {
		if err := bw.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	pkts := map[string][]byte{
		"compat key-write": {0x01, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1},
		"batch of all":     bw.Bytes(),
		"malformed":        {0x09, 0, 0},
	}
	for name, p := range pkts {
		w.Handle(p, reporter, 1) // warm up
		if a := testing.AllocsPerRun(200, func() { w.Handle(p, reporter, 1) }); a != 0 {
			t.Errorf("%s: %v allocations per datagram", name, a)
		}
	}
}

func TestTickSaysWhenNothingIsHeld(t *testing.T) {
	tr, _ := newTestTranslator(t, nil)
	w := tr.NewWorker()
	woke := func() bool {
		select {
		case <-tr.Wake():
			return true
		default:
			return false
		}
	}
	postcard := func(hop byte) []byte { return append([]byte{0x04, hop, 0x00, 0, 0, 0, 7, hop}, be32(uint32(hop))...) }

	if !tr.Tick(1) {
		t.Fatal("a fresh translator's Tick is not idle")
	}
	w.Handle(append([]byte{0x01, 0, 0x00, 0x02, 0, 0, 0, 1}, be32(5)...), reporter, 2) // a Key-Write holds nothing
	if woke() {
		t.Fatal("a Key-Write woke the ticker: nothing is held")
	}
	w.Handle(postcard(1), reporter, 3)
	if !woke() {
		t.Fatal("a cached postcard after an idle Tick did not wake the ticker")
	}
	if tr.Tick(4) {
		t.Fatal("Tick idle while a path is cached")
	}
	for hop := byte(2); hop <= 5; hop++ {
		w.Handle(postcard(hop), reporter, 5)
	}
	if woke() {
		t.Fatal("the ticker was woken while it was not asleep")
	}
	if !tr.Tick(6) {
		t.Fatal("Tick not idle once the path was written")
	}
	w.Handle(append([]byte{0x02, 0, 0x00, 0, 0, 0, 1}, be32(100)...), reporter, 7) // one Append entry: a partial batch
	if !woke() {
		t.Fatal("a partial Append batch after an idle Tick did not wake the ticker")
	}
	if tr.Tick(8) {
		t.Fatal("Tick idle while a partial batch waits")
	}
	if !tr.Tick(8 + int64(DefaultConfig().AppendFlushDelay)) {
		t.Fatal("Tick not idle after writing the partial batch")
	}
}

func TestABatchedWorkerAppliesAndCountsItsDatagramsAtTheEndOfTheBatch(t *testing.T) {
	tr, cat := newTestTranslator(t, nil)
	w := tr.NewWorker()
	w.DeferToBatch()
	kw := func(key, value byte) []byte { return []byte{0x01, 0, 0, 2, 0, 0, 0, key, 0, 0, 0, value} }
	query := func(key uint32) (keywrite.Status, byte) {
		kb := keywrite.CompatKey(key)
		res, err := cat.ByName("keywrite").KeyWrite.Query(kb[:], 2, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != keywrite.Found {
			return res.Status, 0
		}
		return res.Status, res.Value[3]
	}
	for k := range byte(10) {
		w.Handle(kw(k+1, k+100), reporter, 1)
	}
	if st := tr.Stats(); st.Datagrams != 0 || st.Reports[dta.KeyWrite] != 0 {
		t.Errorf("counts published inside a batch: %d datagrams, %d reports", st.Datagrams, st.Reports[dta.KeyWrite])
	}
	if s, _ := query(1); s == keywrite.Found {
		t.Error("a batched Key-Write was applied before the batch ended")
	}
	w.EndBatch()
	for k := range byte(10) {
		if s, v := query(uint32(k + 1)); s != keywrite.Found || v != k+100 {
			t.Errorf("key %d after EndBatch: %v %d, want found %d", k+1, s, v, k+100)
		}
	}
	if st := tr.Stats(); st.Datagrams != 10 || st.Reports[dta.KeyWrite] != 10 {
		t.Errorf("after EndBatch: %d datagrams, %d reports, want 10 and 10", st.Datagrams, st.Reports[dta.KeyWrite])
	}
	// The same key twice in one batch: the later value wins, as unbatched.
	w.Handle(kw(1, 7), reporter, 1)
	w.Handle(kw(1, 8), reporter, 1)
	w.EndBatch()
	if _, v := query(1); v != 8 {
		t.Errorf("key 1 holds %d after two writes in one batch, want the later 8", v)
	}
	// A datagram the reporter may resend is applied before its ACK.
	ki := []byte{0x03, 9, byte(dta.FlagRetransmit), 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3}
	if ack := w.Handle(ki, reporter, 1); ack == nil {
		t.Fatal("no ACK")
	}
	kb := keywrite.CompatKey(5)
	if n, _ := cat.ByName("keyincrement").KeyIncrement.Query(kb[:], 1); n != 3 {
		t.Errorf("a retransmittable Key-Increment was ACKed before it was applied (counter %d, want 3)", n)
	}
}

func TestABatchedWorkerAllocatesNothing(t *testing.T) {
	tr, _ := newTestTranslator(t, nil)
	w := tr.NewWorker()
	w.DeferToBatch()
	kw := [][]byte{{0x01, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1}}
	// Append entries of every list of the test store, interleaved: every
	// run the worker keeps is in use.
	var apps [][]byte
	for l := range 16 {
		apps = append(apps, []byte{0x02, 0, 0, 0, 0, 0, byte(l), 0, 0, 0, byte(l)})
	}
	for name, dgs := range map[string][][]byte{"key-write": kw, "append, 16 lists interleaved": apps} {
		batch := func() {
			for range 8 {
				for _, p := range dgs {
					w.Handle(p, reporter, 1)
				}
			}
			w.EndBatch()
		}
		batch() // warm up
		if a := testing.AllocsPerRun(200, batch); a != 0 {
			t.Errorf("%s: %v allocations per batch", name, a)
		}
	}
}

// appendLists opens the test stores with the Append store "append" given
// lists lists of 1024 entries (a ring large enough for whole batches to go
// together, appendlist.Spec.Window) and a translator over them; it returns
// the catalogue, the Append store's index and its writer.
func appendLists(t *testing.T, lists uint32) (*store.Catalog, *Translator, int, *appendlist.Writer) {
	t.Helper()
	cfgs := storetest.Configs()
	cfgs[3].Lists, cfgs[3].Capacity = lists, 1024
	cat := storetest.OpenConfigs(t, cfgs)
	tr, err := New(DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, d := range cat.Descriptors() {
		if d.Name == "append" {
			idx = i
		}
	}
	wr := tr.AppendWriter(idx)
	if wr == nil {
		t.Fatal("no Append store named append")
	}
	return cat, tr, idx, wr
}

func TestABatchedWorkerWritesABatchOfOneEntryDatagramsForAListTogether(t *testing.T) {
	cat, tr, idx, wr := appendLists(t, store.DefaultLists)
	spec := *wr.Spec()
	if spec.Window() <= uint64(spec.Batch) {
		t.Fatalf("the test store's window %d does not exceed a batch (%d)", spec.Window(), spec.Batch)
	}
	st := wr.Stats()
	w := tr.NewWorker()
	w.DeferToBatch()
	entry := func(list uint32, v uint32) []byte {
		return append([]byte{0x02, 0, 0x00, 0, 0, 0, byte(list)}, be32(v)...)
	}
	n := 4 * spec.Batch
	for i := range n {
		w.Handle(entry(3, uint32(1000+i)), reporter, int64(i))
	}
	if e := st.Entries.Load(); e != 0 {
		t.Errorf("%d entries reached the writer before the batch ended", e)
	}
	w.EndBatch()
	if e, b, h := st.Entries.Load(), st.Batches.Load(), st.HeaderWrites.Load(); e != uint64(n) || b != 4 || h != 1 {
		t.Errorf("after EndBatch: %d entries in %d batches under %d heads, want %d in 4 under 1", e, b, h, n)
	}
	res, err := cat.Stores()[idx].Append.Poll(3, 0, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != n {
		t.Fatalf("polled %d entries, want %d", res.Count, n)
	}
	for i := range n {
		if v := binary.BigEndian.Uint32(res.Data[i*4:]); v != uint32(1000+i) {
			t.Fatalf("entry %d = %d, want %d", i, v, 1000+i)
		}
	}
	// A datagram the reporter may resend is written (its batch filled) and
	// counted before its ACK.
	before := st.Entries.Load()
	rt := append([]byte{0x02, 7, byte(dta.FlagRetransmit), 0, 0, 0, 3}, be32(5)...)
	if ack := w.Handle(rt, reporter, 1); ack == nil {
		t.Fatal("no ACK")
	}
	if e := st.Entries.Load(); e != before+1 {
		t.Errorf("a retransmittable Append entry was ACKed before it reached the writer (%d entries, want %d)", e, before+1)
	}
}

func TestABatchedWorkerGathersEachListsEntriesWhenListsInterleave(t *testing.T) {
	for _, c := range []struct {
		name      string
		lists     int
		batches   int    // batches of entries per list
		wantHeads uint64 // 0: not checked (more lists than runs: some are written early)
	}{
		{"two lists, one entry at a time", 2, 4, 2},
		{"sixteen lists", maxRuns, 2, maxRuns},
		{"more lists than runs", 2*maxRuns + 3, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat, tr, idx, wr := appendLists(t, uint32(c.lists))
			spec := *wr.Spec()
			st := wr.Stats()
			w := tr.NewWorker()
			w.DeferToBatch()
			per := c.batches * spec.Batch
			// Round robin over the lists, one entry per one-report datagram:
			// no two neighbours name the same list.
			for i := range per {
				for l := range c.lists {
					dg := append([]byte{0x02, 0, 0x00, 0, 0, 0, byte(l)}, be32(uint32(l<<16|i))...)
					w.Handle(dg, reporter, int64(i))
				}
			}
			w.EndBatch()
			total := uint64(c.lists * per)
			if e := st.Entries.Load(); e != total {
				t.Fatalf("%d entries written, want %d", e, total)
			}
			if h := st.HeaderWrites.Load(); c.wantHeads != 0 && h != c.wantHeads {
				t.Errorf("%d head writes for %d lists: each list's entries were not written together", h, c.lists)
			}
			for l := range c.lists {
				res, err := cat.Stores()[idx].Append.Poll(uint32(l), 0, per, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Count != per {
					t.Fatalf("list %d: polled %d entries, want %d", l, res.Count, per)
				}
				for i := range per {
					if v := binary.BigEndian.Uint32(res.Data[i*4:]); v != uint32(l<<16|i) {
						t.Fatalf("list %d entry %d = %#x, want %#x: entries out of order or in another list", l, i, v, l<<16|i)
					}
				}
			}
		})
	}
}
