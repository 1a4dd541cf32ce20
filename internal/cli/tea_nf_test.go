package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea/nf/tun"
)

// nfExec runs dta with args and returns the exit code, stdout and stderr.
func nfExec(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTeaNFRefusesBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown NF", []string{"tea", "nf", "fw", "--in", "a", "--out", "b", "--entry", "x"}, "want nat or lb"},
		{"no devices", []string{"tea", "nf", "nat", "--entry", "udp,10.0.0.1:1,10.0.0.2:2=1.2.3.4:5"}, "--in and --out"},
		{"no table", []string{"tea", "nf", "nat", "--in", "a", "--out", "b"}, "--table FILE or at least one --entry"},
		{"a NAT entry without a public address", []string{"tea", "nf", "nat", "--in", "a", "--out", "b", "--entry", "udp,10.0.0.1:1,10.0.0.2:2"}, "LEFT=ADDR:PORT"},
		{"a NAT entry that is not a 5-tuple", []string{"tea", "nf", "nat", "--in", "a", "--out", "b", "--entry", "udp,10.0.0.1:1=1.2.3.4:5"}, "PRIVATE:PORT,REMOTE:PORT"},
		{"an LB entry over IPv6", []string{"tea", "nf", "lb", "--in", "a", "--out", "b", "--entry", "tcp,10.0.0.1:80=[::1]:80"}, "not an IPv4"},
		{"a table file that is not one", []string{"tea", "nf", "lb", "--in", "a", "--out", "b", "--table", os.Args[0]}, "not a valid table file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := nfExec(c.args...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, errs, c.want)
			}
		})
	}
}

func TestTeaNFTranslatesAPacketOnTUNDevicesAndPrintsItsCounters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("TUN devices in a network namespace need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip(8) is not installed")
	}
	for _, c := range []struct {
		name  string
		extra []string
	}{
		{"with the table in local memory", nil},
		{"with the table over RDMA", []string{"--rdma"}},
		{"with the table from a file dta tea load wrote", []string{"--table", ""}},
		{"with the table in a collector's teatable store", []string{"--collector"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			entry := []string{"--entry", "udp,10.1.0.2:40000,10.2.0.2:9000=203.0.113.7:50000"}
			if len(c.extra) == 2 {
				dir := t.TempDir()
				in, table := filepath.Join(dir, "nat.txt"), filepath.Join(dir, "nat.tea")
				// Outbound: the flow's 5-tuple → 203.0.113.7:50000.
				if err := os.WriteFile(in, []byte("udp,10.1.0.2:40000,10.2.0.2:9000 0xcb007107c350\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, _, errs := nfExec("tea", "load", "--in", in, "--key-size", "13", "--value-size", "6", "--scratchpad", "128",
					"--buckets", "64", "--cells", "4", "--out", table); code != 0 {
					t.Fatalf("dta tea load: exit %d: %s", code, errs)
				}
				entry, c.extra = nil, []string{"--table", table}
			}
			ns := fmt.Sprintf("teanfcli%d%d", os.Getpid()%100000, len(c.name))
			ip := func(args ...string) {
				t.Helper()
				if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("ip %v: %v: %s", args, err, out)
				}
			}
			if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
			// Persistent devices, so that a route can point at them first.
			ip("tuntap", "add", "dev", "tin", "mode", "tun")
			ip("tuntap", "add", "dev", "tout", "mode", "tun")
			ip("link", "set", "lo", "up")
			ip("link", "set", "tin", "up")
			ip("link", "set", "tout", "up")
			ip("addr", "add", "10.1.0.2/32", "dev", "lo")
			ip("route", "add", "10.2.0.0/24", "dev", "tin", "src", "10.1.0.2")
			if len(c.extra) == 1 {
				// A dta collector process in the namespace holds the table.
				cfg := filepath.Join(t.TempDir(), "col.yaml")
				os.WriteFile(cfg, []byte(`
collector:
  prefault: false
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 1024, value_size: 4, redundancy: 2}
  - {name: nat, id: 7, primitive: teatable, default: true, buckets: 64, cells: 4, key_size: 13, value_size: 6, scratchpad: 128}
`), 0o644)
				m, _ := startProcess(t, "ip", collectorReady, "netns", "exec", ns, buildDTA(t), "collector", "--config", cfg,
					"--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
				c.extra = []string{"--collector", m[1]}
			}
			type result struct {
				code      int
				out, errs string
			}
			done := make(chan result, 1)
			go tun.InNetns(ns, func() error {
				var r result
				r.code, r.out, r.errs = nfExec(append([]string{"tea", "nf", "nat", "--in", "tin", "--out", "tout", "--duration", "1500ms"}, append(entry, c.extra...)...)...)
				done <- r
				return nil
			})
			time.Sleep(500 * time.Millisecond) // the command opens the devices
			err := tun.InNetns(ns, func() error {
				conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.1.0.2:40000")))
				if err != nil {
					return err
				}
				defer conn.Close()
				_, err = conn.WriteToUDPAddrPort([]byte("hello"), netip.MustParseAddrPort("10.2.0.2:9000"))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errs)
			}
			if !strings.Contains(r.out, "1 translated outbound") || !strings.Contains(r.out, "0 no entry") {
				t.Errorf("the counters do not show one packet translated:\n%s", r.out)
			}
			t.Logf("\n%s", r.out)
		})
	}
}
