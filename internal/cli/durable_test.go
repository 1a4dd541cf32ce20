package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// durableConfig is smallConfig with durable stores in dir: a checkpoint
// every 200 ms, ten kept as epochs.
func durableConfig(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "collector:\n", fmt.Sprintf("collector:\n  data_dir: %s\n  checkpoint_interval: 200ms\n  history: 10\n", dir), 1)
	path := filepath.Join(t.TempDir(), "durable.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// answers are the raw bodies of one query of every primitive.
func answers(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		"/v1/stores/keywrite/keywrite?key=7&n=2",
		"/v1/stores/keywrite/keywrite?key=11&n=2",
		"/v1/stores/keyincrement/keyincrement?key=9&n=4",
		"/v1/stores/postcard/postcard?key=42",
		"/v1/stores/append/append/2?cursor=0&limit=100",
		"/v1/stores/append/append/2/head",
	} {
		resp, err := http.Get(base + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out = append(out, q+" → "+string(b))
	}
	return out
}

func sendKeyWrite(t *testing.T, udpAddr string, key, value byte) {
	t.Helper()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte{1, 0, 0, 2, 0, 0, 0, key, 0, 0, 0, value})
}

func keyWriteValue(t *testing.T, base string, key byte) uint32 {
	t.Helper()
	var r struct {
		Status   string `json:"status"`
		ValueU32 uint32 `json:"value_u32"`
	}
	getJSON(t, fmt.Sprintf("%s/v1/stores/keywrite/keywrite?key=%d&n=2", base, key), &r)
	if r.Status != "found" {
		return 0
	}
	return r.ValueU32
}

// waitForCheckpointAfter waits until a checkpoint that began after t0 is
// on disk.
func waitForCheckpointAfter(t *testing.T, base string, t0 time.Time) {
	t.Helper()
	eventually(t, "a checkpoint after the writes", func() error {
		if ts := metric(t, base, "", "dta_snapshot_last_checkpoint_timestamp_seconds"); ts < float64(t0.UnixNano())/1e9 {
			return fmt.Errorf("newest checkpoint at %.3f, writes at %.3f", ts, float64(t0.UnixNano())/1e9)
		}
		return nil
	})
}

func TestDurableUpKeepsEveryStoreAcrossACleanStopAndACrash(t *testing.T) {
	bin := buildDTA(t)
	dir := t.TempDir()
	cfg := durableConfig(t, dir)
	start := func() (string, string, *process) {
		m, p := startProcess(t, bin, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
		return m[1], m[2], p
	}

	// Reports of every primitive, then a clean stop.
	udp, base, p := start()
	sendPrototypeReports(t, udp)
	checkPrototypeAnswers(t, base)
	before := answers(t, base)
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("dta up after SIGTERM: %v\n%s", err, p.stderr)
	}

	// Every query answers as before; new entries follow the restored ones.
	udp, base, p = start()
	if after := answers(t, base); !slices.Equal(after, before) {
		t.Errorf("after a clean stop and a restart the answers differ:\nbefore %q\nafter  %q", before, after)
	}
	conn, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte{2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 7}) // list 2 gets a 7th entry
	conn.Close()
	eventually(t, "the restored list goes on from its head", func() error {
		var r struct {
			Entries []struct {
				Index    uint64 `json:"index"`
				ValueU32 uint32 `json:"value_u32"`
			} `json:"entries"`
		}
		getJSON(t, base+"/v1/stores/append/append/2?cursor=0&limit=100", &r)
		if len(r.Entries) != 7 || r.Entries[6].ValueU32 != 7 || r.Entries[5].ValueU32 != 6 {
			return fmt.Errorf("got %+v", r.Entries)
		}
		return nil
	})

	// A crash after a checkpoint interval loses nothing written before it.
	t0 := time.Now()
	sendKeyWrite(t, udp, 11, 77)
	eventually(t, "key 11 is written", func() error {
		if v := keyWriteValue(t, base, 11); v != 77 {
			return fmt.Errorf("value %d", v)
		}
		return nil
	})
	waitForCheckpointAfter(t, base, t0)
	crashed := answers(t, base)
	p.stop(t, syscall.SIGKILL)
	_, base, _ = start()
	if after := answers(t, base); !slices.Equal(after, crashed) {
		t.Errorf("after kill -9 the answers differ:\nbefore %q\nafter  %q", crashed, after)
	}
}

