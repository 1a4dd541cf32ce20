package remote_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/remote"
	"github.com/dta-go/dta/rdma/requester"
)

// server is a TEA server: a region registered with a software RoCEv2
// responder (remote read and write), and a requester connected to it.
func server(t *testing.T, size uint64) (*rdma.Responder, *requester.Requester) {
	t.Helper()
	rc := region.DefaultConfig()
	rc.HugePages, rc.Size = region.HugePagesOff, size
	mem, err := region.New(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	resp, err := rdma.NewResponder(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := resp.RegisterMR("tea", mem, rdma.AccessRemoteWrite|rdma.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	resp.SetAdvertisement([]byte("tea"))
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	t.Cleanup(func() { resp.Close(); <-done })
	qc := requester.DefaultConfig()
	qc.Collector = resp.LocalAddr()
	qc.Timeout = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := requester.Dial(ctx, qc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	q.SetTargets([]requester.Target{{VA: mr.VA, RKey: mr.RKey, Length: mr.Length}})
	return resp, q
}

func TestAKeyTheControlPlaneInsertsOverRDMAIsFoundByOneRead(t *testing.T) {
	spec := tea.Spec{Buckets: 1024, Cells: 4, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}
	p, err := tea.PlaceEqual(spec, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, q := server(t, p.Used(0))
	// The control plane writes the table with RDMA WRITEs.
	tab, err := tea.NewTable(spec, remote.NewMemory(q, 0), tea.TableConfig{MaxTries: 20, CacheSize: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, 1500)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(make([]byte, 5), uint64(i)*0x9E3779B97F4A7C15)
		if err := tab.Insert(keys[i], binary.BigEndian.AppendUint16(make([]byte, 4), uint16(i))); err != nil {
			t.Fatal(err)
		}
	}
	srv := remote.NewServer(q, 0)
	defer srv.Close()
	var mu sync.Mutex
	results := map[string]tea.Result{}
	all := make(chan struct{})
	eng, err := tea.New(tea.Config{Placement: p, Readers: []tea.Reader{srv}, Stash: tab.Stash(), Cache: tab.Cache(),
		Timeout: time.Second, HotThreshold: ^uint32(0),
		Done: func(r *tea.Result) {
			c := *r
			c.Key, c.Value = bytes.Clone(c.Key), bytes.Clone(c.Value)
			mu.Lock()
			results[string(c.Key)] = c
			if len(results) == len(keys)+1 {
				close(all)
			}
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	reads0 := resp.Stats().Reads.Load()
	absent := []byte("not-a-key-at-all")[:13]
	for i, k := range append(keys, absent) {
		for eng.Lookup(k, uint64(i)) == tea.ErrBusy {
			time.Sleep(time.Millisecond)
			eng.Expire(time.Now())
		}
	}
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		t.Fatalf("%d of %d lookups answered", len(results), len(keys)+1)
	}
	fromMemory := 0
	for i, k := range keys {
		r := results[string(k)]
		want := binary.BigEndian.AppendUint16(make([]byte, 4), uint16(i))
		if !r.Found || !bytes.Equal(r.Value, want) {
			t.Fatalf("key %d: %+v", i, r)
		}
		if r.Reads > 1 {
			t.Fatalf("key %d took %d reads", i, r.Reads)
		}
		if r.Source == tea.FromMemory {
			fromMemory++
		}
	}
	if r := results[string(absent)]; r.Found || r.Reads != 1 {
		t.Errorf("an absent key: %+v, want not found after one read", r)
	}
	// One RDMA READ per lookup the stash did not answer, counted by the
	// responder (the absent key's too).
	if got := resp.Stats().Reads.Load() - reads0; got != uint64(fromMemory+1) {
		t.Errorf("the responder executed %d READs for %d lookups from memory (+1 absent)", got, fromMemory)
	}
	t.Logf("%d keys: %d from one RDMA READ each, %d from the stash", len(keys), fromMemory, len(keys)-fromMemory)
}
