package fanout

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// cluster is n collectors' catalogues, each written by its own translator,
// behind one router.
type cluster struct {
	cats   []*store.Catalog
	router *Router
	w      *Worker
	names  []string
}

func newCluster(t testing.TB, n, replicas int) *cluster {
	t.Helper()
	descs, err := store.DescribeAll([]store.Config{
		{Name: "keywrite", ID: 1, Primitive: "keywrite", Default: true, Slots: 1 << 16, ValueSize: 4, Redundancy: 2},
		{Name: "append", ID: 4, Primitive: "append", Default: true, Lists: 8, Capacity: 256, EntrySize: 4, Batch: 1},
		{Name: "sketchmerge", ID: 10, Primitive: "sketchmerge", Default: true, Rows: 3, Columns: 256, Epochs: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{}
	var members []Member
	for i := range n {
		rc := region.DefaultConfig()
		rc.HugePages = region.HugePagesOff
		cat, err := store.Open(descs, rc, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cat.Close() })
		tc := translator.DefaultConfig()
		tr, err := translator.New(tc, cat.Descriptors(), cat, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := "c" + string(rune('1'+i))
		c.cats, c.names = append(c.cats, cat), append(c.names, name)
		members = append(members, Member{Name: name, Tr: tr})
	}
	if c.router, err = New(Config{Replicas: replicas}, members); err != nil {
		t.Fatal(err)
	}
	c.w = c.router.NewWorker().(*Worker)
	return c
}

var from = netip.MustParseAddrPort("192.0.2.1:9")

func (c *cluster) send(t *testing.T, h dta.Header, reps ...dta.Report) []byte {
	t.Helper()
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 1500), h)
	for i := range reps {
		if err := bw.Add(&reps[i]); err != nil {
			t.Fatal(err)
		}
	}
	reply := c.w.Handle(bw.Bytes(), from, 1)
	c.router.FlushAll()
	return reply
}

func key(k uint32) []byte { return binary.BigEndian.AppendUint32(nil, k) }

func TestKeysGoToTheirOwnerAndReplicasOnly(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		c := newCluster(t, 3, replicas)
		pm, _ := partition.New(c.names)
		for k := uint32(1); k <= 200; k++ {
			c.send(t, dta.Header{}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key(k), Value: key(k * 10)})
		}
		for k := uint32(1); k <= 200; k++ {
			holders := pm.Owners(nil, key(k), replicas)
			for i, cat := range c.cats {
				res, _ := cat.ByName("keywrite").KeyWrite.Query(le(k), 0, 0, nil)
				want := contains(holders, i)
				if got := res.Status.String() == "found"; got != want {
					t.Fatalf("replicas %d: key %d on %s: found %v, want %v (holders %v)", replicas, k, c.names[i], got, want, holders)
				}
			}
		}
		if got := c.router.Stats().Copies.Load(); got != uint64(200*replicas) {
			t.Errorf("%d copies handed out, want %d", got, 200*replicas)
		}
	}
}

// le is a compat key's hashed bytes for Key-Write (little-endian).
func le(k uint32) []byte { return binary.LittleEndian.AppendUint32(nil, k) }

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestAppendListsLiveOnTheirOwner(t *testing.T) {
	c := newCluster(t, 3, 1)
	pm, _ := partition.New(c.names)
	for i := range 80 {
		c.send(t, dta.Header{}, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 8), Value: key(uint32(i))})
	}
	for l := uint32(0); l < 8; l++ {
		for i, cat := range c.cats {
			h, _ := cat.ByName("append").Append.Head(l)
			want := uint64(0)
			if pm.ListOwner(l) == i {
				want = 10
			}
			if h != want {
				t.Errorf("list %d on %s: head %d, want %d", l, c.names[i], h, want)
			}
		}
	}
}

func TestTheCollectorsSketchesAddUpToTheWholeSketch(t *testing.T) {
	c := newCluster(t, 3, 1)
	g := sketch.Geometry{Rows: 3, Columns: 256, Kind: sketch.CountMin}
	sk, _ := sketch.New(g)
	for i := range 3000 {
		sk.Update(key(uint32(i*i%501)), 1)
	}
	var reps []dta.Report
	sk.Runs(16, func(r sketch.Run) error {
		v := make([]byte, 0, 8*len(r.Counters))
		for _, x := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(x))
		}
		reps = append(reps, dta.Report{Opcode: dta.OpSketchExt, Epoch: 4, Row: uint8(r.Row), Column: uint32(r.Column), Value: v})
		return nil
	})
	for _, r := range reps {
		c.send(t, dta.Header{}, r)
	}
	spread := 0
	for r := range g.Rows {
		sum := make([]int64, g.Columns)
		for _, cat := range c.cats {
			row, err := cat.ByName("sketchmerge").SketchMerge.Row(4, r, nil)
			if err != nil {
				t.Fatalf("a collector does not hold epoch 4: %v (the router opens a new epoch everywhere)", err)
			}
			spread++
			for i, v := range row {
				sum[i] += v
			}
		}
		for i := range sum {
			if sum[i] != sk.Row(r)[i] {
				t.Fatalf("row %d column %d: collectors add up to %d, want %d", r, i, sum[i], sk.Row(r)[i])
			}
		}
	}
	if spread < 2*g.Rows {
		t.Errorf("the runs went to fewer than two collectors per row (%d row copies)", spread)
	}
}

