package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/snapshot"
)

// Snapshot exports the durable stores' counters (collector.data_dir).
type Snapshot struct {
	S *snapshot.Stats
	C snapshot.Config
}

var (
	snCheckpoints = desc("snapshot_checkpoints_total", "Checkpoints written, by kind (full, delta).", "kind")
	snFailures    = desc("snapshot_checkpoint_failures_total", "Checkpoints that failed (the next one copies what they should have).")
	snLastTime    = desc("snapshot_last_checkpoint_timestamp_seconds", "When the newest checkpoint began, Unix time: every write before it is on disk (at start: the restored checkpoint's, or the start if none).")
	snLastDur     = desc("snapshot_last_checkpoint_duration_seconds", "How long the newest checkpoint took.")
	snLastBytes   = desc("snapshot_last_checkpoint_bytes", "Bytes of the newest checkpoint file.")
	snDisk        = desc("snapshot_disk_bytes", "Bytes of the checkpoint files kept in the data directory.")
	snDiskLimit   = desc("snapshot_disk_limit_bytes", "collector.history_max_bytes (0: no limit).")
	snFiles       = desc("snapshot_files", "Checkpoint files kept.")
	snEpochs      = desc("snapshot_epochs", "Epochs kept and queryable (?at=, GET /v1/epochs).")
	snCorrupt     = desc("snapshot_corrupt_files_total", "Checkpoint files found corrupt or orphaned at start, renamed *.corrupt.")
	snRestored    = desc("snapshot_restored_epoch", "The epoch the stores were restored from at start (0: none).")
	snRestoreDur  = desc("snapshot_restore_duration_seconds", "How long restoring the stores took at start.")
	snOpen        = desc("snapshot_open_epochs", "Past epochs held in memory for ?at= queries.")
	snInterval    = desc("snapshot_interval_seconds", "collector.checkpoint_interval.")
)

// Describe implements prometheus.Collector.
func (c Snapshot) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{snCheckpoints, snFailures, snLastTime, snLastDur, snLastBytes, snDisk,
		snDiskLimit, snFiles, snEpochs, snCorrupt, snRestored, snRestoreDur, snOpen, snInterval} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Snapshot) Collect(ch chan<- prometheus.Metric) {
	s := c.S
	full, all := s.FullCheckpoints.Load(), s.Checkpoints.Load()
	counter(ch, snCheckpoints, full, "full")
	counter(ch, snCheckpoints, all-full, "delta")
	counter(ch, snFailures, s.CheckpointFailures.Load())
	gauge(ch, snLastTime, float64(s.LastTime.Load())/1e9)
	gauge(ch, snLastDur, float64(s.LastDuration.Load())/1e9)
	gauge(ch, snLastBytes, float64(s.LastBytes.Load()))
	gauge(ch, snDisk, float64(s.DiskBytes.Load()))
	gauge(ch, snDiskLimit, float64(c.C.HistoryMaxBytes))
	gauge(ch, snFiles, float64(s.Files.Load()))
	gauge(ch, snEpochs, float64(s.Epochs.Load()))
	counter(ch, snCorrupt, s.CorruptFiles.Load())
	gauge(ch, snRestored, float64(s.Restored.Load()))
	gauge(ch, snRestoreDur, float64(s.RestoreDuration.Load())/1e9)
	gauge(ch, snOpen, float64(s.OpenEpochs.Load()))
	gauge(ch, snInterval, c.C.Interval.Seconds())
}
