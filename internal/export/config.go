package export

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dta-go/dta/internal/httpguard"
)

// Format is how records are encoded.
type Format string

// The record formats.
const (
	Protobuf Format = "protobuf" // proto/dta/export/v1/export.proto
	JSON     Format = "json"     // the same messages, proto field names
)

// Topics names the topic of each stream; "" turns the stream off.
type Topics struct {
	Append  string // every Append entry (AppendEntry)
	Paths   string // every Postcarding path written out (PostcardPath)
	Changes string // changed Key-Write and Key-Increment slots (SlotChange)
}

// TLSConfig is the transport security towards the brokers.
type TLSConfig struct {
	Enabled            bool
	CAFile             string // PEM roots to verify the brokers with ("" = the system's)
	CertFile, KeyFile  string // client certificate (mutual TLS), both or neither
	ServerName         string // expected in the brokers' certificates ("" = the dialled host)
	InsecureSkipVerify bool   // tests only: accept any certificate
}

// SASLConfig is the authentication towards the brokers.
type SASLConfig struct {
	Mechanism    string // "" (none), PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Username     string
	PasswordFile string // the password, first line; the file must not be readable by others
}

// Config configures an Exporter.
type Config struct {
	Brokers     []string // seed brokers, host:port
	ClientID    string   // Kafka client.id; default "dta"
	Collector   string   // the name put in every record; default the host name
	Topics      Topics
	Format      Format
	Compression string // none, gzip, snappy, lz4 or zstd; default snappy
	TLS         TLSConfig
	SASL        SASLConfig
	// Stores limits the exported stores to these names; empty: all.
	Stores []string
	// MaxInFlight bounds the records handed to the Kafka client and not yet
	// acknowledged; reads from the stores pause at the bound. Default 100000.
	MaxInFlight int
	// PathQueue bounds the paths the translator hands over and the exporter
	// has not yet taken; more are dropped and counted. Default 65536.
	PathQueue int
	// PollInterval is how often the Append lists are read. Default 100ms.
	PollInterval time.Duration
	// ChangesInterval is how often changed slots are exported. Default 10s
	// (the default checkpoint interval).
	ChangesInterval time.Duration
	// MaxShadowBytes bounds the copy of the Key-Write and Key-Increment
	// stores the changes stream compares against. Default 1 GiB.
	MaxShadowBytes uint64
	// StartLatest starts Append lists with no saved cursor at their heads
	// (only new entries) instead of at the oldest entry still readable.
	StartLatest bool
	// CursorFile keeps the acknowledged Append cursors across restarts
	// ("" = start per StartLatest every time). Written atomically.
	CursorFile string
	// Linger is how long the client waits to fill a batch. Default 5ms.
	Linger time.Duration
	// ShutdownTimeout bounds the final send at stop. Default 5s.
	ShutdownTimeout time.Duration
	// CreateTopics lets the brokers create missing topics (if they allow it).
	CreateTopics bool
}

