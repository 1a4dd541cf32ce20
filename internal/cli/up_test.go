package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

var upReady = regexp.MustCompile(`reports on udp (\S+), queries on (http://\S+) `)

// startUp runs `dta up` with unit-test sized stores on loopback ports picked
// by the kernel and returns the UDP report address and the HTTP base URL.
func startUp(t *testing.T, extra ...string) (udpAddr, base string) {
	t.Helper()
	args := append([]string{"up", "--config", smallConfig(t), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, extra...)
	m, _ := startCmd(t, upReady, args...)
	return m[1], m[2]
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// eventually retries check until it passes or 5 s pass: reports cross a real
// UDP socket, so the test waits for them instead of sleeping a fixed time.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkPrototypeAnswers(t *testing.T, base string) {
	eventually(t, "Key-Write returns the overwritten value", func() error {
		var r struct {
			Status   string `json:"status"`
			ValueU32 uint32 `json:"value_u32"`
		}
		getJSON(t, base+"/v1/stores/keywrite/keywrite?key=7&n=2", &r)
		if r.Status != "found" || r.ValueU32 != 0xBEEF {
			return fmt.Errorf("got %+v", r)
		}
		return nil
	})
	eventually(t, "Key-Increment returns the sum", func() error {
		var r struct {
			Count uint64 `json:"count"`
		}
		getJSON(t, base+"/v1/stores/keyincrement/keyincrement?key=9&n=4", &r)
		if r.Count != 12 {
			return fmt.Errorf("count %d", r.Count)
		}
		return nil
	})
	eventually(t, "Postcarding returns the hops in order", func() error {
		var r struct {
			Status string `json:"status"`
			Hops   []struct {
				Value   uint32 `json:"value"`
				Present bool   `json:"present"`
			} `json:"hops"`
		}
		getJSON(t, base+"/v1/stores/postcard/postcard?key=42", &r)
		if r.Status != "found" || len(r.Hops) != 5 {
			return fmt.Errorf("got %+v", r)
		}
		for i, h := range r.Hops {
			if h.Value != uint32(101+i) || !h.Present {
				return fmt.Errorf("hop %d: %+v", i+1, h)
			}
		}
		return nil
	})
	eventually(t, "Append returns the entries in arrival order", func() error {
		var r struct {
			Entries []struct {
				ValueU32 uint32 `json:"value_u32"`
			} `json:"entries"`
			Lost uint64 `json:"lost"`
		}
		getJSON(t, base+"/v1/stores/append/append/2?cursor=0&limit=100", &r)
		if len(r.Entries) != 6 || r.Lost != 0 {
			return fmt.Errorf("got %+v", r)
		}
		for i, e := range r.Entries {
			if e.ValueU32 != uint32(i+1) {
				return fmt.Errorf("entry %d = %d", i, e.ValueU32)
			}
		}
		return nil
	})
}

func TestUpAnswersPrototypeReportsFromAnotherProgram(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the hand-built-bytes test in Go covers the same layout")
	}
	udpAddr, base := startUp(t)
	host, port, _ := net.SplitHostPort(udpAddr)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "send_prototype_reports.py")
	if out, err := exec.Command(py, script, host, port).CombinedOutput(); err != nil {
		t.Fatalf("python sender: %v\n%s", err, out)
	}
	checkPrototypeAnswers(t, base)
}

func TestUpAnswersHandBuiltPrototypeBytes(t *testing.T) {
	udpAddr, base := startUp(t)
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pkts [][]byte
	seq := byte(0)
	add := func(op byte, body ...byte) {
		pkts = append(pkts, append([]byte{op, seq, 0}, body...))
		seq++
	}
	add(1, 2, 0, 0, 0, 7, 0xCA, 0xFE, 0xF0, 0x0D)
	add(1, 2, 0, 0, 0, 7, 0x00, 0x00, 0xBE, 0xEF)
	add(3, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5)
	add(3, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 7)
	for hop := byte(1); hop <= 5; hop++ {
		add(4, 0, 0, 0, 42, hop, 0, 0, 0, 100+hop)
	}
	for v := byte(1); v <= 6; v++ {
		add(2, 0, 0, 0, 2, 0, 0, 0, v)
	}
	for _, p := range pkts {
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // keep the overwrite after the first write
	}
	checkPrototypeAnswers(t, base)
}

func TestUpCountsMalformedPacketsAndKeepsAnswers(t *testing.T) {
	udpAddr, base := startUp(t)
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte{1, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 50}) // key 5 → 50
	eventually(t, "the good report lands", func() error {
		var r struct {
			ValueU32 uint32 `json:"value_u32"`
		}
		getJSON(t, base+"/v1/stores/keywrite/keywrite?key=5&n=2", &r)
		if r.ValueU32 != 50 {
			return fmt.Errorf("value %d", r.ValueU32)
		}
		return nil
	})
	bad := [][]byte{
		{},                                       // empty
		{1, 0},                                   // truncated
		{0x77, 0, 0, 1, 2, 3},                    // unknown opcode
		{1, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 99},    // N = 0 for key 5
		{1, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 99},    // N = 9
		{1, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 99, 1}, // trailing byte
		{2, 0, 0, 0, 0, 0, 99, 0, 0, 0, 1},       // list 99
		{4, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 1},     // hop 0
	}
	for _, p := range bad {
		conn.Write(p)
	}
	eventually(t, "every malformed datagram is counted by reason", func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[string]int{"truncated": 2, "unknown_opcode": 1, "redundancy": 2, "trailing": 1, "list": 1, "hop": 1}
		for reason, n := range want {
			line := fmt.Sprintf(`dta_translator_drops_total{reason=%q} %d`, reason, n)
			if !strings.Contains(string(b), line+"\n") {
				return fmt.Errorf("missing %q", line)
			}
		}
		return nil
	})
	var r struct {
		ValueU32 uint32 `json:"value_u32"`
	}
	getJSON(t, base+"/v1/stores/keywrite/keywrite?key=5&n=2", &r)
	if r.ValueU32 != 50 {
		t.Fatalf("a malformed report changed the answer to %d", r.ValueU32)
	}
	var h struct {
		Status string `json:"status"`
	}
	if code := getJSON(t, base+"/healthz", &h); code != 200 || h.Status != "ok" {
		t.Fatalf("healthz %d %+v", code, h)
	}
}

func TestUpAppendResetRestartsTheTranslatorsHeads(t *testing.T) {
	udpAddr, base := startUp(t)
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(v byte) { conn.Write([]byte{2, 0, 0, 0, 0, 0, 1, 0, 0, 0, v}) }
	type poll struct {
		Entries []struct {
			Index    uint64 `json:"index"`
			ValueU32 uint32 `json:"value_u32"`
		} `json:"entries"`
		Head uint64 `json:"head"`
	}
	for v := byte(1); v <= 6; v++ {
		send(v)
	}
	eventually(t, "six entries land", func() error {
		var p poll
		getJSON(t, base+"/v1/stores/append/append/1?cursor=0", &p)
		if p.Head != 6 {
			return fmt.Errorf("head %d", p.Head)
		}
		return nil
	})
	resp, err := http.Post(base+"/v1/stores/append/append:reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reset: %s", resp.Status)
	}
	send(70)
	send(71)
	eventually(t, "entries after the reset start again at index 0", func() error {
		var p poll
		getJSON(t, base+"/v1/stores/append/append/1?cursor=0", &p)
		if p.Head != 2 || len(p.Entries) != 2 || p.Entries[0].ValueU32 != 70 || p.Entries[1].ValueU32 != 71 {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
}
