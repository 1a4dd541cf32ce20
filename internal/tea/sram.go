package tea

import (
	"slices"
	"sync"
)

// sram is a small exact-match table as a switch keeps it in SRAM: the
// control plane writes it, the lookup engine reads it concurrently.
type sram struct {
	mu    sync.RWMutex
	m     map[string][]byte
	limit int // most entries; 0: no limit
}

func newSRAM(limit int) sram { return sram{m: make(map[string][]byte), limit: limit} }

// Get appends the value held for key to dst and reports whether there was
// one. It does not allocate when dst has room.
func (s *sram) Get(key, dst []byte) ([]byte, bool) {
	s.mu.RLock()
	v, ok := s.m[string(key)]
	if ok {
		dst = append(dst, v...)
	}
	s.mu.RUnlock()
	return dst, ok
}

// Len returns the number of entries.
func (s *sram) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Limit returns the most entries it holds; 0 means no limit.
func (s *sram) Limit() int { return s.limit }

// Keys returns a sorted copy of the keys.
func (s *sram) Keys() [][]byte {
	s.mu.RLock()
	keys := make([][]byte, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, []byte(k))
	}
	s.mu.RUnlock()
	slices.SortFunc(keys, func(a, b []byte) int { return slices.Compare(a, b) })
	return keys
}

func (s *sram) has(key []byte) bool {
	s.mu.RLock()
	_, ok := s.m[string(key)]
	s.mu.RUnlock()
	return ok
}

func (s *sram) full() bool { return s.limit > 0 && s.Len() >= s.limit }

// put stores a copy of value under key, replacing any value.
func (s *sram) put(key, value []byte) {
	v := slices.Clone(value)
	if v == nil {
		v = []byte{}
	}
	s.mu.Lock()
	s.m[string(key)] = v
	s.mu.Unlock()
}

// replace changes the value of key if it is held, and reports whether it was.
func (s *sram) replace(key, value []byte) bool {
	v := slices.Clone(value)
	if v == nil {
		v = []byte{}
	}
	s.mu.Lock()
	_, ok := s.m[string(key)]
	if ok {
		s.m[string(key)] = v
	}
	s.mu.Unlock()
	return ok
}

func (s *sram) remove(key []byte) bool {
	s.mu.Lock()
	_, ok := s.m[string(key)]
	delete(s.m, string(key))
	s.mu.Unlock()
	return ok
}

// Stash is TEA's SRAM stash: entries being inserted, moved or updated, and
// the entries Algorithm 1 could not place within MaxTries. The control plane
// (Table) writes it; the lookup engine reads it before anything else.
type Stash struct{ sram }

// NewStash returns an empty stash of at most limit entries (0: no limit).
func NewStash(limit int) *Stash { return &Stash{newSRAM(limit)} }

// Cache is TEA's SRAM popularity cache (§4.3): copies of the entries the
// count-min sketch found popular, admitted by Table.Promote. The lookup
// engine reads it after the stash.
type Cache struct{ sram }

// NewCache returns an empty cache of at most size entries (size ≥ 1).
func NewCache(size int) *Cache { return &Cache{newSRAM(size)} }