// A Sketch-Merge report its translators refuse — a row or columns beyond
// the store's geometry, a store that does not exist — opens no epoch on any
// collector: the next report of the epoch really open is taken everywhere.
func TestARefusedSketchReportOpensNoEpoch(t *testing.T) {
	c := newCluster(t, 3, 1)
	run := func(epoch uint32, row uint8, column uint32, store uint16) dta.Report {
		return dta.Report{Opcode: dta.OpSketchExt, Store: store, Epoch: epoch, Row: row, Column: column,
			Value: binary.BigEndian.AppendUint64(nil, 7)}
	}
	c.send(t, dta.Header{}, run(50, 0, 3, 0))
	for _, bad := range []dta.Report{
		run(100, 200, 0, 0), // no row 200
		run(101, 0, 256, 0), // past the last column
		run(102, 0, 0, 99),  // no store 99
		run(103, 0, 0, 1),   // store 1 is a Key-Write store
	} {
		c.send(t, dta.Header{}, bad)
	}
	for k := range 30 { // runs spread over the collectors
		c.send(t, dta.Header{}, run(50, 1, uint32(k), 0))
	}
	var total int64
	for i, cat := range c.cats {
		sm := cat.ByName("sketchmerge").SketchMerge
		for _, e := range []uint32{100, 101, 102, 103} {
			if _, err := sm.Row(e, 0, nil); err == nil {
				t.Errorf("%s holds epoch %d, which only a refused report named", c.names[i], e)
			}
		}
		row, err := sm.Row(50, 1, nil)
		if err != nil {
			t.Fatalf("%s: epoch 50: %v", c.names[i], err)
		}
		for _, v := range row {
			total += v
		}
	}
	if total != 30*7 {
		t.Errorf("row 1 of epoch 50 adds up to %d over the collectors, want %d: reports after the refused ones were dropped", total, 30*7)
	}
}

// What the front end refuses itself — a datagram that does not decode, a
// bad record in a batch, a duplicate or out-of-order datagram, one the
// ingest refuses — is counted by reason in the router's Drops and in no
// collector's translator; each collector's translator counts the datagrams
// that gave it a report, and only the drops that are its own.
func TestTheFrontEndCountsWhatItRefusesAndEachCollectorWhatItTook(t *testing.T) {
	c := newCluster(t, 3, 1)
	for k := uint32(1); k <= 30; k++ {
		c.send(t, dta.Header{}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key(k), Value: key(k)})
	}
	var took uint64
	for i, m := range c.router.Members() {
		st := m.Tr.Stats()
		if st.Datagrams == 0 || st.Dropped() != 0 {
			t.Errorf("%s: %d datagrams, %d drops after 30 good one-report datagrams spread over 3", c.names[i], st.Datagrams, st.Dropped())
		}
		took += st.Datagrams
	}
	if took != 30 {
		t.Errorf("the collectors' translators counted %d datagrams, want 30 (each gave one collector its report)", took)
	}
	c.w.Handle([]byte{0}, from, 1)                                     // shorter than the header: truncated
	c.w.Handle([]byte{0x7F, 0, 0, 0, 0}, from, 1)                      // unknown opcode
	c.w.Handle([]byte{0x01, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1}, from, 1) // a compat Key-Write of N 9
	h := dta.Header{Flags: dta.FlagRetransmit, Seq: 0}
	good := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: key(7), Value: key(7)}
	c.send(t, h, good)
	c.send(t, h, good) // again: duplicate
	h.Seq = 5
	c.send(t, h, good) // a gap: out_of_order
	c.w.Refuse(translator.ReasonRateLimited, from, 1)
	s := c.router.Stats()
	for _, want := range []struct {
		reason translator.Reason
		n      uint64
	}{
		{translator.ReasonTruncated, 1}, {translator.ReasonUnknownOpcode, 1}, {translator.ReasonRedundancy, 1},
		{translator.ReasonDuplicate, 1}, {translator.ReasonOutOfOrder, 1}, {translator.ReasonRateLimited, 1},
	} {
		if got := s.Drops[want.reason].Load(); got != want.n {
			t.Errorf("front end drops %s = %d, want %d", want.reason, got, want.n)
		}
	}
	for i, m := range c.router.Members() {
		if st := m.Tr.Stats(); st.Dropped() != 0 {
			t.Errorf("%s's translator counted %d drops of the front end's: %v", c.names[i], st.Dropped(), st.Drops)
		}
	}
	if got := s.Datagrams.Load(); got != 30+3+3+1 {
		t.Errorf("front end datagrams %d, want %d", got, 30+3+3+1)
	}
}