func TestACorruptCheckpointFallsBackToThePreviousOneWithAClearError(t *testing.T) {
	bin := buildDTA(t)
	dir := t.TempDir()
	cfg := durableConfig(t, dir)
	m, p := startProcess(t, bin, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	udp, base := m[1], m[2]
	t0 := time.Now()
	sendKeyWrite(t, udp, 12, 99)
	eventually(t, "key 12 is 99", func() error {
		if v := keyWriteValue(t, base, 12); v != 99 {
			return fmt.Errorf("value %d", v)
		}
		return nil
	})
	waitForCheckpointAfter(t, base, t0)
	time.Sleep(50 * time.Millisecond)
	sendKeyWrite(t, udp, 12, 100)
	eventually(t, "key 12 is 100", func() error {
		if v := keyWriteValue(t, base, 12); v != 100 {
			return fmt.Errorf("value %d", v)
		}
		return nil
	})
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.dta"))
	slices.Sort(files)
	newest := files[len(files)-1]
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff // corrupted by hand
	if err := os.WriteFile(newest, b, 0o600); err != nil {
		t.Fatal(err)
	}

	m, p = startProcess(t, bin, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	base = m[2]
	if v := keyWriteValue(t, base, 12); v != 99 {
		t.Errorf("key 12 = %d after the newest checkpoint was corrupted; want 99, from the previous one", v)
	}
	if logs := p.stderr.String(); !strings.Contains(logs, filepath.Base(newest)) || !strings.Contains(logs, "corrupt") {
		t.Errorf("the log does not name the corrupt file %s:\n%s", filepath.Base(newest), logs)
	}
	if n := metric(t, base, "", "dta_snapshot_corrupt_files_total"); n != 1 {
		t.Errorf("dta_snapshot_corrupt_files_total = %v, want 1", n)
	}
}

func TestEpochsAreListedAndQueriedAt(t *testing.T) {
	bin := buildDTA(t)
	dir := t.TempDir()
	cfg := durableConfig(t, dir)
	m, _ := startProcess(t, bin, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	udp, base := m[1], m[2]
	t0 := time.Now()
	sendKeyWrite(t, udp, 13, 1)
	eventually(t, "key 13 is 1", func() error {
		if v := keyWriteValue(t, base, 13); v != 1 {
			return fmt.Errorf("value %d", v)
		}
		return nil
	})
	waitForCheckpointAfter(t, base, t0)
	first := time.Now()
	time.Sleep(20 * time.Millisecond)
	sendKeyWrite(t, udp, 13, 2)
	eventually(t, "key 13 is 2", func() error {
		if v := keyWriteValue(t, base, 13); v != 2 {
			return fmt.Errorf("value %d", v)
		}
		return nil
	})
	waitForCheckpointAfter(t, base, time.Now())

	// dta query epochs, then --at a time between the two values, by CLI.
	var out strings.Builder
	if code := Run(t.Context(), []string{"query", "epochs", "--server", base}, nil, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "EPOCH") {
		t.Fatalf("dta query epochs: exit %d\n%s", code, out.String())
	}
	for _, tc := range []struct {
		at   string
		want string
	}{
		{first.UTC().Format(time.RFC3339Nano), "1"},
		{time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano), "2"},
	} {
		out.Reset()
		code := Run(t.Context(), []string{"query", "keywrite", "--server", base, "--key", "13", "--at", tc.at, "-o", "json"}, nil, &out, io.Discard)
		if code != 0 || !strings.Contains(out.String(), `"value_u32":`+tc.want+`,`) {
			t.Errorf("dta query keywrite --at %s: exit %d, %s; want value %s", tc.at, code, out.String(), tc.want)
		}
	}
	// An epoch that is not kept is a clear 404.
	status, body := call(t, nil, "GET", base+"/v1/stores/keywrite/keywrite?key=13&at=999999", "")
	if status != http.StatusNotFound || !strings.Contains(body, "not kept") {
		t.Errorf("at=999999: %d %s", status, body)
	}
}

// A translator whose durable collector restarts resumes every Append list
// at the head the collector restored, instead of overwriting it from 0.
func TestATranslatorResumesTheListsARestartedDurableCollectorRestored(t *testing.T) {
	dir := t.TempDir()
	cfg := durableConfig(t, dir)
	col, stopCol := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rdmaAddr, base := col[1], col[2]
	tr, _ := startCmd(t, translatorReady, "translator", "--config", cfg, "--collector", rdmaAddr,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	sendPrototypeReports(t, tr[1])
	checkPrototypeAnswers(t, base)
	stopCol()

	col2, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", rdmaAddr, "--http", "127.0.0.1:0")
	base2 := col2[2]
	checkPrototypeAnswers(t, base2)
	conn, err := net.Dial("udp", tr[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eventually(t, "an entry sent after the restart follows the restored ones", func() error {
		var r struct {
			Entries []struct {
				ValueU32 uint32 `json:"value_u32"`
			} `json:"entries"`
		}
		getJSON(t, base2+"/v1/stores/append/append/2?cursor=0&limit=100", &r)
		if len(r.Entries) < 7 {
			// Resent until the translator has reconnected (its first
			// sends after the restart are dropped, not queued).
			conn.Write([]byte{2, 0, 0x80, 0, 0, 0, 2, 0, 0, 0, 7})
			return fmt.Errorf("%d entries", len(r.Entries))
		}
		for i, e := range r.Entries[:6] {
			if e.ValueU32 != uint32(i+1) {
				return fmt.Errorf("entry %d = %d: the restored entries were overwritten", i, e.ValueU32)
			}
		}
		if r.Entries[6].ValueU32 != 7 {
			return fmt.Errorf("entry 6 = %d", r.Entries[6].ValueU32)
		}
		return nil
	})
}
