// Package export sends what the stores receive to Kafka: every Append entry
// (per store and list, in order), every Postcarding path the translator
// writes out, and, once per interval, the Key-Write and Key-Increment slots
// that changed. Records are protobuf (proto/dta/export/v1/export.proto) or
// JSON, keyed so that one list, flow or slot stays in one partition.
//
// Delivery is at least once for what the exporter reads: Append entries are
// read from the stores' rings behind a cursor that advances only with the
// brokers' acknowledgements (and is kept in the data directory across
// restarts), changed slots are re-read until they are sent, and a failed
// send is sent again (a path the brokers refuse for good is dropped and
// counted). Every Append record names its entry by (store, list,
// generation, index), a name no other entry ever gets: a list whose
// numbering starts over (a reset, a restart from an older checkpoint) gets
// a new generation. It never slows ingest: it reads the stores on its own
// goroutines, the translator hands paths over through a bounded queue that
// drops (and counts) when full, and at most MaxInFlight records wait for the
// brokers at once; with the brokers gone, Append entries wait in their
// rings until the writer laps them (counted as lost), changed slots coalesce
// (one interval's changes wait for the brokers, later ones merge into them)
// and paths wait in their queue, dropped beyond it. Failed broker
// connections are counted by reason and logged, also with nothing to send
// (the exporter probes the brokers while nothing is acknowledged).
//
// franz-go is the only Kafka client in the module and only this package
// imports it (arch_test.go). The package never writes to a store.
package export