// Defaults fills the zero fields with their defaults.
func (c *Config) Defaults() {
	if c.ClientID == "" {
		c.ClientID = "dta"
	}
	if c.Collector == "" {
		c.Collector, _ = os.Hostname()
	}
	if c.Format == "" {
		c.Format = Protobuf
	}
	if c.Compression == "" {
		c.Compression = "snappy"
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 100000
	}
	if c.PathQueue == 0 {
		c.PathQueue = 65536
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.ChangesInterval == 0 {
		c.ChangesInterval = 10 * time.Second
	}
	if c.MaxShadowBytes == 0 {
		c.MaxShadowBytes = 1 << 30
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Millisecond
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
}

// Validate reports the first thing wrong, naming the field as the config
// file does (export.*). Call Defaults first.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("brokers: none (set at least one host:port)")
	}
	for _, b := range c.Brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil || host == "" {
			return fmt.Errorf("brokers: %q: want host:port", b)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return fmt.Errorf("brokers: %q: port %q is not in 1..65535", b, port)
		}
	}
	if c.Topics == (Topics{}) {
		return errors.New("topics: every stream is off (set topics.append, topics.paths or topics.changes)")
	}
	for _, t := range []string{c.Topics.Append, c.Topics.Paths, c.Topics.Changes} {
		if err := validTopic(t); err != nil {
			return fmt.Errorf("topics: %w", err)
		}
	}
	if c.Format != Protobuf && c.Format != JSON {
		return fmt.Errorf("format: %q (want protobuf or json)", c.Format)
	}
	if _, err := codec(c.Compression); err != nil {
		return err
	}
	switch {
	case c.MaxInFlight < 1 || c.MaxInFlight > 10_000_000:
		return fmt.Errorf("max_in_flight: %d out of range [1, 10000000]", c.MaxInFlight)
	case c.PathQueue < 1 || c.PathQueue > 1<<24:
		return fmt.Errorf("path_queue: %d out of range [1, 16777216]", c.PathQueue)
	case c.PollInterval < time.Millisecond || c.PollInterval > time.Minute:
		return fmt.Errorf("poll_interval: %v out of range [1ms, 1m]", c.PollInterval)
	case c.ChangesInterval < 10*time.Millisecond || c.ChangesInterval > 24*time.Hour:
		return fmt.Errorf("changes_interval: %v out of range [10ms, 24h]", c.ChangesInterval)
	case c.Linger < 0 || c.Linger > time.Second:
		return fmt.Errorf("linger: %v out of range [0, 1s]", c.Linger)
	case c.ShutdownTimeout < 0 || c.ShutdownTimeout > 10*time.Minute:
		return fmt.Errorf("shutdown_timeout: %v out of range [0, 10m]", c.ShutdownTimeout)
	}
	if c.TLS.Enabled == false && (c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.KeyFile != "") {
		return errors.New("tls: files set but tls.enabled is false")
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return errors.New("tls: cert_file and key_file go together")
	}
	switch strings.ToUpper(c.SASL.Mechanism) {
	case "":
		if c.SASL.Username != "" || c.SASL.PasswordFile != "" {
			return errors.New("sasl: username or password_file set without sasl.mechanism")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if c.SASL.Username == "" || c.SASL.PasswordFile == "" {
			return fmt.Errorf("sasl: %s needs username and password_file", c.SASL.Mechanism)
		}
	default:
		return fmt.Errorf("sasl.mechanism: %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", c.SASL.Mechanism)
	}
	return nil
}

// validTopic applies Kafka's topic name rules ("" is allowed: off).
func validTopic(t string) error {
	if t == "" {
		return nil
	}
	if len(t) > 249 || t == "." || t == ".." {
		return fmt.Errorf("%q is not a valid Kafka topic name", t)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q is not a valid Kafka topic name (letters, digits, '.', '_', '-')", t)
		}
	}
	return nil
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression: %q (want none, gzip, snappy, lz4 or zstd)", name)
}

// CheckFiles reads the TLS and SASL files the configuration names, as
// starting the exporter would, so that a missing, unreadable or
// non-regular file is refused when the configuration is read rather than
// after the collector is serving. It connects to nothing.
func (c *Config) CheckFiles() error {
	_, err := c.clientOptions(nil)
	return err
}

// clientOptions turns the configuration into the Kafka client's options,
// reading the TLS and SASL files; watch (if not nil) wraps the SASL
// mechanism.
func (c *Config) clientOptions(watch func(sasl.Mechanism) sasl.Mechanism) ([]kgo.Opt, error) {
	comp, err := codec(c.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
		kgo.ProducerBatchCompression(comp),
		kgo.ProducerLinger(c.Linger),
		// The exporter's own bound is the real one; the client's must never
		// be what blocks (paths and changes share it with Append).
		kgo.MaxBufferedRecords(c.MaxInFlight + 1024),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}
	if c.CreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if c.TLS.Enabled {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.SASL.Mechanism != "" {
		m, err := c.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		if watch != nil {
			m = watch(m)
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (t TLSConfig) config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := httpguard.ReadRegular(t.CAFile, httpguard.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		certPEM, err := httpguard.ReadRegular(t.CertFile, httpguard.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file: %w", err)
		}
		keyPEM, err := httpguard.ReadRegular(t.KeyFile, httpguard.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("tls.key_file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func (s SASLConfig) mechanism() (sasl.Mechanism, error) {
	fi, err := os.Stat(s.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("sasl.password_file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("sasl.password_file: %s is readable by others (mode %v): chmod 600 it", s.PasswordFile, fi.Mode().Perm())
	}
	b, err := httpguard.ReadRegular(s.PasswordFile, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("sasl.password_file: %w", err)
	}
	pass, _, _ := strings.Cut(string(b), "\n")
	pass = strings.TrimRight(pass, "\r")
	if pass == "" {
		return nil, fmt.Errorf("sasl.password_file: %s is empty", s.PasswordFile)
	}
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism: %q", s.Mechanism)
}
