// Package remote puts a TEA table in a server's memory reached over RoCEv2,
// as the TEA paper's switch does: the control plane's writes are RDMA
// WRITEs and its reads RDMA READs (Memory), and the lookup engine's one read
// per lookup is one RDMA READ of the key's row, with the packet parked in
// the row's scratchpad by an RDMA WRITE on the same queue pair just before
// (Server, a tea.Reader and tea.Writer). Both go through the public RoCEv2
// requester (package rdma/requester) to a responder that registered the
// table's memory with remote read and write rights.
//
// The package only adapts: it holds no table logic (internal/tea decides
// every offset) and opens no connection itself.
package remote

import (
	"fmt"
	"sync"

	"github.com/dta-go/dta/rdma/requester"
)

// Memory is a table's memory on one server: tea.Memory over RDMA.
type Memory struct {
	r      *requester.Requester
	target uint16
}

// NewMemory returns the memory of target (an index into the targets set on
// r with SetTargets).
func NewMemory(r *requester.Requester, target uint16) *Memory {
	return &Memory{r: r, target: target}
}

// Write places b at off with one RDMA WRITE (it returns once the WRITE is
// queued in order on the queue pair: a READ posted after it sees it).
func (m *Memory) Write(off uint64, b []byte) error {
	if err := m.r.Post([]requester.Op{{Kind: requester.Write, Target: m.target, Offset: off, Data: b}}); err != nil {
		return fmt.Errorf("tea remote write at %d: %w", off, err)
	}
	return nil
}

// Read fills b from off with one RDMA READ and waits for it.
func (m *Memory) Read(off uint64, b []byte) error {
	if err := m.r.Read(m.target, off, b); err != nil {
		return fmt.Errorf("tea remote read at %d: %w", off, err)
	}
	return nil
}

// Server is the lookup engine's access to one server: tea.Reader (an
// asynchronous RDMA READ per lookup) and tea.Writer (parking a packet). It
// takes the requester's READ completions: give each requester to at most
// one Server. Completions are handed to the engine from a goroutine of the
// Server's own (the requester's callback runs under its lock, and the
// engine may post the next read from a completion).
type Server struct {
	Memory
	mu      sync.Mutex
	pending map[uint64]func(uint64, error)
	comps   chan requester.ReadCompletion
	stop    chan struct{}
	wg      sync.WaitGroup
}

// completionQueue bounds the READ completions waiting for the engine; the
// engine's InFlight (256 by default) keeps far fewer in flight.
const completionQueue = 4096

// NewServer returns the engine's access to target on r and installs r's
// READ completion callback. Close it when done.
func NewServer(r *requester.Requester, target uint16) *Server {
	s := &Server{Memory: Memory{r: r, target: target}, pending: make(map[uint64]func(uint64, error), 256),
		comps: make(chan requester.ReadCompletion, completionQueue), stop: make(chan struct{})}
	r.OnRead(func(c requester.ReadCompletion) { s.comps <- c })
	s.wg.Go(s.deliver)
	return s
}

// Close stops taking completions (the requester's READs still complete).
func (s *Server) Close() {
	s.r.OnRead(nil)
	close(s.stop)
	s.wg.Wait()
}

func (s *Server) deliver() {
	for {
		select {
		case c := <-s.comps:
			s.completed(c)
		case <-s.stop:
			return
		}
	}
}

// Read posts one RDMA READ of len(dst) bytes at off into dst; done runs
// with id when it completes (from the requester's receive goroutine), or
// at once if it could not be sent. It implements tea.Reader.
func (s *Server) Read(off uint64, dst []byte, id uint64, done func(uint64, error)) {
	s.mu.Lock()
	s.pending[id] = done
	s.mu.Unlock()
	if err := s.r.Post([]requester.Op{{Kind: requester.Read, Target: s.target, Offset: off, Dst: dst, ID: id}}); err != nil {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		done(id, fmt.Errorf("tea remote read at %d: %w", off, err))
	}
}

func (s *Server) completed(c requester.ReadCompletion) {
	s.mu.Lock()
	done := s.pending[c.ID]
	delete(s.pending, c.ID)
	s.mu.Unlock()
	if done != nil {
		done(c.ID, c.Err)
	}
}
