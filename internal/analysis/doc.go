// Package analysis is the theory of DTA's primitives: the paper's error
// bounds for Key-Write (§4, Appendix A.5) and Postcarding (Appendix A.6), the
// count-min bounds of Key-Increment over one shared counter array, and a
// planner that turns them into memory sizes (Plan) or success rates for a given
// memory (Capacity).
//
// Every probability is a pure float64 function of the load factor α (keys
// written after the queried one divided by the slots, or chunks, they share),
// the redundancy N and the checksum width b. The functions use log1p and expm1
// wherever a difference of nearly equal numbers would otherwise cancel, so that
// probabilities such as 10^-22 keep their relative accuracy. Invalid arguments
// give NaN, as the math package does; the planner validates its requests and
// returns errors instead.
//
// The model is the paper's: every slot hash is uniform and independent of the
// others and of the checksum, so a slot survives the N·α·M writes that follow
// a key with probability e^{-αN}, and an overwritten slot matches the queried
// key's b-bit checksum with probability 2^-b. Memory sizes come from the
// primitives' own Spec methods, so a plan is the geometry a store would have.
//
// The package must stay pure: no I/O, no flags, no logging, no global state and
// no simulation (Monte Carlo runs over the production code belong elsewhere).
// It computes; it never reads or writes a store.
package analysis
