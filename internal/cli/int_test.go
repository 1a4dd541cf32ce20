package cli

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var upINTReady = regexp.MustCompile(`queries on (http://\S+) .*INT telemetry reports on udp (\S+)`)

// packet builds bytes from a commented hex dump ("#" starts a comment).
func packet(t *testing.T, dump string) []byte {
	t.Helper()
	var sb strings.Builder
	for _, line := range strings.Split(dump, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The packets below are written field by field from the Telemetry Report
// Format v2.0 and INT v2.1 texts, not with wire/intreport's encoders.
const (
	// Switch 0x21's INT-MD sink report: its own hop latency 300 and queue 2
	// occupancy 0x50; the stack holds hop 2 (node 0x16, latency 200) and
	// hop 1 (node 0x0B, latency 100); flow TCP 10.0.0.1:5000 -> 10.0.0.2:80.
	intMD = `
	20 00 00 01  00 00 00 21                       # group: Ver 2, seq 1 | node 0x21
	14 1A 02 20                                    # RepType INT, InType IPv4 | RepLength 26 | MD Length 2 | F
	30 00 00 00  00 00 00 00                       # RepMdBits 0011 0... (hop latency, queue) | DS 0 | DSMdBits 0 | status 0
	00 00 01 2C  02 00 00 50                       # hop latency 300 | queue 2, occupancy 0x50
	45 00 00 58 00 00 40 00 3E 11 00 00 0A 00 00 01 0A 00 00 02   # IPv4 TTL 62, UDP, 10.0.0.1 -> 10.0.0.2
	C3 50 13 88 00 44 00 00                        # UDP -> INT_TBD 5000
	18 09 00 06                                    # shim: Type 1, NPT 2 | Length 9 (3 + 2 hops x 3) | IP proto 6
	20 00 03 06                                    # INT-MD Ver 2 | HopML 3 | RemainingHopCnt 6
	B0 00 00 00  00 00 00 00                       # instructions 1011 0... (node id, hop latency, queue)
	00 00 00 16  00 00 00 C8  02 00 00 40          # hop 2: node 0x16 | latency 200 | queue 2, occupancy 0x40
	00 00 00 0B  00 00 00 64  02 00 00 30          # hop 1: node 0x0B | latency 100 | queue 2, occupancy 0x30
	13 88 00 50 00 00 00 01 00 00 00 00 50 18 FF FF 00 00 00 00   # original TCP 5000 -> 80
	`
	// Node 0x16 reports a drop of the same flow: D set, RepMdBits bit 15:
	// queue 2, drop reason 71.
	intDrop = `
	20 00 00 02  00 00 00 16                       # group: seq 2 | node 0x16
	14 0D 01 A0                                    # RepType INT, InType IPv4 | RepLength 13 | MD Length 1 | D, F
	00 01 00 00  00 00 00 00                       # RepMdBits bit 15 | DS 0
	02 47 00 00                                    # queue 2 | drop reason 71 | padding
	45 00 00 28 00 00 40 00 3E 06 00 00 0A 00 00 01 0A 00 00 02   # IPv4 TTL 62, TCP
	13 88 00 50 00 00 00 01 00 00 00 00 50 18 FF FF 00 00 00 00   # TCP 5000 -> 80
	`
	// A report whose MD Length disagrees with its RepMdBits.
	intBadMD = `
	20 00 00 03  00 00 00 21
	10 05 03 20                                    # RepType INT, no inner | RepLength 5 | MD Length 3, but
	30 00 00 00  00 00 00 00                       # RepMdBits select 2 words and DSMdBits none
	00 00 01 2C  02 00 00 50  00 00 00 00
	`
)

// intConfig is smallConfig with the stores INT input maps into.
func intConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b) + `  - {name: int-paths, id: 5, primitive: keywrite, slots: 1024, value_size: 20, redundancy: 2}
  - {name: int-postcards, id: 7, primitive: postcard, chunks: 1024, hops: 8, redundancy: 2}
  - {name: int-counters, id: 8, primitive: keyincrement, slots: 1024, redundancy: 2}
  - {name: int-drops, id: 9, primitive: append, lists: 4, capacity: 64, entry_size: 48, batch: 4}
`
	path := filepath.Join(t.TempDir(), "int.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestINTReportsComeBackInINTTerms(t *testing.T) {
	m, _ := startCmd(t, upINTReady, "up", "--config", intConfig(t), "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--int-listen", "127.0.0.1:0")
	base, intAddr := m[1], m[2]
	conn, err := net.Dial("udp", intAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A malformed packet first: it is counted and changes nothing. Each is
	// sent again only while the collector's counters say it has not arrived:
	// on a loaded machine the kernel may drop a loopback datagram (UDP
	// memory pressure), and none may be taken twice (the counts below).
	for _, r := range []struct{ hex, series string }{
		{intBadMD, `dta_int_malformed_total{reason="md_length"}`},
		{intMD, `dta_int_derived_reports_total{part="path"}`},
		{intDrop, `dta_int_derived_reports_total{part="drop"}`},
	} {
		sendUntilCounted(t, conn, packet(t, r.hex), base, r.series)
	}
	// A datagram longer than the INT sockets take is dropped unread, and
	// counted.
	sendUntilCounted(t, conn, append(packet(t, intMD), make([]byte, 9300)...), base, "dta_int_udp_truncated_total")

	query := func(args ...string) string {
		var out strings.Builder
		if code := Run(t.Context(), append([]string{"query", "int"}, append(args, "--server", base)...), nil, &out, io.Discard); code != 0 {
			return fmt.Sprintf("exit %d", code)
		}
		return out.String()
	}
	const flow = "tcp,10.0.0.1:5000,10.0.0.2:80"
	eventually(t, "the path comes back in hop order", func() error {
		if got := query("path", "--flow", flow, "-o", "json"); !strings.Contains(got, `"path":[11,22,33]`) {
			return fmt.Errorf("%s", got)
		}
		return nil
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"latency", "--switch", "22", "--queue", "2", "-o", "json"}, `"samples":1,"hop_latency_sum":200,"mean_hop_latency":200,"queue_occupancy_sum":64`},
		{[]string{"latency", "--switch", "33", "--queue", "2", "-o", "json"}, `"hop_latency_sum":300`},
		{[]string{"latency", "--flow", flow, "-o", "json"}, `"samples":1,"hop_latency_sum":600,"mean_hop_latency":600`},
	} {
		if got := query(tc.args...); !strings.Contains(got, tc.want) {
			t.Errorf("dta query int %s:\n%s\nwant %s", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	eventually(t, "the drop comes back with its node, queue and reason", func() error {
		got := query("drops", "--switch", "22", "-o", "json")
		if !strings.Contains(got, `"node":22,"queue":2,"drop_reason":71,"flow":"tcp,10.0.0.1:5000,10.0.0.2:80"`) {
			return fmt.Errorf("%s", got)
		}
		return nil
	})
	if n := metric(t, base, "", `dta_int_malformed_total{reason="md_length"}`); n != 1 {
		t.Errorf("md_length refusals = %v, want 1", n)
	}
	if n := metric(t, base, "", `dta_int_derived_reports_total{part="path"}`); n != 1 {
		t.Errorf("paths derived = %v, want 1 (the malformed report added none)", n)
	}
}

// sendUntilCounted sends b on conn, and again each second while the
// collector at base has not counted it in series (at most 5 times).
func sendUntilCounted(t *testing.T, conn net.Conn, b []byte, base, series string) {
	t.Helper()
	for range 5 {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if metric(t, base, "", series) >= 1 {
				return
			}
		}
	}
	t.Fatalf("%s never counted the datagram sent 5 times", series)
}
