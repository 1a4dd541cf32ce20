// Package config reads the dta YAML configuration strictly (an unknown key is
// an error that names it), fills defaults from the embedded default.yaml, and
// turns it into the Config of each component. It is the only place that knows
// the file's shape; components never see YAML.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/rdma/sock"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration file.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// File is the configuration file.
type File struct {
	Log        Log            `yaml:"log"`
	Collector  Collector      `yaml:"collector"`
	Translator Translator     `yaml:"translator"`
	HTTP       HTTP           `yaml:"http"`
	INT        INT            `yaml:"int"`
	Export     Export         `yaml:"export"`
	Stores     []store.Config `yaml:"stores"`
	// Rules are the translator's query extensions (internal/translator/rule),
	// run by dta up and dta translator.
	Rules []rule.Config `yaml:"rules"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Collector configures the collector side.
type Collector struct {
	HTTP      string `yaml:"http"`
	RDMA      string `yaml:"rdma"`
	Name      string `yaml:"name"`
	HugePages string `yaml:"hugepages"`
	Prefault  bool   `yaml:"prefault"`
	// ReadLoops is the number of SO_REUSEPORT sockets (each with its own
	// goroutine) the RoCEv2 responder receives on: rdma.ResponderConfig.ReadLoops.
	ReadLoops int `yaml:"read_loops"`
	// Pause and PauseMax are rdma.ResponderConfig.Pause and PauseMax:
	// while requests keep coming, the responder's read loops read them
	// after pauses instead of being woken by each (0: woken by each).
	Pause    time.Duration `yaml:"pause"`
	PauseMax time.Duration `yaml:"pause_max"`
	// Transport is how RoCEv2 requests reach the responder: "udp" (the
	// default, the kernel's UDP sockets) or "xdp" (AF_XDP sockets on
	// xdp.interface as well: rdma.ResponderConfig.XDP).
	Transport string `yaml:"transport"`
	// XDP configures the responder's AF_XDP path (transport: xdp); the
	// translator's section, with its batch size the responder's.
	XDP XDPIngest `yaml:"xdp"`

	CollectorGuard      `yaml:",inline"`
	CollectorDurability `yaml:",inline"`
}

// Translator configures the translator side.
type Translator struct {
	Listen           string         `yaml:"listen"`
	Sink             string         `yaml:"sink"`
	Collector        string         `yaml:"collector"`
	Replicas         int            `yaml:"replicas"`
	RDMALocal        string         `yaml:"rdma_local"`
	HTTP             string         `yaml:"http"`
	Readers          int            `yaml:"readers"`
	BatchSize        int            `yaml:"batch_size"`
	RecvBuffer       store.ByteSize `yaml:"recv_buffer"`
	LegacyHeader     bool           `yaml:"legacy_header"`
	AckPort          int            `yaml:"ack_port"`
	PostcardCache    int            `yaml:"postcard_cache"`
	PostcardMaxAge   time.Duration  `yaml:"postcard_max_age"`
	AppendFlushDelay time.Duration  `yaml:"append_flush_delay"`
	MaxReporters     int            `yaml:"max_reporters"`

	TranslatorGuard     `yaml:",inline"`
	TranslatorINT       `yaml:",inline"`
	TranslatorTransport `yaml:",inline"`
}

// Default returns the embedded defaults.
func Default() *File {
	f, err := decode(bytes.NewReader(defaultYAML), nil)
	if err != nil {
		panic("config: embedded default.yaml is invalid: " + err.Error()) // a build defect, caught by tests
	}
	return f
}

// MaxFileBytes bounds a configuration file (the defaults are 5 KB).
const MaxFileBytes = 4 << 20

// Load reads the file at path over the defaults: sections and keys it sets
// replace the defaults; a stores list replaces the default stores whole.
func Load(path string) (*File, error) {
	b, err := httpguard.ReadRegular(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := decode(bytes.NewReader(b), Default())
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return f, nil
}

// Parse reads a configuration from YAML bytes over the defaults.
func Parse(b []byte) (*File, error) { return decode(bytes.NewReader(b), Default()) }

func decode(r io.Reader, base *File) (*File, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if err := checkNodes(src); err != nil {
		return nil, err
	}
	f := base
	if f == nil {
		f = &File{}
	}
	// A stores list in the file replaces the defaults rather than merging
	// into them element by element.
	saved := f.Stores
	f.Stores = nil
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) {
		return nil, cleanYAMLError(err, src)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	if f.Stores == nil {
		f.Stores = saved
	}
	return f, withLine(f.Validate(), src)
}

// keyPathRE matches the dotted key an error of Validate begins with
// (translator.recv_buffer, stores[2].redundancy).
var keyPathRE = regexp.MustCompile(`^[a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*`)

// withLine adds to an error that begins with a key of src the line the key
// is set on, at the end of its first line ("translator.recv_buffer:
// 2147483648 bytes (...) (line 4)"); an error about a key the file does not
// set (a default's) is returned as it is.
func withLine(err error, src []byte) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	path := keyPathRE.FindString(msg)
	if path == "" || strings.HasPrefix(msg[len(path):], " (line ") || strings.HasPrefix(msg[len(path):], ", ") {
		return err // already placed, or about several keys
	}
	line := lineOfKey(src, path)
	if line == 0 {
		return err
	}
	// "collector.xdp: rx_ring: ...": the key goes on past the colon.
	end, key := len(path), path
	for {
		m := subKeyRE.FindStringSubmatch(msg[end:])
		if m == nil {
			break
		}
		l := lineOfKey(src, key+"."+m[1])
		if l == 0 {
			break
		}
		end, key, line = end+len(m[0])-1, key+"."+m[1], l
	}
	// The line goes at the end of the message's first line, so that the
	// key and what follows it read as before.
	first, rest, _ := strings.Cut(msg, "\n")
	if rest != "" {
		rest = "\n" + rest
	}
	return fmt.Errorf("%s (line %d)%s", first, line, rest)
}

// subKeyRE matches ": key:" after a key path in an error.
var subKeyRE = regexp.MustCompile(`^: ([a-z_]+):`)

// lineOfKey returns the line on which src sets the dotted key path, or 0.
// Aliases are not followed.
func lineOfKey(src []byte, path string) int {
	var root yaml.Node
	if yaml.Unmarshal(src, &root) != nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return 0
	}
	n, line := root.Content[0], 0
	for part := range strings.SplitSeq(path, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if n.Kind != yaml.MappingNode {
			return 0
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				n, line, found = n.Content[i+1], n.Content[i].Line, true
				break
			}
		}
		if !found {
			return 0
		}
		if hasIdx {
			k, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if err != nil || n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return 0
			}
			n, line = n.Content[k], n.Content[k].Line
		}
	}
	return line
}

var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlTagRE finds the tag of the value a yaml.v3 type error is about.
var yamlTagRE = regexp.MustCompile(`!![a-z]+`)

// keyAtLine returns the dotted key (int.udp_ports[0]) of the deepest value
// that starts on line of src and has tag (any tag when ""), or "" when src
// does not parse as a node tree. Aliases are not followed (no expansion of
// alias bombs).
func keyAtLine(src []byte, line int, tag string) string {
	var root yaml.Node
	if yaml.Unmarshal(src, &root) != nil {
		return ""
	}
	var best string
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if v.Line == line && (tag == "" || v.ShortTag() == tag) {
					best = p
				}
				walk(v, p, depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := path + "[" + strconv.Itoa(i) + "]"
				if c.Line == line && (tag == "" || c.ShortTag() == tag) {
					best = p
				}
				walk(c, p, depth+1)
			}
		}
	}
	walk(&root, "", 0)
	return best
}

// cleanYAMLError rewrites yaml.v3's errors so that they name the key: "field
// x not found in type config.File" becomes `unknown key "x"`, and a value of
// the wrong type gets the key of its line.
func cleanYAMLError(err error, src []byte) error {
	msg := strings.ReplaceAll(err.Error(), "yaml: unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, "yaml: ", "")
	if i := strings.Index(msg, "field "); i >= 0 && strings.Contains(msg, " not found in type") {
		key := msg[i+len("field "):]
		key = key[:strings.Index(key, " not found")]
		return fmt.Errorf("%s unknown key %q", strings.TrimSpace(msg[:i]), key)
	}
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		if key := keyAtLine(src, n, yamlTagRE.FindString(msg)); key != "" {
			return fmt.Errorf("%s (line %d): %s", key, n, msg[m[1]:])
		}
		lines := strings.Split(string(src), "\n")
		if n >= 1 && n <= len(lines) {
			line := strings.TrimLeft(lines[n-1], " -{")
			if k, _, ok := strings.Cut(line, ":"); ok && k != "" && !strings.ContainsAny(k, " ,{}") {
				return fmt.Errorf("line %d: %s: %s", n, k, msg[m[1]:])
			}
		}
	}
	// Errors from a value's own parser (sizes) carry the value but no line;
	// checkNodes names their key and line first, and this is a fallback for
	// what it does not reach: find the line that holds the value.
	if i := strings.Index(msg, "\""); i >= 0 {
		if j := strings.Index(msg[i+1:], "\""); j > 0 {
			val := msg[i+1 : i+1+j]
			for n, line := range strings.Split(string(src), "\n") {
				k, v, ok := strings.Cut(strings.TrimLeft(line, " -{"), ":")
				if ok && strings.TrimSpace(v) == val {
					return fmt.Errorf("line %d: %s: %s", n+1, k, msg)
				}
			}
		}
	}
	return errors.New(msg)
}

// maxReadLoops bounds collector.read_loops (rdma.ResponderConfig.ReadLoops
// accepts as many).
const maxReadLoops = 64

// Validate checks every section; errors name the key.
func (f *File) Validate() error {
	if _, err := f.LogLevel(); err != nil {
		return err
	}
	if f.Log.Format != "text" && f.Log.Format != "json" {
		return fmt.Errorf("log.format: %q (want text or json)", f.Log.Format)
	}
	if _, err := region.ParseHugePages(f.Collector.HugePages); err != nil {
		return fmt.Errorf("collector.hugepages: %w", err)
	}
	if err := checkListen("collector.http", f.Collector.HTTP); err != nil {
		return err
	}
	if err := checkListen("translator.http", f.Translator.HTTP); err != nil {
		return err
	}
	if f.Collector.RDMA == "" {
		return errors.New("collector.rdma: empty")
	}
	if strings.ContainsAny(f.Collector.Name, ",= ") {
		return fmt.Errorf("collector.name: %q: a name may not hold ',', '=' or a space (translators and queries list collectors as NAME=ADDRESS,...)", f.Collector.Name)
	}
	if err := checkName("collector.name", f.Collector.Name); err != nil {
		return err
	}
	if err := checkUDPListen("translator.listen", f.Translator.Listen); err != nil {
		return err
	}
	if f.Translator.INTListen != "" {
		if err := checkUDPListen("translator.int_listen", f.Translator.INTListen); err != nil {
			return err
		}
	}
	if f.Translator.RDMALocal != "" {
		if _, _, err := sock.ParseLocal(f.Translator.RDMALocal); err != nil {
			return fmt.Errorf("translator.rdma_local: %q: want an IP address (or nothing) and a port, as 192.0.2.10:4791 or :0", f.Translator.RDMALocal)
		}
	}
	if n := f.Translator.Readers; n < 0 || n > udp.MaxReaders {
		return fmt.Errorf("translator.readers: %d (want 0 for one per CPU, or up to %d)", n, udp.MaxReaders)
	}
	if n := f.Translator.BatchSize; n < 0 || n > udp.MaxBatchSize {
		return fmt.Errorf("translator.batch_size: %d (want 0 for the default, or up to %d)", n, udp.MaxBatchSize)
	}
	if n := uint64(f.Translator.RecvBuffer); n > udp.MaxRecvBuffer {
		return fmt.Errorf("translator.recv_buffer: %d bytes (want 0 for the kernel's default, or up to 1GiB)", n)
	}
	if n := f.Collector.ReadLoops; n < 1 || n > maxReadLoops {
		return fmt.Errorf("collector.read_loops: %d (want 1 to %d)", n, maxReadLoops)
	}
	if _, _, err := sock.ParseLocal(f.Collector.RDMA); err != nil {
		return fmt.Errorf("collector.rdma: %q: want an IP address (or nothing) and a port, as 127.0.0.1:4791 or :4791", f.Collector.RDMA)
	}
	pc := rdma.DefaultResponderConfig()
	pc.Addr, pc.Pause, pc.PauseMax = "127.0.0.1:0", f.Collector.Pause, f.Collector.PauseMax
	if err := pc.Validate(); err != nil {
		return fmt.Errorf("collector.pause %v, collector.pause_max %v: want pause 0 or 10us to 1ms, pause_max 0 or pause to 10ms", f.Collector.Pause, f.Collector.PauseMax)
	}
	if f.Translator.Sink != "local" && f.Translator.Sink != "roce" {
		return fmt.Errorf("translator.sink: %q (want local or roce)", f.Translator.Sink)
	}
	if f.Translator.Collector != "" {
		if _, err := f.Targets(); err != nil {
			return err
		}
	} else if f.Translator.Replicas != 1 {
		return fmt.Errorf("translator.replicas: %d: it goes with several collectors in translator.collector (here the stores are local)", f.Translator.Replicas)
	}
	// The rules are a top-level list; that their stores exist and are of
	// the right primitive the translator checks when it starts (dta
	// translator's stores are the collector's).
	if err := rule.Check(f.Rules); err != nil {
		return err
	}
	if err := f.TranslatorConfig().Validate(); err != nil {
		return fmt.Errorf("translator.%w", err)
	}
	if err := f.validateTransport(); err != nil {
		return err
	}
	if err := f.validateCollectorTransport(); err != nil {
		return err
	}
	if err := f.IngestConfig().Validate(); err != nil {
		return fmt.Errorf("translator: %w", err)
	}
	if _, err := store.DescribeAll(f.Stores); err != nil {
		return err
	}
	if err := f.validateDurability(); err != nil {
		return err
	}
	if err := f.validateINT(); err != nil {
		return err
	}
	if err := f.validateExport(); err != nil {
		return err
	}
	return f.validateSecurity()
}

// checkUDPListen checks a UDP listen address: an IP address or nothing
// (every address), and a port, as the UDP listener binds it.
func checkUDPListen(key, addr string) error {
	if _, _, err := sock.ParseLocal(addr); err != nil {
		return fmt.Errorf("%s: %q: want an IP address (or nothing) and a port, as 127.0.0.1:40040 or :40040", key, addr)
	}
	return nil
}

// checkName checks a name that goes into logs, metrics and answers: at
// most 64 bytes of printable UTF-8 (empty: the host's name).
func checkName(key, s string) error {
	if len(s) > 64 || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%s: %q: want at most 64 printable characters", key, s)
	}
	return nil
}

// checkListen checks a listen address (an HTTP server's, a UDP socket's): host:port,
// the host a name, an IP address or empty, the port a number (0: any free
// port).
func checkListen(key, addr string) error {
	if addr == "" {
		return fmt.Errorf("%s: empty", key)
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("%s: %q: want host:port (an IP address, a name or nothing, and a port)", key, addr)
	}
	return nil
}

// LogLevel returns the configured slog level.
func (f *File) LogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.Log.Level)); err != nil {
		return 0, fmt.Errorf("log.level: %q (want debug, info, warn or error)", f.Log.Level)
	}
	return l, nil
}

// RegionConfig is the region settings every store is mapped with.
func (f *File) RegionConfig() region.Config {
	hp, _ := region.ParseHugePages(f.Collector.HugePages)
	rc := region.DefaultConfig()
	rc.HugePages, rc.Prefault = hp, f.Collector.Prefault
	return rc
}

// TranslatorConfig is the translator's Config.
func (f *File) TranslatorConfig() translator.Config {
	t := f.Translator
	return translator.Config{
		LegacyHeader:         t.LegacyHeader,
		PostcardCacheEntries: t.PostcardCache,
		PostcardMaxAge:       t.PostcardMaxAge,
		AppendFlushDelay:     t.AppendFlushDelay,
		MaxReporters:         t.MaxReporters,
		Rules:                f.Rules,
	}
}

// IngestConfig is the UDP front end's Config.
func (f *File) IngestConfig() ingest.Config {
	c := ingest.DefaultConfig()
	t := f.Translator
	c.UDP.Addr = t.Listen
	if t.Readers > 0 {
		c.UDP.Readers = t.Readers
	} else {
		c.UDP.Readers = runtime.GOMAXPROCS(0)
	}
	if t.BatchSize > 0 {
		c.UDP.BatchSize = t.BatchSize
	}
	c.UDP.RecvBuffer = int(t.RecvBuffer)
	c.AckPort = t.AckPort
	c.XDP, c.XDPFallback = f.XDPConfig(), t.XDP.Fallback == TransportUDP
	return c
}

// Descriptors validates the stores and returns their descriptors.
func (f *File) Descriptors() ([]store.Descriptor, error) { return store.DescribeAll(f.Stores) }

// Marshal renders the configuration as YAML.
func (f *File) Marshal() ([]byte, error) { return yaml.Marshal(f) }

// ResponderConfig is the collector's RoCEv2 responder configuration.
func (f *File) ResponderConfig() rdma.ResponderConfig {
	c := rdma.DefaultResponderConfig()
	c.Addr = f.Collector.RDMA
	c.ReadLoops = f.Collector.ReadLoops
	c.Pause, c.PauseMax = f.Collector.Pause, f.Collector.PauseMax
	c.AllowTranslators, _ = f.AllowTranslators() // checked by Validate
	c.XDP = f.Collector.XDPConfig()
	return c
}

// RequesterConfig is the translator's RoCEv2 requester configuration towards
// the collector at addr (translator.collector when addr is invalid).
func (f *File) RequesterConfig(addr netip.AddrPort) (rdma.RequesterConfig, error) {
	c := rdma.DefaultRequesterConfig()
	if !addr.IsValid() {
		t, err := f.Targets()
		if err != nil {
			return c, err
		}
		addr = t[0].Addr
	}
	c.Collector = addr
	c.Local = f.Translator.RDMALocal
	return c, c.Validate()
}
