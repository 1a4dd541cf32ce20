// Package translator is the DTA translator's logic: it decodes report
// datagrams, tracks per-reporter sequence numbers for retransmittable reports,
// routes each report to its store, runs the primitive's translation and hands
// the resulting memory ops to a Sink. It also owns the translator-side state of
// the stateful primitives (the Postcarding cache, the Append batches and heads)
// and flushes it on Tick, and runs the rules of package rule (queries answered
// as reports arrive: rules.go) and the observers of written-out paths.
//
// It is pure logic: no sockets, timers, files or flags. Callers feed it
// datagrams (Worker.Handle) and the time. Every malformed or unroutable report
// is dropped, counted per Reason, and logged through a rate limiter; nothing
// on this path panics or allocates.
package translator