func TestRetransmittableDatagramsAreCheckedOnceAndAcked(t *testing.T) {
	c := newCluster(t, 2, 1)
	h := dta.Header{Flags: dta.FlagRetransmit, Seq: 0}
	r := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: key(1), Value: key(2)}
	if reply := c.send(t, h, r); len(reply) != 2 || reply[0] != 0 || reply[1] != 0 {
		t.Fatalf("first datagram: reply %x, want ACK 0", reply)
	}
	h.Seq = 2 // 1 is missing
	if reply := c.send(t, h, r); len(reply) != 2 || reply[0] != 0 || reply[1]&0x80 == 0 {
		t.Fatalf("after a gap: reply %x, want NACK 0", reply)
	}
	if got := c.router.Stats().Reports.Load(); got != 1 {
		t.Errorf("%d reports routed, want 1 (the NACKed datagram is not applied)", got)
	}
	if a, n := c.router.Stats().Acks.Load(), c.router.Stats().Nacks.Load(); a != 1 || n != 1 {
		t.Errorf("the front end counted %d ACKs and %d NACKs, want 1 and 1", a, n)
	}
}

func TestABatchedRouterAppliesEachCollectorsOpsAtTheEndOfTheBatch(t *testing.T) {
	c := newCluster(t, 3, 1)
	c.w.DeferToBatch()
	pm, _ := partition.New(c.names)
	found := func(k uint32) bool {
		res, _ := c.cats[pm.Owner(key(k))].ByName("keywrite").KeyWrite.Query(le(k), 0, 0, nil)
		return res.Status.String() == "found"
	}
	for k := uint32(1); k <= 30; k++ {
		c.w.Handle(datagram(t, dta.Header{}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key(k), Value: key(k)}), from, 1)
	}
	if found(1) {
		t.Error("a batched report was applied before the batch ended")
	}
	c.w.EndBatch()
	for k := uint32(1); k <= 30; k++ {
		if !found(k) {
			t.Errorf("key %d not on its owner after EndBatch", k)
		}
	}
	var reports uint64
	for _, m := range c.router.members {
		reports += m.Tr.Stats().Reports[dta.KeyWrite]
	}
	if reports != 30 {
		t.Errorf("%d reports counted after EndBatch, want 30", reports)
	}
	// A datagram its reporter may resend is applied before its ACK.
	ack := c.w.Handle(datagram(t, dta.Header{Flags: dta.FlagRetransmit, Seq: 1}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key(99), Value: key(1)}), from, 1)
	if ack == nil {
		t.Fatal("no ACK")
	}
	if !found(99) {
		t.Error("a retransmittable report was ACKed before it was applied")
	}
}

func datagram(t *testing.T, h dta.Header, reps ...dta.Report) []byte {
	t.Helper()
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 1500), h)
	for i := range reps {
		if err := bw.Add(&reps[i]); err != nil {
			t.Fatal(err)
		}
	}
	return bw.Bytes()
}

func TestCountersHeldForAnOlderEpochLandBeforeANewEpochOpens(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			c := newCluster(t, 2, 1)
			if batched {
				c.w.DeferToBatch()
			}
			run := func(e uint32, row uint8, v uint64) dta.Report {
				return dta.Report{Opcode: dta.OpSketchExt, Epoch: e, Row: row, Column: 0, Value: binary.BigEndian.AppendUint64(nil, v)}
			}
			// Epoch 4's counter is held when epoch 6 opens, which clears
			// the copy of epoch 7 ahead: 4's copy with three copies.
			c.w.Handle(datagram(t, dta.Header{}, run(4, 0, 5), run(6, 1, 1)), from, 1)
			c.w.EndBatch()
			c.send(t, dta.Header{}, run(7, 2, 1))
			for i, cat := range c.cats {
				row, err := cat.ByName("sketchmerge").SketchMerge.Row(7, 0, nil)
				if err != nil {
					t.Fatalf("collector %d: epoch 7: %v", i, err)
				}
				if row[0] != 0 {
					t.Errorf("collector %d: epoch 7 row 0 column 0 = %d, want 0 (epoch 4's counter landed after the clear)", i, row[0])
				}
			}
		})
	}
}
