package cli

import (
	"net"
	"strings"
	"testing"
)

// With several collectors the INT input is the front end's: a translator
// over two collectors counts an INT packet once, with no collector label,
// and its INT families are not tied to any one collector.
func TestATranslatorOverTwoCollectorsCountsINTOnceAndForNoCollector(t *testing.T) {
	cfg := intConfig(t)
	var rdma []string
	for range 2 {
		m, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
		rdma = append(rdma, m[1])
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	intAddr := pc.LocalAddr().String()
	pc.Close()
	tr, _ := startCmd(t, translatorMetricsReady, "translator", "--config", cfg, "--collector", strings.Join(rdma, ","),
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--int-listen", intAddr)
	base := tr[2]
	conn, err := net.Dial("udp", intAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sendUntilCounted(t, conn, packet(t, intBadMD), base, `dta_int_malformed_total{reason="md_length"}`)
	_, body := call(t, nil, "GET", base+"/metrics", "")
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "dta_int_") && strings.Contains(line, "collector=") {
			t.Errorf("an INT series carries a collector label: %s", line)
		}
	}
}
