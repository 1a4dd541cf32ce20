package keywrite

import "github.com/dta-go/dta/hashing"

// QueryBatchChunked is QueryBatch as it was before it was pipelined (commit
// efbbeca): the slots of a chunk of 32 queries prefetched with one call, then
// the previous chunk voted with queryWords. BenchmarkQueryAB runs it beside
// QueryBatch and the ceiling, so that before and after share the host's
// minutes. Arguments are not checked.
func (s *Store) QueryBatchChunked(keys [][]byte, n, threshold int, res []Result, vals []byte) error {
	const queryChunk = 32
	vs := s.spec.ValueSize
	var (
		offs [2][queryChunk][hashing.MaxCopies]uint64 // chunk c's slots are in offs[c%2]
		sums [2][queryChunk]uint32
		flat [queryChunk * hashing.MaxCopies]uint64
	)
	chunks := (len(keys) + queryChunk - 1) / queryChunk
	for c := 0; c <= chunks; c++ {
		if c < chunks {
			cur, m := c&1, 0
			for j, key := range keys[c*queryChunk : min((c+1)*queryChunk, len(keys))] {
				k := s.spec.Hash.Key(key)
				sums[cur][j] = k.Checksum()
				for i := range n {
					off := s.spec.Offset(k, i)
					offs[cur][j][i], flat[m] = off, off
					m++
				}
			}
			s.mem.Prefetch(flat[:m])
		}
		if c > 0 {
			prev, base := (c-1)&1, (c-1)*queryChunk
			for j := range min(queryChunk, len(keys)-base) {
				q := base + j
				if s.words {
					r, err := s.queryWords(sums[prev][j], &offs[prev][j], n, threshold, vals[q*vs:q*vs:(q+1)*vs])
					if err != nil {
						return err
					}
					res[q] = r
					continue
				}
				r, err := s.vote(sums[prev][j], offs[prev][j][:n], allCopies, threshold, vals[q*vs:q*vs:(q+1)*vs])
				if err != nil {
					return err
				}
				res[q] = r
			}
		}
	}
	return nil
}
