package xdp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/vethtest"
)

// childEnv makes the test binary attach to the named interface, print
// "attached" and wait to be killed (TestMain).
const childEnv = "DTA_XDP_TEST_CHILD"

func TestMain(m *testing.M) {
	if ifname := os.Getenv(childEnv); ifname != "" {
		os.Exit(attachAndWait(ifname))
	}
	os.Exit(m.Run())
}

func attachAndWait(ifname string) int {
	l, err := Listen(testConfig(ifname), []Route{{Port: 40040, NewHandler: func(int) Handler { return newRecorder() }}}, nil)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	go l.Run(context.Background())
	fmt.Println("attached")
	select {}
}

func TestAKilledProcessLeavesNoProgramAttached(t *testing.T) {
	v := newVeth(t)
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+v.Host)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "attached" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child said %q", round, line)
		}
		if !v.Attached(t) {
			t.Fatalf("round %d: no XDP program while the child runs", round)
		}
		cmd.Process.Kill() // SIGKILL: no deferred Close runs
		cmd.Wait()
		deadline := time.Now().Add(3 * time.Second)
		for v.Attached(t) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: XDP program still attached after SIGKILL:\n%s", round, vethtest.Run(t, "ip", "link", "show", "dev", v.Host))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// And this process attaches afterwards.
	rec := newRecorder()
	startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return rec }}})
	c := v.udpSender(t)
	if _, err := c.WriteToUDPAddrPort([]byte("after"), addrPort(v.HostAddr, 40040)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, 1)
}
