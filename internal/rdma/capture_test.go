package rdma

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

// tsharkCheck returns the path of shared/tools/tshark_check.sh, or skips
// the test if it or tshark is missing.
func tsharkCheck(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not on PATH: install the Debian package tshark to check captures")
	}
	shared := os.Getenv("DTA_SHARED")
	if shared == "" {
		dir, _ := os.Getwd()
		for dir != "/" && dir != "." {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			dir = filepath.Dir(dir)
		}
		shared = filepath.Join(dir, "..", "shared")
	}
	script := filepath.Join(shared, "tools", "tshark_check.sh")
	if _, err := os.Stat(script); err != nil {
		t.Skipf("%s not found (set DTA_SHARED to the shared/ directory)", script)
	}
	return script
}

// TestCaptureDissectsInTshark records a session — CM handshake,
// advertisement, writes (single and multi-packet, with immediate),
// fetch-adds, ACKs, ATOMIC ACKs, a NAK remote access error, a NAK PSN
// sequence error, READs (Request; Response Only, First, Middle, Last),
// DREQ/DREP — on both ends and has tshark check every
// frame, ICRC included. Every endpoint sits on UDP port 4791 of its own
// loopback address, as RoCEv2 wants (and the ICRC checker assumes).
func TestCaptureDissectsInTshark(t *testing.T) {
	script := tsharkCheck(t)
	dir := t.TempDir()
	if d := os.Getenv("RDMA_KEEP_PCAP"); d != "" {
		dir = d
	}
	respPcap, reqPcap := filepath.Join(dir, "responder.pcap"), filepath.Join(dir, "requester.pcap")
	rf, err := os.Create(respPcap)
	if err != nil {
		t.Fatal(err)
	}
	qf, err := os.Create(reqPcap)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegion(t, 1<<16)
	rcfg := testResponderConfig("127.0.0.1")
	rcfg.Addr = "127.0.0.41:4791"
	rcfg.Capture = rf
	resp, err := NewResponder(rcfg, testLogger(t))
	if errors.Is(err, syscall.EADDRINUSE) {
		t.Skipf("port 4791 of 127.0.0.41 is taken: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic|AccessRemoteRead)
	resp.SetAdvertisement(bytes.Repeat([]byte("advertisement "), 30)) // two packets at MTU 256

	// The proxy drops the fifth request packet, for a NAK sequence error.
	proxy, err := newLossyProxyAt(t, "127.0.0.42:4791", "127.0.0.43:4791", resp.LocalAddr(), 1, 0, 0, 0)
	if err != nil {
		t.Skipf("port 4791 of 127.0.0.42/43 is taken: %v", err)
	}
	proxy.mu.Lock()
	proxy.dropIf = func(dir, n int, p *roce.Packet) bool {
		return dir == 0 && p.BTH.DestQP != roce.GSIQP && p.BTH.Opcode != roce.OpACK && n == 9
	}
	proxy.mu.Unlock()
	cfg := testRequesterConfig(proxy.addr())
	cfg.Local = "127.0.0.44:4791"
	cfg.MTU = 256
	cfg.Capture = qf
	q := dial(t, cfg)
	good := targetOf(m)
	bad := good
	bad.RKey++
	q.SetTargets([]Target{good, bad})
	ops := []memop.Op{
		{Kind: memop.Write, Offset: 0, Data: []byte("x")},
		{Kind: memop.Write, Offset: 8, Data: []byte("thirteen byte")},
		{Kind: memop.FetchAdd, Offset: 64, Delta: 3},
		{Kind: memop.WriteImm, Offset: 128, Data: bytes.Repeat([]byte{7}, 700), Imm: 99},
		{Kind: memop.Write, Store: 1, Offset: 0, Data: []byte("refused")},
		{Kind: memop.FetchAdd, Offset: 64, Delta: 4},
		{Kind: memop.Write, Offset: 1000, Data: []byte("after")},
	}
	if err := q.Apply(ops); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	if v, _ := reg.Load64(64); v != 7 {
		t.Errorf("counter %d", v)
	}
	// READs: Only (13 bytes), and First/Middle/Last (700 bytes at MTU 256).
	for _, n := range []int{13, 700} {
		dst := make([]byte, n)
		if err := q.Read(0, 128, dst); err != nil {
			t.Fatalf("Read %d bytes: %v", n, err)
		}
		if want := snapshot(t, reg)[128 : 128+n]; !bytes.Equal(dst, want) {
			t.Errorf("Read %d bytes returned other bytes than memory holds", n)
		}
	}
	q.Close()
	resp.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rf.Close()
	qf.Close()
	if q.Stats().NAKSequence.Load() == 0 || q.Stats().NAKRemoteAccess.Load() != 1 {
		t.Errorf("session without the NAKs: %v", statsString(q))
	}

	out, err := exec.Command("bash", script, reqPcap, respPcap).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "# ") {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatalf("tshark_check.sh: %v\n%s", err, out)
	}
	// The capture shows what it should.
	fields, err := exec.Command("tshark", "-n", "-r", reqPcap, "-T", "fields", "-e", "infiniband.bth.opcode",
		"-e", "infiniband.aeth.syndrome", "-e", "infiniband.mad.attributeid").Output()
	if err != nil {
		t.Fatal(err)
	}
	s := string(fields)
	// Syndromes in decimal: 31 ACK, 96 NAK PSN sequence error, 98 NAK
	// remote access error; MAD attributes REQ, REP, RTU, DREQ, DREP.
	for _, want := range []string{"\t31\t", "\t96\t", "\t98\t", "0x0010", "0x0013", "0x0014", "0x0015", "0x0016"} {
		if !strings.Contains(s, want) {
			t.Errorf("requester capture lacks %q", want)
		}
	}
	for _, op := range []string{"0", "2", "6", "7", "9", "10", "12", "13", "14", "15", "16", "17", "18", "20", "100"} {
		if !strings.Contains("\n"+s, "\n"+op+"\t") {
			t.Errorf("requester capture lacks opcode %s", op)
		}
	}
}
