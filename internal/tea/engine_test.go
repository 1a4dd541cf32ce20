package tea_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea"
)

// clock is a settable clock for the engine.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// read is one read a queueReader holds.
type read struct {
	off  uint64
	dst  []byte
	id   uint64
	done func(uint64, error)
}

// queueReader reads a memory synchronously, or, when holding, keeps the
// reads until the test completes or fails them; it also parks packets.
type queueReader struct {
	mem  tea.Memory
	mu   sync.Mutex
	hold bool
	fail error // every read fails at once with it
	held []read
}

func (r *queueReader) Read(off uint64, dst []byte, id uint64, done func(uint64, error)) {
	r.mu.Lock()
	if r.fail != nil {
		err := r.fail
		r.mu.Unlock()
		done(id, err)
		return
	}
	if r.hold {
		r.held = append(r.held, read{off, dst, id, done})
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	done(id, r.mem.Read(off, dst))
}

func (r *queueReader) Write(off uint64, b []byte) error { return r.mem.Write(off, b) }

// release completes the held reads in order, with err or with data.
func (r *queueReader) release(err error) {
	r.mu.Lock()
	held := r.held
	r.held, r.hold = nil, false
	r.mu.Unlock()
	for _, h := range held {
		if err != nil {
			h.done(h.id, err)
		} else {
			h.done(h.id, r.mem.Read(h.off, h.dst))
		}
	}
}

// got is a Result copied out of the callback.
type got struct {
	tea.Result
}

// rig is a placed table, its control plane and an engine over queueReaders.
type rig struct {
	spec    tea.Spec
	p       *tea.Placement
	tab     *tea.Table
	eng     *tea.Engine
	readers []*queueReader
	clock   *clock
	mu      sync.Mutex
	results []got
	keys    [][]byte
}

func newRig(t testing.TB, spec tea.Spec, servers, replicas, entries int, tweak func(*tea.Config)) *rig {
	t.Helper()
	p, err := tea.PlaceEqual(spec, servers, replicas)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{spec: spec, p: p, clock: &clock{}}
	r.clock.ns.Store(1e9)
	mems := make([]tea.Memory, servers)
	readers := make([]tea.Reader, servers)
	for i := range mems {
		mems[i] = tea.NewLocalMemory(p.Used(i))
		r.readers = append(r.readers, &queueReader{mem: mems[i]})
		readers[i] = r.readers[i]
	}
	cm, err := tea.NewClusterMemory(p, mems)
	if err != nil {
		t.Fatal(err)
	}
	r.tab, err = tea.NewTable(spec, cm, tea.TableConfig{MaxTries: 20, CacheSize: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.keys = keys(entries, spec.KeySize, 42)
	for _, k := range r.keys {
		if err := r.tab.Insert(k, valueOf(k, spec.ValueSize)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tea.Config{
		Placement: p, Readers: readers, Stash: r.tab.Stash(), Cache: r.tab.Cache(),
		Timeout: time.Millisecond, Holddown: 10 * time.Millisecond, Now: r.clock.Now,
		Done: func(res *tea.Result) {
			c := *res
			c.Key, c.Value, c.Packet = bytes.Clone(c.Key), bytes.Clone(c.Value), bytes.Clone(c.Packet)
			r.mu.Lock()
			r.results = append(r.results, got{c})
			r.mu.Unlock()
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	r.eng, err = tea.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// take returns and forgets the results so far.
func (r *rig) take() []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.results
	r.results = nil
	return out
}

// lookup looks key up and returns its one result, which must be there.
func (r *rig) lookup(t testing.TB, key []byte) got {
	t.Helper()
	if err := r.eng.Lookup(key, 7); err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	res := r.take()
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	return res[0]
}

var smallSpec = tea.Spec{Buckets: 256, Cells: 4, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}

func TestEveryKeyIsFoundWithAtMostOneRead(t *testing.T) {
	for _, tc := range []struct{ servers, replicas int }{{1, 1}, {3, 1}, {8, 2}} {
		t.Run(fmt.Sprintf("%d servers, %d replicas", tc.servers, tc.replicas), func(t *testing.T) {
			r := newRig(t, smallSpec, tc.servers, tc.replicas, 950, nil) // load 0.93
			if r.tab.Stash().Len() == 0 {
				t.Log("no key stashed at this load")
			}
			for _, k := range r.keys {
				res := r.lookup(t, k)
				if !res.Found || !bytes.Equal(res.Value, valueOf(k, 6)) || res.Err != nil {
					t.Fatalf("key %x: %+v", k, res.Result)
				}
				if res.Reads > 1 || res.Retries != 0 {
					t.Fatalf("key %x took %d reads, %d retries", k, res.Reads, res.Retries)
				}
				switch res.Source {
				case tea.FromStash:
					if res.Reads != 0 || res.Server != -1 {
						t.Fatalf("stash answer %+v", res.Result)
					}
				case tea.FromMemory:
					home := smallSpec.HomeOf(k)
					if res.Bucket != home && res.Bucket != smallSpec.Next(home) {
						t.Fatalf("key %x with home %d found in bucket %d", k, home, res.Bucket)
					}
					if primary, _ := r.p.RowAddr(home, 0); res.Server != primary {
						t.Fatalf("key %x answered by server %d, its home's primary is %d", k, res.Server, primary)
					}
					if _, loc, _ := r.tab.Get(k); loc.Bucket != res.Bucket || loc.Cell != res.Cell {
						t.Fatalf("engine found %x at %d/%d, the control plane says %+v", k, res.Bucket, res.Cell, loc)
					}
				default:
					t.Fatalf("key %x answered by %v", k, res.Source)
				}
			}
			st := r.eng.Stats()
			if st.Lookups.Load() != 950 || st.Found.Load() != 950 || st.StashHits.Load()+st.MemoryReads.Load() != 950 {
				t.Errorf("stats: %d lookups, %d found, %d stash, %d memory", st.Lookups.Load(), st.Found.Load(),
					st.StashHits.Load(), st.MemoryReads.Load())
			}
		})
	}
}

func TestAnAbsentKeyIsAMissAfterOneRead(t *testing.T) {
	r := newRig(t, smallSpec, 2, 1, 500, nil)
	for _, k := range keys(100, 13, 99) {
		res := r.lookup(t, k)
		if res.Found || res.Source != tea.FromMemory || res.Reads != 1 || res.Err != nil || res.Bucket != smallSpec.HomeOf(k) {
			t.Fatalf("absent key %x: %+v", k, res.Result)
		}
	}
}

func TestLookupsRefuseKeysOfTheWrongSize(t *testing.T) {
	r := newRig(t, smallSpec, 1, 1, 10, nil)
	if err := r.eng.Lookup([]byte{1, 2}, 0); !errors.Is(err, tea.ErrKeySize) || len(r.take()) != 0 {
		t.Errorf("Lookup of a 2-byte key: %v", err)
	}
}

func TestHotKeysAreReportedThenServedByTheCache(t *testing.T) {
	r := newRig(t, smallSpec, 2, 1, 100, func(c *tea.Config) { c.HotThreshold = 10 })
	hot := r.keys[3]
	for range 9 {
		r.lookup(t, hot)
	}
	if len(r.eng.Digests()) != 0 {
		t.Fatal("a key looked up 9 times was reported at threshold 10")
	}
	r.lookup(t, hot)
	r.lookup(t, hot) // reported once only
	if n := len(r.eng.Digests()); n != 1 {
		t.Fatalf("%d digests, want 1", n)
	}
	d := <-r.eng.Digests()
	if !bytes.Equal(d.Key(), hot) || d.Count != 10 {
		t.Fatalf("digest %x count %d", d.Key(), d.Count)
	}
	if est := r.eng.Estimate(hot); est != 11 {
		t.Errorf("estimate %d after 11 lookups", est)
	}
	if ok, err := r.tab.Promote(d.Key(), r.eng.Estimate); !ok || err != nil {
		t.Fatalf("Promote: %v %v", ok, err)
	}
	res := r.lookup(t, hot)
	if res.Source != tea.FromCache || res.Reads != 0 || !bytes.Equal(res.Value, valueOf(hot, 6)) {
		t.Errorf("after promotion: %+v", res.Result)
	}
	r.eng.ResetSketch()
	if est := r.eng.Estimate(hot); est != 0 {
		t.Errorf("estimate %d after a reset", est)
	}
}

func TestAServerThatStopsAnsweringIsReplacedByItsReplica(t *testing.T) {
	r := newRig(t, smallSpec, 2, 2, 500, nil)
	var key []byte
	for _, k := range r.keys {
		if _, ok := r.tab.Stash().Get(k, nil); !ok {
			key = k
			break
		}
	}
	home := smallSpec.HomeOf(key)
	primary, _ := r.p.RowAddr(home, 0)
	replica, _ := r.p.RowAddr(home, 1)
	r.readers[primary].hold = true

	if err := r.eng.Lookup(key, 1); err != nil {
		t.Fatal(err)
	}
	if len(r.take()) != 0 {
		t.Fatal("a result before the primary answered or timed out")
	}
	r.clock.Advance(500 * time.Microsecond)
	if n := r.eng.Expire(r.clock.Now()); n != 0 {
		t.Fatalf("%d reads expired before the timeout", n)
	}
	r.clock.Advance(600 * time.Microsecond)
	if n := r.eng.Expire(r.clock.Now()); n != 1 {
		t.Fatalf("%d reads expired after the timeout, want 1", n)
	}
	res := r.take()
	if len(res) != 1 || !res[0].Found || res[0].Server != replica || res[0].Retries != 1 || res[0].Reads != 1 {
		t.Fatalf("after the timeout: %+v", res)
	}
	// Held down: the next lookup goes straight to the replica.
	if res := r.lookup(t, key); res.Server != replica || res.Retries != 0 {
		t.Fatalf("during the hold-down: %+v", res.Result)
	}
	// The lost read completes at last (its queue pair flushed): it is late,
	// and its slot is free again.
	r.readers[primary].release(errors.New("flushed"))
	if late := r.eng.Stats().Late.Load(); late != 1 {
		t.Errorf("%d late completions, want 1", late)
	}
	// After the hold-down the primary answers again.
	r.clock.Advance(10 * time.Millisecond)
	if res := r.lookup(t, key); res.Server != primary || !res.Found {
		t.Fatalf("after the hold-down: %+v", res.Result)
	}
	ps := r.eng.ServerStats(primary)
	if ps.Timeouts.Load() != 1 || ps.Skipped.Load() != 1 || r.eng.Stats().Retries.Load() != 1 {
		t.Errorf("primary: %d timeouts, %d skipped; %d retries", ps.Timeouts.Load(), ps.Skipped.Load(), r.eng.Stats().Retries.Load())
	}
}

func TestFailuresFailOverOrEndUnavailable(t *testing.T) {
	boom := errors.New("port down")
	for _, tc := range []struct {
		name        string
		failPrimary bool
		failReplica bool
		downReplica bool
		wantServer  int // 0: primary, 1: replica, -1: none
		wantErr     error
		wantRetries int
	}{
		{"a read that fails goes to the replica at once", true, false, false, 1, nil, 1},
		{"when both holders fail the lookup is unavailable", true, true, false, -1, tea.ErrUnavailable, 1},
		{"a replica marked down is not tried", true, false, true, -1, tea.ErrUnavailable, 0},
		{"a healthy primary answers alone", false, true, false, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, smallSpec, 3, 2, 300, nil)
			key := keys(1, 13, 1234)[0] // absent: always read from memory
			home := smallSpec.HomeOf(key)
			servers := [2]int{}
			servers[0], _ = r.p.RowAddr(home, 0)
			servers[1], _ = r.p.RowAddr(home, 1)
			if tc.failPrimary {
				r.readers[servers[0]].fail = boom
			}
			if tc.failReplica {
				r.readers[servers[1]].fail = boom
			}
			if tc.downReplica {
				r.eng.SetServerUp(servers[1], false)
			}
			res := r.lookup(t, key)
			want := -1
			if tc.wantServer >= 0 {
				want = servers[tc.wantServer]
			}
			if res.Server != want || !errors.Is(res.Err, tc.wantErr) || res.Retries != tc.wantRetries {
				t.Errorf("got server %d err %v retries %d, want server %d err %v retries %d",
					res.Server, res.Err, res.Retries, want, tc.wantErr, tc.wantRetries)
			}
			if tc.downReplica {
				r.eng.SetServerUp(servers[1], true)
				r.readers[servers[0]].fail = nil
				r.clock.Advance(time.Second)
				if res := r.lookup(t, key); res.Err != nil {
					t.Errorf("after both came back: %v", res.Err)
				}
			}
		})
	}
}

func TestLimitsOnLookupsInFlight(t *testing.T) {
	t.Run("a full engine refuses lookups", func(t *testing.T) {
		r := newRig(t, smallSpec, 1, 1, 10, func(c *tea.Config) { c.InFlight = 2 })
		r.readers[0].hold = true
		absent := keys(3, 13, 77)
		for i, k := range absent {
			err := r.eng.Lookup(k, uint64(i))
			if (i < 2) != (err == nil) || i == 2 && !errors.Is(err, tea.ErrBusy) {
				t.Fatalf("lookup %d: %v", i, err)
			}
		}
		r.readers[0].release(nil)
		if res := r.take(); len(res) != 2 || res[0].Tag != 0 || res[1].Tag != 1 {
			t.Fatalf("results %+v", res)
		}
		if r.eng.Stats().Busy.Load() != 1 {
			t.Error("the refusal was not counted")
		}
		if err := r.eng.Lookup(absent[2], 2); err != nil {
			t.Errorf("after the reads completed: %v", err)
		}
	})
	t.Run("a server at its outstanding limit is skipped for the replica", func(t *testing.T) {
		r := newRig(t, smallSpec, 2, 2, 10, func(c *tea.Config) { c.MaxOutstanding = 1 })
		absent := keys(50, 13, 78)
		a := absent[0]
		pa, _ := r.p.RowAddr(smallSpec.HomeOf(a), 0)
		var b []byte
		for _, k := range absent[1:] {
			if p, _ := r.p.RowAddr(smallSpec.HomeOf(k), 0); p == pa {
				b = k
				break
			}
		}
		r.readers[pa].hold = true
		_ = r.eng.Lookup(a, 1)
		res := r.lookup(t, b)
		if res.Server == pa || res.Retries != 0 {
			t.Errorf("second lookup: %+v", res.Result)
		}
		r.readers[pa].release(nil)
	})
}

func TestPacketsParkInTheScratchpadAndComeBack(t *testing.T) {
	spec := smallSpec
	spec.Scratchpad = 256
	r := newRig(t, spec, 2, 1, 100, nil)
	key := keys(1, 13, 5)
	t.Run("a packet comes back with the row", func(t *testing.T) {
		if err := r.eng.LookupPacket(key[0], []byte("packet one"), 1); err != nil {
			t.Fatal(err)
		}
		res := r.take()[0]
		if string(res.Packet) != "packet one" || res.PacketLost || res.Reads != 1 {
			t.Errorf("%+v", res.Result)
		}
	})
	t.Run("a packet above the scratchpad is refused", func(t *testing.T) {
		if err := r.eng.LookupPacket(key[0], make([]byte, 257), 1); !errors.Is(err, tea.ErrPacketSize) {
			t.Errorf("%v", err)
		}
	})
	t.Run("a second lookup of the same row overwrites the first one's packet", func(t *testing.T) {
		srv, _ := r.p.RowAddr(spec.HomeOf(key[0]), 0)
		r.readers[srv].hold = true
		_ = r.eng.LookupPacket(key[0], []byte("first"), 1)
		_ = r.eng.LookupPacket(key[0], []byte("second"), 2)
		r.readers[srv].release(nil)
		res := r.take()
		if len(res) != 2 || !res[0].PacketLost || res[0].Packet != nil || string(res[1].Packet) != "second" {
			t.Errorf("%+v", res)
		}
		if r.eng.Stats().PacketsLost.Load() != 1 {
			t.Error("the lost packet was not counted")
		}
	})
	t.Run("a stash answer returns the packet as given", func(t *testing.T) {
		tiny := tea.Spec{Buckets: 2, Cells: 1, KeySize: 13, ValueSize: 6, Scratchpad: 64, Hash: tea.CRC64}
		r := newRig(t, tiny, 1, 1, 3, nil) // 3 keys, 2 cells: one is stashed
		stashed := r.tab.Stash().Keys()
		if len(stashed) == 0 {
			t.Fatal("nothing stashed")
		}
		_ = r.eng.LookupPacket(stashed[0], []byte("p"), 3)
		if res := r.take()[0]; res.Source != tea.FromStash || string(res.Packet) != "p" || res.Reads != 0 {
			t.Errorf("%+v", res.Result)
		}
	})
}

func TestTheLookupPathAllocatesNothing(t *testing.T) {
	r := newRig(t, smallSpec, 2, 2, 900, func(c *tea.Config) {
		c.Done = func(*tea.Result) {}
		c.HotThreshold = 3
	})
	_ = r.tab.Insert(keys(1, 13, 1000)[0], valueOf(keys(1, 13, 1000)[0], 6))
	if _, err := r.tab.Promote(r.keys[0], r.eng.Estimate); err != nil {
		t.Fatal(err)
	}
	stashed := r.tab.Stash().Keys()
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"a key read from memory", r.keys[1]},
		{"an absent key", keys(1, 13, 555)[0]},
		{"a cached key", r.keys[0]},
		{"a stashed key", append(stashed, r.keys[2])[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, func() { _ = r.eng.Lookup(tc.key, 1) }); n != 0 {
				t.Errorf("%v allocations per lookup", n)
			}
		})
	}
}

// TestLookupsRacingUpdatesAreNeverWrong runs lookups of keys that are always
// in the table while the control plane updates them and inserts others
// (displacing victims), with a grace period equal to the engine's timeout.
// A lookup may be refused or unavailable, but never misses such a key or
// returns a value it never had.
func TestLookupsRacingUpdatesAreNeverWrong(t *testing.T) {
	spec := tea.Spec{Buckets: 64, Cells: 2, KeySize: 8, ValueSize: 8, Hash: tea.CRC64}
	p, _ := tea.PlaceEqual(spec, 2, 2)
	mems := []tea.Memory{tea.NewLocalMemory(p.Used(0)), tea.NewLocalMemory(p.Used(1))}
	cm, _ := tea.NewClusterMemory(p, mems)
	const timeout = time.Millisecond
	tab, err := tea.NewTable(spec, cm, tea.TableConfig{MaxTries: 4, Seed: 1, Grace: timeout})
	if err != nil {
		t.Fatal(err)
	}
	stable := keys(40, 8, 1)
	others := keys(60, 8, 2) // 100 entries in 128 cells of 2 per bucket: victims are displaced
	val := func(k []byte, version byte) []byte { v := valueOf(k, 8); v[7] = version; return v }
	for _, k := range stable {
		if err := tab.Insert(k, val(k, 0)); err != nil {
			t.Fatal(err)
		}
	}
	var wrong, missed, answered atomic.Int64
	eng, err := tea.New(tea.Config{
		Placement: p, Stash: tab.Stash(), Timeout: timeout, InFlight: 64,
		Readers: []tea.Reader{tea.MemoryReader{Mem: mems[0]}, tea.MemoryReader{Mem: mems[1]}},
		Done: func(res *tea.Result) {
			switch {
			case res.Err != nil:
			case !res.Found:
				missed.Add(1)
			case !bytes.Equal(res.Value[:7], valueOf(res.Key, 8)[:7]):
				wrong.Add(1)
			default:
				answered.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = eng.Lookup(stable[i%len(stable)], uint64(i))
			}
		})
	}
	deadline := time.Now().Add(400 * time.Millisecond)
	for i := 0; i < len(others) || time.Now().Before(deadline); i++ {
		k := stable[i%len(stable)]
		if err := tab.Update(k, val(k, byte(i))); err != nil {
			t.Fatal(err)
		}
		if i < len(others) {
			if err := tab.Insert(others[i], val(others[i], 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if wrong.Load() != 0 || missed.Load() != 0 || answered.Load() == 0 {
		t.Errorf("%d right answers, %d wrong values, %d misses of present keys", answered.Load(), wrong.Load(), missed.Load())
	}
	if tab.Stats().Kicks == 0 {
		t.Error("no victim was displaced during the race")
	}
}
