package tea

import (
	"errors"
	"sync"
)

// ErrOutOfBounds reports an access outside a memory.
var ErrOutOfBounds = errors.New("tea: access out of bounds")

// Memory is the table's memory as the control plane writes it: byte offsets
// into the table (or one server's share of it). A *region.Region satisfies
// it; so will an RDMA WRITE path. Write and Read may be called from one
// goroutine at a time per Table.
type Memory interface {
	// Write copies b to offset off.
	Write(off uint64, b []byte) error
	// Read fills b from offset off.
	Read(off uint64, b []byte) error
}

// LocalMemory is a Memory over a byte slice on the Go heap, safe for
// concurrent use: each Read and Write is atomic with respect to the others.
type LocalMemory struct {
	mu sync.RWMutex
	b  []byte
}

// NewLocalMemory returns size zero bytes of local memory. A Spec's
// TableSize may be far beyond what a machine holds: callers bound size
// first (an impossible size panics or runs out of memory here).
func NewLocalMemory(size uint64) *LocalMemory { return &LocalMemory{b: make([]byte, size)} }

// Size returns the bytes of m.
func (m *LocalMemory) Size() uint64 { return uint64(len(m.b)) }

// Write copies b to offset off.
func (m *LocalMemory) Write(off uint64, b []byte) error {
	if off > uint64(len(m.b)) || uint64(len(b)) > uint64(len(m.b))-off {
		return ErrOutOfBounds
	}
	m.mu.Lock()
	copy(m.b[off:], b)
	m.mu.Unlock()
	return nil
}

// Read fills b from offset off.
func (m *LocalMemory) Read(off uint64, b []byte) error {
	if off > uint64(len(m.b)) || uint64(len(b)) > uint64(len(m.b))-off {
		return ErrOutOfBounds
	}
	m.mu.RLock()
	copy(b, m.b[off:])
	m.mu.RUnlock()
	return nil
}

// MemoryReader is the local Reader: it reads a Memory synchronously and
// calls done before Read returns. It also writes scratchpads (Writer).
type MemoryReader struct {
	Mem Memory
}

// Read fills dst from off and calls done(id, err).
func (r MemoryReader) Read(off uint64, dst []byte, id uint64, done func(id uint64, err error)) {
	done(id, r.Mem.Read(off, dst))
}

// Write copies b to off.
func (r MemoryReader) Write(off uint64, b []byte) error { return r.Mem.Write(off, b) }
