// Package tea is TEA's table extension (Kim et al., SIGCOMM 2020): a
// key-value table kept in servers' DRAM that a switch looks up with ONE
// remote read per lookup, with a small SRAM stash and a popularity cache in
// front of it.
//
// The package has four parts, all sharing one Spec:
//
//   - the layout (Spec): where every byte of TEA-TABLE is, computed from the
//     bucket count, cells per bucket, key and value sizes and the scratchpad
//     size; the bucket hash (Hash); the cell format (PutCell, DecodeCell).
//     The writer and the reader call the same functions, as for DTA's
//     primitives.
//   - the control plane (Table): Algorithm 1 of the paper's Appendix A
//     (insert with at most MaxTries displaced victims, chosen by a seeded
//     random generator; what does not fit stays in the SRAM Stash), update,
//     delete, and the cache's admission (Promote), all expressed as writes
//     through a Memory.
//   - the placement (Placement, ClusterMemory): the table cut into contiguous
//     bucket ranges, one per server, sized by each server's memory (§4.3),
//     each range held by one or two servers (§4.4).
//   - the lookup engine (Engine), the switch side (Algorithm 2): SRAM stash and
//     cache first, a count-min sketch tracking popularity, otherwise one read
//     of a row through a Reader, many lookups in flight, fail-over to the
//     replica when a server stops answering.
//
// # Memory layout
//
// A table of n buckets is n rows of RowSize bytes. Row i holds bucket i, a
// shadow copy of bucket (i+1) mod n right after it, and row i's scratchpad,
// so that one contiguous read of row i returns both buckets a key hashed to
// bucket i may live in, followed by the packet parked in the scratchpad
// (the paper's Figure 5b):
//
//	row i:  [ bucket i | copy of bucket (i+1) mod n | scratchpad i | pad to 8 ]
//	        0          B                            2B             2B+S
//
//	bucket: Cells cells of CellSize = 1 + KeySize + ValueSize bytes
//	cell:   [0]            flags: bit 0 valid, bits 1–7 zero
//	        [1:1+K]        the key
//	        [1+K:1+K+V]    the value
//	scratchpad (only when Spec.Scratchpad > 0), big-endian:
//	        [0:8]          tag of the lookup that parked the packet
//	        [8:10]         packet length
//	        [10:16]        zero
//	        [16:16+len]    the packet (at most Spec.Scratchpad bytes)
//
// A key k lives in bucket h = Home(Hash(k)) or in bucket (h+1) mod n (bounded
// linear probing); reading row h finds it in either, or not at all. The
// golden vectors in testdata/golden.json pin the hash, homes, offsets and
// cells. The table file (WriteFile, DecodeFile) is laid out in file.go.
//
// # A lookup racing an update
//
// The control plane never lets a read see a half-written cell that could be
// mistaken for an entry: a cell's flag byte comes before its key and value,
// an empty cell's key and value are written before its flag is set, and a
// cell that holds an entry is first invalidated, then (after a grace period
// during which reads already in flight finish) rewritten, then validated;
// the original bucket is written before its shadow copy. Every entry being
// moved or changed is in the SRAM stash for the whole time, and the engine
// checks the stash before it reads DRAM, so a lookup finds it. A lookup
// compares the whole key of every valid cell it reads. Table's documentation
// has the exact order of writes.
//
// # What this package does not do
//
// It does not speak RDMA or any network protocol (a Reader and a Memory are
// the seams where an RDMA READ and WRITE plug in), read files other than the
// table file it is given as bytes, log, define flags, or keep global state.
// It imports only the standard library. Experiments live in
// internal/tea/teabench; network functions built on the table belong in
// internal/tea/nf.
package tea
