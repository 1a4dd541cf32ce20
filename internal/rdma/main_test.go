package rdma

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
)

// childEnv makes the test binary a responder process for the benchmarks,
// so that the responder's CPU time can be measured apart from the
// requester's.
const childEnv = "DTA_RDMA_BENCH_RESPONDER"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChildResponder())
	}
	os.Exit(m.Run())
}

// runChildResponder serves one region on a loopback port, prints "addr
// ADDR" and then answers each line "cpu" on stdin with its CPU time in ns;
// it exits at EOF.
func runChildResponder() int {
	reg, err := region.New(region.Config{Size: 1 << 20, HugePages: region.HugePagesOff}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := DefaultResponderConfig()
	cfg.Addr = os.Getenv(childEnv)
	if n, err := strconv.Atoi(os.Getenv(childEnv + "_LOOPS")); err == nil {
		cfg.ReadLoops = n
	}
	r, err := NewResponder(cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, _ := r.RegisterMR("bench", reg, AccessRemoteWrite|AccessRemoteAtomic)
	r.SetAdvertisement(encodeTarget(m))
	if path := os.Getenv(childEnv + "_PROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	go r.Run(context.Background())
	fmt.Printf("addr %s\n", r.LocalAddr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		busy := 0
		for _, n := range r.ReadLoopPackets() {
			if n > 0 {
				busy++
			}
		}
		fmt.Printf("cpu %d %d %d %d\n", cpuTime().Nanoseconds(), r.Stats().Packets.Load(), r.Stats().Batches.Load(), busy)
	}
	r.Close()
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childResponder is a responder in another process.
type childResponder struct {
	addr  netip.AddrPort
	stdin interface{ Write([]byte) (int, error) }
	out   *bufio.Scanner
}

func startChildResponder(tb testing.TB, host string) *childResponder {
	tb.Helper()
	return startChildResponderLoops(tb, host, 1)
}

// startChildResponderLoops starts a child responder with loops read loops.
func startChildResponderLoops(tb testing.TB, host string, loops int) *childResponder {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+netip.AddrPortFrom(netip.MustParseAddr(host), 0).String(),
		childEnv+"_LOOPS="+strconv.Itoa(loops))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	c := &childResponder{stdin: in, out: bufio.NewScanner(out)}
	if !c.out.Scan() {
		tb.Fatal("child responder did not start")
	}
	a, ok := strings.CutPrefix(c.out.Text(), "addr ")
	if !ok {
		tb.Fatalf("child responder said %q", c.out.Text())
	}
	c.addr = netip.MustParseAddrPort(a)
	return c
}

// cpu returns the child's CPU time so far, the packets it received and
// its receive calls.
func (c *childResponder) cpu(tb testing.TB) (time.Duration, uint64, uint64) {
	tb.Helper()
	ns, pkts, batches, _ := c.cpuLoops(tb)
	return ns, pkts, batches
}

// cpuLoops is cpu with the number of read loops that received packets.
func (c *childResponder) cpuLoops(tb testing.TB) (time.Duration, uint64, uint64, int) {
	tb.Helper()
	c.stdin.Write([]byte("cpu\n"))
	if !c.out.Scan() {
		tb.Fatal("child responder gone")
	}
	var ns int64
	var pkts, batches uint64
	var busy int
	if _, err := fmt.Sscanf(c.out.Text(), "cpu %d %d %d %d", &ns, &pkts, &batches, &busy); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ns), pkts, batches, busy
}
