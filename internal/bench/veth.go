package bench

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// geteuid is os.Geteuid; tests replace it to see the error a user without
// root gets.
var geteuid = os.Geteuid

// vethPrerequisites says why what (a flag) cannot create a namespace and a
// veth pair here, or returns nil. Like newBenchVeth's, its errors do not
// name the package: the callers' wrapping does.
func vethPrerequisites(what string) error {
	if geteuid() != 0 {
		return fmt.Errorf("%s needs root: it creates a network namespace and a veth pair and may attach an XDP program (run it with sudo)", what)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%s needs the ip command (iproute2)", what)
	}
	return nil
}

// benchVeth is the namespace and veth pair of a RunXDP or of a
// RoCEProcessSinkOver over a veth.
type benchVeth struct {
	queues             int
	ns, host, peer     string
	hostAddr, peerAddr netip.Addr
	hostMAC, peerMAC   [6]byte
}

func newBenchVeth(queues int) (*benchVeth, error) {
	id := os.Getpid() % 100000
	k := os.Getpid() % 200 // 198.19.0-199: the tests use 198.18 and 198.19.200-249
	nq := strconv.Itoa(queues)
	v := &benchVeth{
		queues: queues,
		ns:     fmt.Sprintf("dtabench%d", id), host: fmt.Sprintf("dbxa%d", id), peer: fmt.Sprintf("dbxb%d", id),
		hostAddr: netip.AddrFrom4([4]byte{198, 19, byte(k), 1}), peerAddr: netip.AddrFrom4([4]byte{198, 19, byte(k), 2}),
	}
	steps := [][]string{
		{"netns", "add", v.ns},
		{"link", "add", v.host, "numtxqueues", nq, "numrxqueues", nq, "type", "veth",
			"peer", "name", v.peer, "numtxqueues", nq, "numrxqueues", nq, "netns", v.ns},
		{"addr", "add", v.hostAddr.String() + "/24", "dev", v.host},
		{"link", "set", v.host, "up"},
		{"-n", v.ns, "addr", "add", v.peerAddr.String() + "/24", "dev", v.peer},
		{"-n", v.ns, "link", "set", v.peer, "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			v.remove()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	ifc, err := net.InterfaceByName(v.host)
	if err != nil {
		v.remove()
		return nil, err
	}
	copy(v.hostMAC[:], ifc.HardwareAddr)
	return v, nil
}

func (v *benchVeth) remove() {
	exec.Command("ip", "link", "del", v.host).Run()
	exec.Command("ip", "netns", "del", v.ns).Run()
}

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// softirqTime is the softirq time of all CPUs so far, from /proc/stat.
func softirqTime() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq ...
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	t, _ := strconv.ParseUint(f[7], 10, 64)
	return time.Duration(t) * time.Second / userHZ
}
