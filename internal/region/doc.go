// Package region provides memory regions: fixed-size byte ranges mapped
// outside the Go heap, each holding one store of the collector.
//
// A [Region] is written by the components that apply memory operations (the
// local sink, the software RDMA responder) and read by query code, all at the
// same time. It offers bounds-checked copies ([Region.Write], [Region.Read]),
// zero-copy views ([Region.Slice]) and atomic operations on aligned 8-byte
// little-endian words ([Region.Load64], [Region.Store64], [Region.Add64],
// [Region.CompareAndSwap64]). Every access is checked against the region's
// size with overflow-safe arithmetic: no write can land outside the region,
// and a rejected write changes nothing. Data-path methods do not allocate and
// return the sentinel errors [ErrOutOfBounds] and [ErrMisaligned] unwrapped.
//
// Consumers that copy a region out from time to time (checkpoints, exports of
// changed slots) track which blocks were written with a [Tracker] each; the
// writers report what they wrote with [Region.Written] (see track.go for why
// the write methods do not, and for the ordering that makes nothing missed).
//
// Regions are mapped with mmap(2) and, by default, advised to use transparent
// huge pages (MADV_HUGEPAGE) and pre-faulted at creation: random access into
// large regions is 2–3x faster on huge pages, and first-touch page faults never
// reach the data path. hugetlbfs pages (MAP_HUGETLB) can be requested when the
// host reserves them; see [HugePages].
//
// What it refuses to do: it knows nothing of primitives, stores, keys or
// layouts (those live in internal/primitive and address the region by offset);
// it does not log per operation (only at creation and on fallbacks); and it
// does not order plain copies against concurrent writers — a reader racing a
// writer on the same bytes may see a torn value, which is the DTA model
// (only the 8-byte atomic operations are indivisible).
//
// The package assumes a little-endian host (amd64, arm64): the atomic word
// operations use the native byte order, which is then little-endian.
package region
