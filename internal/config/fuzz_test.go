package config

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docExamples returns the YAML blocks of the README and docs/*.md: the
// configurations users copy, as fuzz seeds.
func docExamples(tb testing.TB) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	block := regexp.MustCompile("(?s)```yaml[^\n]*\n(.*?)```")
	var out [][]byte
	for _, name := range files {
		doc, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(doc, -1) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		tb.Fatal("no ```yaml block in README.md or docs/*.md")
	}
	return out
}

// FuzzParse reads arbitrary bytes as a configuration file. It must never
// panic. A file it accepts must validate, must give every component a
// configuration that component accepts (so that a bad value is refused when
// the file is read, naming its key, not when a component starts), and must
// print (dta up --print-config) as YAML that reads back to the same
// configuration.
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	for _, b := range docExamples(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"collector:\n  pause: 150us\n  pause_max: 500us\n  read_loops: 4\n",
		"collector:\n  rdma: 127.0.0.1:4791\n  transport: xdp\n  xdp:\n    interface: veth0\n",
		"translator:\n  sink: roce\n  collector: 127.0.0.1:4791,127.0.0.2:4791\n  replicas: 2\n",
		"translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    queues: 2\n    fallback: udp\n",
		"stores:\n  - {name: a, id: 1, primitive: keywrite, memory: 1MiB}\n  - {name: b, id: 2, primitive: append, memory: 1MiB}\n",
		"rules:\n  - {name: r, primitive: keywrite, store: keywrite}\n",
		"translator:\n  readers: 0\n  batch_size: 0\n  recv_buffer: 0\n",
		"translator:\n  readers: 0\n  recv_buffer: 0\n  ack_port: 0\n",
		"stores:\n  - {name: a, id: 1, primitive: postcard, chunks: 0, min_value: 0}\n",
		"translator:\n  xdp:\n    <<: {frame_size: 0}\n    frame_size: 4096\n",
		"collector: {history_max_bytes: 1GB}\n",
		"http:\n  max_body: 1KiB\n",
		"log: {level: debug, format: json}\n",
		"collector: &a {http: ':1'}\nhttp: *a\n",
		"---\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := Parse(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a message")
			}
			return
		}
		if err := cf.Validate(); err != nil {
			t.Fatalf("Parse accepted a file that Validate refuses: %v", err)
		}
		checkComponents(t, cf)
		out, err := cf.Marshal()
		if err != nil {
			t.Fatalf("Marshal of an accepted file: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("the printed configuration does not read back: %v\n%s", err, out)
		}
		again, err := back.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("the printed configuration changed on the way back:\n%s\nthen\n%s", out, again)
		}
	})
}

// checkComponents checks that every component's configuration derived from
// an accepted file is one that component accepts.
func checkComponents(t *testing.T, cf *File) {
	t.Helper()
	if _, err := cf.LogLevel(); err != nil {
		t.Errorf("LogLevel: %v", err)
	}
	rc := cf.RegionConfig() // each store sets its size
	rc.Size = 1 << 20
	if err := rc.Validate(); err != nil {
		t.Errorf("RegionConfig: %v", err)
	}
	if err := cf.TranslatorConfig().Validate(); err != nil {
		t.Errorf("TranslatorConfig: %v", err)
	}
	if err := cf.IngestConfig().Validate(); err != nil {
		t.Errorf("IngestConfig: %v", err)
	}
	if err := cf.ResponderConfig().Validate(); err != nil {
		t.Errorf("ResponderConfig: %v", err)
	}
	descs, err := cf.Descriptors()
	if err != nil {
		t.Errorf("Descriptors: %v", err)
	}
	if cf.Translator.Collector != "" {
		if _, err := cf.Targets(); err != nil {
			t.Errorf("Targets: %v", err)
		}
		if _, err := cf.RequesterConfig(netip.AddrPort{}); err != nil {
			t.Errorf("RequesterConfig: %v", err)
		}
	}
	if err == nil {
		if _, err := cf.INTIngest(descs); err != nil {
			t.Errorf("INTIngest: %v", err)
		}
	}
	if d := cf.DurabilityConfig(); d != nil {
		if err := d.Validate(); err != nil {
			t.Errorf("DurabilityConfig: %v", err)
		}
	}
	if e := cf.ExportConfig(); e != nil {
		if err := e.Validate(); err != nil {
			t.Errorf("ExportConfig: %v", err)
		}
	}
	if _, err := cf.AllowTranslators(); err != nil {
		t.Errorf("AllowTranslators: %v", err)
	}
	if _, err := cf.SourcePolicy(); err != nil {
		t.Errorf("SourcePolicy: %v", err)
	}
	if err := cf.HTTPLimits().Validate(); err != nil {
		t.Errorf("HTTPLimits: %v", err)
	}
	if x := cf.XDPConfig(); x != nil {
		if err := x.Validate(); err != nil {
			t.Errorf("XDPConfig: %v", err)
		}
	}
	if x := cf.Collector.XDPConfig(); x != nil {
		if err := x.Validate(); err != nil {
			t.Errorf("Collector.XDPConfig: %v", err)
		}
	}
}
