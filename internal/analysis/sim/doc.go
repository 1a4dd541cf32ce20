// Package sim is the Monte Carlo counterpart of package analysis: it measures
// how often a query for a key of a given age (the number of keys written after
// it) returns the right answer, by running the production code on a real
// memory region.
//
// A run writes a stream of distinct keys, one after the other, through the
// primitive's own translation (keywrite.Spec.Translate, or the translator's
// postcard.Cache with the path length given, so that every path is written
// once as a whole chunk) into a region.Region, then queries a sample of the
// keys with the primitive's own query (keywrite.Store.Query,
// postcard.Store.Query) and sorts each answer into found-correct, empty,
// conflict and wrong. Nothing here decides where a byte goes or how copies
// vote: that is the production code under test. The package only generates
// keys, applies memory operations to the region, samples, counts, compares
// with package analysis and plots (gonum.org/v1/plot).
//
// Keys are 13 bytes (the size of an IPv4 5-tuple) of pseudo-random content,
// distinct by construction: the first eight bytes are a bijection of the key's
// index. Everything is a function of Config.Seed, so a run is deterministic,
// whatever the number of workers.
//
// Ages. The writes are one global sequence, in key order, so that "age" keeps
// its meaning. With several workers, producers translate blocks of keys in
// parallel (the pure part: key generation, hashing, encoding into a
// memop.Batch) and one applier applies the blocks in key order, one Apply
// per key, so memory sees the same sequence of writes whatever the number of
// workers. Queries only read and are spread over the workers.
//
// Short checksums. The store's checksums are 32 bits. To measure a b-bit
// checksum with the real code, a run with ChecksumBits b < 32 generates keys
// whose 32-bit checksum has its top 32−b bits all ones: the last four key
// bytes are solved for (CRC-32C is affine in the key bits), the low b bits are
// pseudo-random. The real query then compares 32 bits of which only the low b
// can differ between keys, which is a b-bit comparison; no key has the empty
// slot's checksum 0, so empty slots never match. This works with the crc32c
// family only, whose slot hashes do not depend on the checksum.
//
// The DART variant (IfEmpty) writes the first copy of a key as usual and each
// further copy only into an empty slot, with an 8-byte compare-and-swap of
// zero against the slot's first word (region.CompareAndSwap64), as an RDMA
// CAS would; the rest of the slot is written only when the swap succeeded.
//
// What it refuses to do: re-implement slot addressing, checksums, voting or
// chunk decoding; run inside go test at paper scale (the heavy runs are behind
// the dta simulate command); share a region between runs.
package sim
