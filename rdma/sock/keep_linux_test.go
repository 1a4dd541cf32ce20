package sock

import (
	"runtime"
	"testing"
)

func TestWaitsKeepAtMostAllProcessorsButOne(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if keepers.Load() != 0 {
		t.Fatalf("%d waits keep a processor before the test", keepers.Load())
	}
	if !takeProcessor() || !takeProcessor() {
		t.Fatal("with GOMAXPROCS 3, two waits may not keep their processors")
	}
	if takeProcessor() {
		t.Fatal("with GOMAXPROCS 3, a third wait keeps its processor too: none is left for other goroutines")
	}
	if keepers.Load() != 2 {
		t.Fatalf("%d waits counted, want the 2 that keep", keepers.Load())
	}
	releaseProcessor()
	if !takeProcessor() {
		t.Fatal("a wait that ended did not give its place back")
	}
	releaseProcessor()
	releaseProcessor()
	if keepers.Load() != 0 {
		t.Fatalf("%d waits counted after all ended", keepers.Load())
	}
}
