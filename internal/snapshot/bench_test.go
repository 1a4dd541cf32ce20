package snapshot

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// BenchmarkCheckpointAndRestore measures, for a Key-Write store of 1 GiB and
// 4 GiB filled with random bytes (nothing for a full checkpoint to skip): a
// full checkpoint, a delta after 1% of the blocks were written, and a
// restore of the two. The files go to $DTA_BENCH_DIR (default: the test's
// temporary directory). With DTA_BENCH_DROP_CACHES=1 (root) the page cache
// is dropped before the restore, which then reads from the disk, as after a
// reboot; otherwise it reads the files from memory, as after a restart.
// Run it alone on a quiet machine:
//
//	go test -run XX -bench CheckpointAndRestore -benchtime 1x ./internal/snapshot
func BenchmarkCheckpointAndRestore(b *testing.B) {
	for _, gib := range []uint64{1, 4} {
		b.Run(fmt.Sprintf("%dGiB", gib), func(b *testing.B) {
			size := gib << 30
			descs, err := store.DescribeAll([]store.Config{{Name: "kw", ID: 1, Primitive: "keywrite", Default: true,
				Memory: store.ByteSize(size), ValueSize: 4, Redundancy: 2}})
			if err != nil {
				b.Fatal(err)
			}
			rc := region.DefaultConfig()
			cat, err := store.Open(descs, rc, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cat.Close()
			r := cat.Stores()[0].Region
			buf := make([]byte, 64<<20)
			rng := rand.New(rand.NewPCG(1, 2))
			for off := uint64(0); off < r.Size(); off += uint64(len(buf)) {
				for i := 0; i+8 <= len(buf); i += 8 {
					v := rng.Uint64() | 1
					for j := range 8 {
						buf[i+j] = byte(v >> (8 * j))
					}
				}
				n := min(uint64(len(buf)), r.Size()-off)
				r.Write(off, buf[:n])
			}
			base := os.Getenv("DTA_BENCH_DIR")
			if base == "" {
				base = b.TempDir()
			}
			dir, err := os.MkdirTemp(base, "ckpt-bench-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			cfg := DefaultConfig()
			cfg.Dir = dir
			cfg.History = 2
			for b.Loop() {
				d, err := Open(cat, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				full, err := d.Checkpoint()
				if err != nil {
					b.Fatal(err)
				}
				fullT := time.Since(t0)
				blocks := r.Size() / cfg.BlockSize
				for range blocks / 100 {
					off := rng.Uint64N(blocks) * cfg.BlockSize
					r.Write(off, buf[:8])
					r.Written(off, 8)
				}
				t0 = time.Now()
				delta, err := d.Checkpoint()
				if err != nil {
					b.Fatal(err)
				}
				deltaT := time.Since(t0)
				d.Close()

				cat2, err := store.Open(descs, rc, nil)
				if err != nil {
					b.Fatal(err)
				}
				if os.Getenv("DTA_BENCH_DROP_CACHES") == "1" {
					if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
						b.Fatalf("drop caches: %v", err)
					}
				}
				t0 = time.Now()
				d2, err := Open(cat2, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				restoreT := time.Since(t0)
				d2.Close()
				cat2.Close()
				b.ReportMetric(fullT.Seconds(), "full-s")
				b.ReportMetric(float64(full.Bytes)/fullT.Seconds()/1e6, "full-MB/s")
				b.ReportMetric(deltaT.Seconds(), "delta1%-s")
				b.ReportMetric(float64(delta.Bytes)/1e6, "delta1%-MB")
				b.ReportMetric(restoreT.Seconds(), "restore-s")
				b.ReportMetric(float64(full.Bytes+delta.Bytes)/restoreT.Seconds()/1e6, "restore-MB/s")
				os.RemoveAll(dir)
				os.MkdirAll(dir, 0o700)
			}
		})
	}
}
