// Package rule is the translator-side query extension of the paper's §7
// ("Query-Enhancing Extensions"): a query known ahead of time, such as
//
//	SELECT flowID, path WHERE SUM(latency) > T
//
// is declared as a rule in the configuration, compiled once when the
// translator starts, and evaluated by the translator on every path or report
// of its source store, so that the answer is ready in collector memory:
// the keys (and aggregates) of what matched, in an Append list, or a count
// per key in a Key-Increment store.
//
// A rule is a source store, an aggregate, a comparison with a threshold and
// an action:
//
//   - source: a Postcarding store (evaluated once per path the translator
//     writes out: complete, evicted or expired), or a Key-Write,
//     Key-Increment or Append store (evaluated once per report);
//   - aggregate: sum, max, min or count over the hop values present in a
//     path; for a report the aggregate is the report's value (count is 1);
//   - comparison: >, >=, <, <=, == or != with an unsigned 64-bit threshold;
//   - action: append an entry (the key and the aggregate, Entry) to a list
//     of an Append store, or increment a Key-Increment store's counter under
//     the key, by 1 or by the aggregate.
//
// An action only adds memory ops, through the same Append writer and
// Key-Increment translation that reports use; it never changes what the
// source primitive writes, and never feeds another rule.
//
// This package compiles (Compile) and evaluates (Rule.Holds,
// PathAggregate, ReportValue) and defines the entry layout (PutEntry,
// ParseEntry, ListFor); internal/translator runs the actions. It does no
// I/O and allocates nothing after Compile.
package rule
