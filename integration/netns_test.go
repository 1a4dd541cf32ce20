// Package integration holds tests that run the dta binary as separate
// processes across network namespaces. They need root, iproute2 and tshark,
// and skip with a reason otherwise.
package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

func TestCollectorAndTranslatorAcrossNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and creates namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	for _, tool := range []string{"ip", "tshark"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH", tool)
		}
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	shared := os.Getenv("DTA_SHARED")
	if shared == "" {
		shared = filepath.Join(root, "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(shared, "tools", "tshark_check.sh")); err != nil {
		t.Skipf("no shared/tools/tshark_check.sh beside the repository (set DTA_SHARED): %v", err)
	}
	if err := exec.Command("ip", "netns", "add", "dtaprobe").Run(); err != nil {
		t.Skipf("cannot create network namespaces here: %v", err)
	}
	exec.Command("ip", "netns", "del", "dtaprobe").Run()

	dir := t.TempDir()
	bin := filepath.Join(dir, "dta")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "dta")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "netns_pair.sh"), bin, dir)
	cmd.Env = append(os.Environ(), "DTA_SHARED="+shared)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		for _, f := range []string{"collector.log", "translator.log", "check.txt", "tshark.log"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			t.Logf("--- %s\n%s", f, b)
		}
		t.Fatalf("netns pair: %v", err)
	}
}
