package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

func TestEmbeddedDefaultsAreValid(t *testing.T) {
	f := Default()
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	descs, err := f.Descriptors()
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]bool{}
	for _, d := range descs {
		if d.Default {
			defaults[d.Primitive.String()] = true
			if d.Name != d.Primitive.String() {
				t.Errorf("the default %v store is called %q, want it named after its primitive", d.Primitive, d.Name)
			}
		}
	}
	if len(defaults) != len(dta.Primitives) {
		t.Errorf("defaults for %d primitives, want one per primitive", len(defaults))
	}
	if f.Translator.Listen != ":40040" || f.Collector.HTTP != ":8040" || f.Translator.AckPort != 40044 {
		t.Errorf("ports: %+v %+v", f.Translator, f.Collector)
	}
	if f.Translator.PostcardCache != 32768 || f.Translator.PostcardMaxAge != 500*time.Millisecond || f.Translator.RecvBuffer != 64<<20 {
		t.Errorf("translator defaults: %+v", f.Translator)
	}
}

func TestParseOverridesDefaults(t *testing.T) {
	f, err := Parse([]byte("translator:\n  append_flush_delay: 2ms\n  recv_buffer: 8MiB\nlog:\n  format: json\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Translator.AppendFlushDelay != 2*time.Millisecond || f.Translator.RecvBuffer != 8<<20 || f.Log.Format != "json" {
		t.Fatalf("%+v %+v", f.Translator, f.Log)
	}
	if f.Translator.Listen != ":40040" || len(f.Stores) != len(Default().Stores) {
		t.Fatal("keys the file does not set must keep their defaults")
	}
	g, err := Parse([]byte("stores:\n  - {name: only, id: 9, primitive: keywrite, memory: 1MiB}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Stores) != 1 || g.Stores[0].Name != "only" {
		t.Fatalf("a stores list replaces the defaults whole: %+v", g.Stores)
	}
}

func TestBadConfigsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"an unknown top-level key", "colector:\n  http: x\n", `unknown key "colector"`},
		{"an unknown nested key", "translator:\n  readerz: 2\n", `unknown key "readerz"`},
		{"an unknown store key", "stores:\n  - {name: a, id: 1, primitive: keywrite, slotz: 4}\n", `unknown key "slotz"`},
		{"a bad log level", "log:\n  level: loud\n", "log.level"},
		{"a bad log format", "log:\n  format: xml\n", "log.format"},
		{"a bad hugepages mode", "collector:\n  hugepages: always\n", "collector.hugepages"},
		{"a responder address without a port", "collector:\n  rdma: 0\n", "collector.rdma"},
		{"a responder address with a host name", "collector:\n  rdma: collector:4791\n", "collector.rdma"},
		{"a query API address without a port", "collector:\n  http: \"8040\"\n", "collector.http"},
		{"an empty query API address", "collector:\n  http: \"\"\n", "collector.http"},
		{"a translator metrics address with a bad port", "translator:\n  http: \":http8041\"\n", "translator.http"},
		{"no responder read loop", "collector:\n  read_loops: 0\n", "collector.read_loops"},
		{"a collector name with a newline", "collector:\n  name: \"bad name\\n\"\n", "collector.name"},
		{"a report address without a port", "translator:\n  listen: garbage\n", "translator.listen"},
		{"an INT address without a port", "translator:\n  int_listen: garbage\n", "translator.int_listen"},
		{"a requester address with a host name", "translator:\n  rdma_local: host:4791\n", "translator.rdma_local"},
		{"replicas without several collectors", "translator:\n  replicas: 3\n", "translator.replicas"},
		{"an INT UDP port of 0 without INT input", "int:\n  udp_ports: [0]\n", "int.udp_ports[0]"},
		{"a postcard age of years", "translator:\n  postcard_max_age: 99999h\n", "postcard_max_age"},
		{"an Append flush delay of years", "translator:\n  append_flush_delay: 99999h\n", "append_flush_delay"},
		{"an XDP fallback that is no transport, XDP off", "translator:\n  xdp:\n    fallback: tcp\n", "translator.xdp.fallback"},
		{"a port above 16 bits in a list of lines", "int:\n  udp_ports:\n    - 6000\n    - 70000\n", "int.udp_ports[1] (line 4)"},
		{"a list where a section is wanted", "collector:\n  - 1\n", "collector (line"},
		{"a negative number of readers", "translator:\n  readers: -1\n", "translator.readers"},
		{"a negative batch size", "translator:\n  batch_size: -5\n", "translator.batch_size"},
		{"more readers than the listener takes", "translator:\n  readers: 100000\n", "translator.readers"},
		{"a batch size above the listener's", "translator:\n  batch_size: 100000\n", "translator.batch_size"},
		{"a receive buffer that wraps an int", "translator:\n  recv_buffer: 18446744073709551615\n", "translator.recv_buffer"},
		{"INT reports on the DTA port", "translator:\n  listen: 127.0.0.1:40040\n  int_listen: 127.0.0.1:40040\n", "translator.int_listen"},
		{"INT reports on any address at the DTA port", "translator:\n  listen: :40040\n  int_listen: 127.0.0.1:40040\n", "shares port 40040"},
		{"an INT UDP port of 0", "translator:\n  int_listen: :40050\nint:\n  udp_ports: [0]\n", "int.udp_ports[0]"},
		{"an initial TTL of 0", "translator:\n  int_listen: :40050\nint:\n  initial_ttls: [64, 0]\n", "int.initial_ttls[1]"},
		{"too many responder read loops", "collector:\n  read_loops: 65\n", "collector.read_loops"},
		{"a responder pause longer than 1ms", "collector:\n  pause: 2ms\n", "collector.pause"},
		{"a responder pause that may grow less than it starts", "collector:\n  pause: 200us\n  pause_max: 100us\n", "collector.pause_max"},
		{"a responder pause limit without a pause", "collector:\n  pause_max: 1ms\n", "collector.pause_max"},
		{"a duration without a unit", "translator:\n  postcard_max_age: 5\n", "postcard_max_age"},
		{"a negative flush delay", "translator:\n  append_flush_delay: -1ms\n", "append_flush_delay"},
		{"a bad size", "translator:\n  recv_buffer: lots\n", "recv_buffer"},
		{"a tiny postcard cache", "translator:\n  postcard_cache: 0\n", "postcard_cache"},
		{"an ack port out of range", "translator:\n  ack_port: 70000\n", "ack_port"},
		{"a store of an unknown primitive", "stores:\n  - {name: a, id: 1, primitive: sketch}\n", "primitive"},
		{"two stores with one id", "stores:\n  - {name: a, id: 1, primitive: keywrite}\n  - {name: b, id: 1, primitive: append}\n", "id"},
		{"a key-write field on an append store", "stores:\n  - {name: a, id: 1, primitive: append, value_size: 4}\n", "value_size"},
		{"two YAML documents", "log:\n  level: info\n---\nlog:\n  level: info\n", "more than one YAML document"},
		{"not YAML at all", "{{{", "line 1"},
		{"an export broker without a port", "export:\n  brokers: [kafka]\n", "export.brokers"},
		{"an export CA file that is a device", "export:\n  brokers: [kafka:9092]\n  tls:\n    enabled: true\n    ca_file: /dev/zero\n", "export.tls.ca_file"},
		{"an export CA file that does not exist", "export:\n  brokers: [kafka:9092]\n  tls:\n    enabled: true\n    ca_file: /nonexistent/ca.pem\n", "export.tls.ca_file"},
		{"an unknown export format", "export:\n  brokers: [k:9092]\n  format: avro\n", "export.format"},
		{"an export of an unknown store", "export:\n  brokers: [k:9092]\n  stores: [nope]\n", "export.stores"},
		{"an export setting out of range with no brokers yet (--export-brokers may give them)", "export:\n  linger: -1s\n", "export.linger"},
		{"a collector name with a comma, which a list of collectors cannot hold", "collector:\n  name: a,b\n", "collector.name"},
		{"a collector name with an equals sign", "collector:\n  name: a=b\n", "collector.name"},
		{"an export of a Sketch-Merge store", "export:\n  brokers: [k:9092]\n  stores: [sketchmerge]\n", "is a Sketch-Merge store"},
		{"an unknown export start", "export:\n  start: middle\n", "export.start"},
		{"an unknown export key", "export:\n  brokerz: []\n", `unknown key "brokerz"`},
		{"an unknown rule key", "rules:\n  - {name: a, source: postcard, op: gt, treshold: 1, action: {type: append, store: x}}\n", `unknown key "treshold"`},
		{"an unknown rule action key", "rules:\n  - {name: a, source: postcard, op: gt, action: {type: append, store: x, lst: 1}}\n", `unknown key "lst"`},
		{"a rule with a bad operator", "rules:\n  - {name: a, source: postcard, op: '=>', action: {type: append, store: x}}\n", "rules[0].op"},
		{"a rule with an unknown aggregate", "rules:\n  - {name: a, source: postcard, aggregate: avg, op: gt, action: {type: append, store: x}}\n", "rules[0].aggregate"},
		{"a second rule without an action type", "rules:\n  - {name: a, source: postcard, op: gt, action: {type: append, store: x}}\n  - {name: b, source: postcard, op: gt, action: {store: x}}\n", "rules[1].action.type"},
	} {
		t.Run(tc.name+" is refused with a message naming it", func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestRulesAreReadIntoTheTranslatorConfig(t *testing.T) {
	if len(Default().Rules) != 0 {
		t.Errorf("the defaults have rules: %+v", Default().Rules)
	}
	// The example in default.yaml's comments, uncommented.
	f, err := Parse([]byte(`rules:
  - name: slow-paths
    source: postcard
    aggregate: sum
    op: ">"
    threshold: 1000
    action:
      type: append
      store: slow-paths
      list_by_key: true
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.TranslatorConfig().Rules
	if len(r) != 1 || r[0].Name != "slow-paths" || r[0].Op != ">" || r[0].Threshold != 1000 || !r[0].Action.ListByKey || r[0].Action.Store != "slow-paths" {
		t.Fatalf("rules %+v", r)
	}
	// Stores are checked when the translator starts: this configuration has
	// no slow-paths store, which is no error yet.
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadReadsAFileAndNamesIt(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("collector:\n  http: 127.0.0.1:9999\n"), 0o644)
	f, err := Load(good)
	if err != nil || f.Collector.HTTP != "127.0.0.1:9999" {
		t.Fatalf("%v %+v", err, f)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("nope: 1\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Fatalf("err = %v, want the file named", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

func TestMarshalRoundTrips(t *testing.T) {
	b, err := Default().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("the printed config does not parse back: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(f.Translator, Default().Translator) || !reflect.DeepEqual(f.HTTP, Default().HTTP) || len(f.Stores) != len(Default().Stores) {
		t.Fatal("the printed config changed on the way back")
	}
}

func TestCollectorSettingsReachTheResponder(t *testing.T) {
	for _, tc := range []struct {
		name, yaml      string
		loops           int
		pause, pauseMax time.Duration
	}{
		{"the default is one loop, woken by each request", "", 1, 0, 0},
		{"collector.read_loops sets the loops", "collector:\n  read_loops: 4\n", 4, 0, 0},
		{"collector.pause and pause_max set the pause", "collector:\n  pause: 150us\n  pause_max: 500us\n", 1, 150 * time.Microsecond, 500 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			rc := f.ResponderConfig()
			if rc.ReadLoops != tc.loops || rc.Pause != tc.pause || rc.PauseMax != tc.pauseMax {
				t.Errorf("ResponderConfig() read loops %d, pause %v, max %v; want %d, %v, %v",
					rc.ReadLoops, rc.Pause, rc.PauseMax, tc.loops, tc.pause, tc.pauseMax)
			}
			if err := rc.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo") // no writer: opening it must not wait for one
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", t.TempDir(), fifo} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(%s): %v, want a refusal", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) is still reading", path)
		}
	}
}

// TestEveryKeyIsInTheDefaultFile walks the configuration's YAML keys and
// asks that each appear in the embedded default.yaml, as a key or in a
// comment: the file is the reference operators read (`dta config`).
func TestEveryKeyIsInTheDefaultFile(t *testing.T) {
	doc := string(DefaultYAML())
	var walk func(tp reflect.Type, path string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || tp.PkgPath() == "time" {
			return
		}
		for i := range tp.NumField() {
			f := tp.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || key == "-" || key == "" {
				continue
			}
			p := key
			if path != "" {
				p = path + "." + key
			}
			if !regexp.MustCompile(`(?m)(^|[\s#-])` + regexp.QuoteMeta(key) + `:`).MatchString(doc) {
				t.Errorf("%s is a configuration key that default.yaml does not mention", p)
			}
			walk(f.Type, p)
		}
	}
	walk(reflect.TypeOf(File{}), "")
}
