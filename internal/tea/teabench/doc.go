// Package teabench runs the TEA experiments that need no RDMA, over the
// production code of internal/tea (the control plane's Algorithm 1 and the
// lookup engine with local readers): the share of entries left in the SRAM
// stash as the load factor grows (§4.2.1), the lookup load per server with
// and without the popularity cache under Zipf workloads (Fig. 9a), and
// fail-over between two replicas when a server stops answering (Fig. 10).
//
// It re-implements no placement or lookup logic, measures no wall-clock
// speed (the figures are counts, on a simulated clock where time matters),
// does no I/O and defines no flags; dta tea bench is its command line.
package teabench
