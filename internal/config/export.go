package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/dta-go/dta/internal/export"
	"github.com/dta-go/dta/internal/store"
)

// Export is the export: section: what goes to Kafka, and how.
type Export struct {
	// Brokers are the Kafka seed brokers (host:port); none: export off.
	Brokers         []string       `yaml:"brokers"`
	ClientID        string         `yaml:"client_id"`
	Collector       string         `yaml:"collector"`
	Format          string         `yaml:"format"`
	Compression     string         `yaml:"compression"`
	Topics          ExportTopics   `yaml:"topics"`
	Stores          []string       `yaml:"stores"`
	MaxInFlight     int            `yaml:"max_in_flight"`
	PathQueue       int            `yaml:"path_queue"`
	PollInterval    time.Duration  `yaml:"poll_interval"`
	ChangesInterval time.Duration  `yaml:"changes_interval"`
	MaxShadowBytes  store.ByteSize `yaml:"max_shadow_bytes"`
	Start           string         `yaml:"start"`
	Linger          time.Duration  `yaml:"linger"`
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout"`
	CreateTopics    bool           `yaml:"create_topics"`
	TLS             ExportTLS      `yaml:"tls"`
	SASL            ExportSASL     `yaml:"sasl"`
}

// ExportTopics names the topic of each stream ("" turns it off).
type ExportTopics struct {
	Append  string `yaml:"append"`
	Paths   string `yaml:"paths"`
	Changes string `yaml:"changes"`
}

// ExportTLS is the TLS towards the brokers.
type ExportTLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// ExportSASL is the SASL authentication towards the brokers.
type ExportSASL struct {
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
}

// ExportCursorFile is the name of the Append cursor file in data_dir.
const ExportCursorFile = "export-cursors.json"

// ExportConfig is the exporter's configuration, or nil when export.brokers
// is empty (export off). The changes interval defaults to the checkpoint
// interval; the cursors are kept in data_dir when it is set.
func (f *File) ExportConfig() *export.Config {
	x := f.Export
	if len(x.Brokers) == 0 {
		return nil
	}
	c := &export.Config{
		Brokers: x.Brokers, ClientID: x.ClientID, Collector: x.Collector, Format: export.Format(x.Format),
		Compression: x.Compression,
		Topics:      export.Topics{Append: x.Topics.Append, Paths: x.Topics.Paths, Changes: x.Topics.Changes},
		Stores:      x.Stores, MaxInFlight: x.MaxInFlight, PathQueue: x.PathQueue, PollInterval: x.PollInterval,
		ChangesInterval: x.ChangesInterval, MaxShadowBytes: uint64(x.MaxShadowBytes), StartLatest: x.Start == "latest",
		Linger: x.Linger, ShutdownTimeout: x.ShutdownTimeout, CreateTopics: x.CreateTopics,
		TLS: export.TLSConfig{Enabled: x.TLS.Enabled, CAFile: x.TLS.CAFile, CertFile: x.TLS.CertFile, KeyFile: x.TLS.KeyFile,
			ServerName: x.TLS.ServerName, InsecureSkipVerify: x.TLS.InsecureSkipVerify},
		SASL: export.SASLConfig{Mechanism: x.SASL.Mechanism, Username: x.SASL.Username, PasswordFile: x.SASL.PasswordFile},
	}
	if c.ChangesInterval == 0 {
		c.ChangesInterval = f.Collector.CheckpointInterval
	}
	if d := f.Collector.DataDir; d != "" {
		c.CursorFile = filepath.Join(d, ExportCursorFile)
	}
	c.Defaults()
	return c
}

// validateExport checks the export: section: its values always, its files
// and stores when brokers are set.
func (f *File) validateExport() error {
	if s := f.Export.Start; s != "earliest" && s != "latest" {
		return fmt.Errorf("export.start: %q (want earliest or latest)", s)
	}
	c := f.ExportConfig()
	if c == nil {
		// No brokers yet (--export-brokers may give them): the other
		// values are still checked now, when the file is read.
		g := *f
		g.Export.Brokers = []string{"brokers.example:9092"}
		if err := g.ExportConfig().Validate(); err != nil {
			return fmt.Errorf("export.%w", err)
		}
		return nil
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("export.%w", err)
	}
	if err := c.CheckFiles(); err != nil {
		return fmt.Errorf("export.%w", err)
	}
	for _, name := range c.Stores {
		found := false
		for _, s := range f.Stores {
			found = found || s.Name == name
			if s.Name == name && s.Primitive == "sketchmerge" {
				return fmt.Errorf("export.stores: %q is a Sketch-Merge store, which no export stream carries (Append entries, Postcarding paths, changed Key-Write and Key-Increment slots)", name)
			}
		}
		if !found {
			return fmt.Errorf("export.stores: %q is not a configured store", name)
		}
	}
	return nil
}
