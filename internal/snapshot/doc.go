// Package snapshot makes the collector's stores durable: it writes
// checkpoints of every store to a data directory while ingest goes on,
// restores the newest good checkpoint at start, keeps older checkpoints as
// read-only epochs that queries can ask for (history), and bounds the disk
// they use.
//
// A checkpoint is one file, ckpt-<epoch>.dta, holding either every byte of
// every store (a full checkpoint) or only the blocks written since the
// previous checkpoint (a delta, which names its parent epoch). Each region
// keeps a change Tracker (internal/region) for this package; a checkpoint
// takes the dirty blocks and copies them out while translators keep writing.
// The file format is versioned and documented in docs/PROTOCOL.md
// ("Checkpoint files"): a header, the store table (the store advertisement's
// encoding, so every geometry a translator can be told about can be stored),
// extents of (store, offset, bytes), each with a CRC-32C, and an end record.
// A file is written to a temporary name, synced, renamed and its directory
// synced, so a crash leaves either the whole file or none.
//
// What a checkpoint guarantees: every write that landed in a store before
// the checkpoint began (the instant it took the dirty blocks) is in it.
// Copies made while writers go on are "fuzzy"; each primitive's layout keeps
// them readable: Key-Write slots and Postcarding chunks carry checksums that
// a torn copy fails, Key-Increment counters are copied as aligned words, and
// Append lists are copied with their head read before the entries (entries
// the writer overwrote during the copy are excluded by the list's low
// watermark, appendlist.Spec.LowOffset).
//
// Restoring reads a checkpoint's chain (its full checkpoint, then each delta
// in order), checking every CRC and every bound as a decoder does; a file
// that fails is reported with its name and the previous good epoch is used
// instead. A checkpoint whose store table differs from the configured
// stores' geometry is refused, never reinterpreted.
//
// The package does not decide when the collector stops or what a translator
// holds; the composition root (internal/collector) calls the final
// checkpoint after the translator has flushed.
package snapshot
