package rdmabench

import (
	"context"
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/remote"
	"github.com/dta-go/dta/internal/tea/teabench"
	"github.com/dta-go/dta/rdma/requester"
)

// server is one software TEA server: a region registered with a responder
// on 127.0.0.1, and a requester connected to it.
type server struct {
	mem  *region.Region
	resp *rdma.Responder
	q    *requester.Requester
	run  chan error
	dead bool
}

// startServer starts a server of size bytes whose requester has the ACK
// timeout ackTimeout and gives up after retries timeouts in a row (its
// READs then complete with an error).
func startServer(size uint64, ackTimeout time.Duration, retries int) (*server, error) {
	rc := region.DefaultConfig()
	rc.HugePages, rc.Size = region.HugePagesOff, max(size, 4096)
	mem, err := region.New(rc, nil)
	if err != nil {
		return nil, err
	}
	s := &server{mem: mem, run: make(chan error, 1)}
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	if s.resp, err = rdma.NewResponder(cfg, nil); err != nil {
		mem.Close()
		return nil, err
	}
	mr, err := s.resp.RegisterMR("tea", mem, rdma.AccessRemoteWrite|rdma.AccessRemoteRead)
	if err != nil {
		s.resp.Close()
		mem.Close()
		return nil, err
	}
	s.resp.SetAdvertisement([]byte("tea"))
	go func() { s.run <- s.resp.Run(context.Background()) }()
	qc := requester.DefaultConfig()
	qc.Collector = s.resp.LocalAddr()
	qc.Timeout, qc.Retries = ackTimeout, retries
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.q, err = requester.Dial(ctx, qc, nil); err != nil {
		s.kill()
		mem.Close()
		return nil, fmt.Errorf("dial the software responder: %w", err)
	}
	s.q.SetTargets([]requester.Target{{VA: mr.VA, RKey: mr.RKey, Length: mr.Length}})
	return s, nil
}

// kill closes the responder: the server is gone, the requester finds out.
func (s *server) kill() {
	if s.dead {
		return
	}
	s.dead = true
	s.resp.Close()
	<-s.run
}

func (s *server) close() {
	s.q.Close()
	s.kill()
	s.mem.Close()
}

// cluster is a TEA table over n software servers, loaded by the control
// plane with RDMA WRITEs, and a lookup engine reading it with RDMA READs.
type cluster struct {
	servers []*server
	remotes []*remote.Server
	table   *tea.Table
	place   *tea.Placement
	keys    []byte // flat, 13 bytes each
	n       int
}

const keySize = 13

// newCluster plans a table for keys 5-tuples with a scratchpad of
// scratchpad bytes, places it on n servers with replicas copies of every
// bucket range, and inserts the keys over RDMA.
func newCluster(keys, n, replicas, scratchpad, cacheSize int, ackTimeout time.Duration, retries int, seed uint64) (*cluster, error) {
	plan, err := tea.PlanTable(uint64(keys), keySize, 6, 8, 0.7, scratchpad)
	if err != nil {
		return nil, err
	}
	p, err := tea.PlaceEqual(plan.Spec, n, replicas)
	if err != nil {
		return nil, err
	}
	c := &cluster{place: p, n: keys}
	mems := make([]tea.Memory, n)
	for i := range n {
		s, err := startServer(p.Used(i), ackTimeout, retries)
		if err != nil {
			c.close()
			return nil, err
		}
		c.servers = append(c.servers, s)
		mems[i] = remote.NewMemory(s.q, 0)
	}
	cm, err := tea.NewClusterMemory(p, mems)
	if err != nil {
		c.close()
		return nil, err
	}
	if c.table, err = tea.NewTable(plan.Spec, cm, tea.TableConfig{MaxTries: tea.DefaultMaxTries, CacheSize: cacheSize, Seed: seed}); err != nil {
		c.close()
		return nil, err
	}
	c.keys = teabench.FiveTuples(keys, keySize, seed)
	val := make([]byte, 6)
	for i := range keys {
		if err := c.table.Insert(c.key(i), val); err != nil {
			c.close()
			return nil, fmt.Errorf("insert key %d over RDMA: %w", i, err)
		}
	}
	// A READ after the WRITEs on each queue pair: every insert has landed.
	var b [8]byte
	for _, m := range mems {
		if err := m.Read(0, b[:]); err != nil {
			c.close()
			return nil, err
		}
	}
	for _, s := range c.servers {
		c.remotes = append(c.remotes, remote.NewServer(s.q, 0))
	}
	return c, nil
}

func (c *cluster) key(i int) []byte { return c.keys[i*keySize : (i+1)*keySize] }

func (c *cluster) readers() []tea.Reader {
	rs := make([]tea.Reader, len(c.remotes))
	for i, r := range c.remotes {
		rs[i] = r
	}
	return rs
}

func (c *cluster) close() {
	for _, r := range c.remotes {
		r.Close()
	}
	for _, s := range c.servers {
		s.close()
	}
}
