// Package hawkeye runs HAWKEYE end to end (docs/REPRODUCTION.md,
// "HAWKEYE"): a scenario of internal/hawkeye/netsim with the switch
// telemetry and host agents of internal/hawkeye/telemetry; when an agent
// fires, polls (HAWKEYE's causal tracing and the full and victim-only
// baselines) read the switches' registers; every poll leaves as DTA reports
// through the public reporter to a running translator, and
// internal/hawkeye/diagnose reads it back from the collector through the
// public client, diagnoses it, and the result is judged against the
// scenario's ground truth. Eval runs the grid of the paper's Figures 7–11.
//
// What the package must not do: it starts no DTA system itself (it is given
// a translator's and a collector's addresses; dta hawkeye starts dta up in
// process); it hands the analyzer nothing but poll numbers — the analyzer
// sees only what the collector holds; it defines no flags.
package hawkeye
