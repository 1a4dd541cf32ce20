package config

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/intreport"
)

// TranslatorINT is the INT input's socket (inline in translator:).
type TranslatorINT struct {
	// INTListen is the UDP address P4.org INT telemetry reports are
	// received on; "" (the default) turns INT input off.
	INTListen string `yaml:"int_listen"`
}

// INT maps INT telemetry reports onto stores (the int: section).
type INT struct {
	PathStore     string   `yaml:"path_store"`
	PostcardStore string   `yaml:"postcard_store"`
	CounterStore  string   `yaml:"counter_store"`
	DropStore     string   `yaml:"drop_store"`
	UDPPorts      []uint16 `yaml:"udp_ports"`
	DSCPMask      uint8    `yaml:"dscp_mask"`
	DSCPValue     uint8    `yaml:"dscp_value"`
	InitialTTLs   []uint8  `yaml:"initial_ttls"`
}

// INTMapperConfig is the INT mapper's configuration.
func (f *File) INTMapperConfig() intmap.Config {
	i := f.INT
	return intmap.Config{
		PathStore: i.PathStore, PostcardStore: i.PostcardStore, CounterStore: i.CounterStore, DropStore: i.DropStore,
		Detect:      intreport.Detect{UDPPorts: i.UDPPorts, DSCPMask: i.DSCPMask, DSCPValue: i.DSCPValue},
		InitialTTLs: i.InitialTTLs,
	}
}

// INTIngest returns the INT input of the ingest over descs (the
// translator's stores), or nil when translator.int_listen is not set.
func (f *File) INTIngest(descs []store.Descriptor) (*ingest.INTConfig, error) {
	if f.Translator.INTListen == "" {
		return nil, nil
	}
	m, err := intmap.New(f.INTMapperConfig(), descs)
	if err != nil {
		return nil, fmt.Errorf("int: %w", err)
	}
	u := f.IngestConfig().UDP
	u.Addr = f.Translator.INTListen
	return &ingest.INTConfig{UDP: u, Mapper: m}, nil
}

// validateINT checks the int: section against the stores (only when
// translator.int_listen is set: the stores may be left out otherwise).
func (f *File) validateINT() error {
	if f.INT.DSCPMask > 0x3F || f.INT.DSCPValue&^f.INT.DSCPMask != 0 {
		return fmt.Errorf("int.dscp_mask, int.dscp_value: %#x, %#x: want 6-bit values with the value inside the mask", f.INT.DSCPMask, f.INT.DSCPValue)
	}
	for i, p := range f.INT.UDPPorts {
		if p == 0 {
			return fmt.Errorf("int.udp_ports[%d]: 0 is no UDP port", i)
		}
	}
	for i, ttl := range f.INT.InitialTTLs {
		if ttl == 0 {
			return fmt.Errorf("int.initial_ttls[%d]: 0 is no initial TTL (hosts send with 64, 128 or 255)", i)
		}
	}
	if f.Translator.INTListen == "" {
		return nil
	}
	if err := sameUDPPort(f.Translator.INTListen, f.Translator.Listen); err != nil {
		return fmt.Errorf("translator.int_listen: %w", err)
	}
	descs, err := f.Descriptors()
	if err != nil {
		return err
	}
	if _, err := f.INTIngest(descs); err != nil {
		return err
	}
	return nil
}

// sameUDPPort refuses an INT listen address that would share DTA's UDP
// socket port, naming the key before any socket is opened (the second
// listener's bind would fail with "address already in use").
func sameUDPPort(intAddr, dtaAddr string) error {
	ih, ip, err := net.SplitHostPort(intAddr)
	if err != nil {
		return fmt.Errorf("%q: want host:port", intAddr)
	}
	dh, dp, err := net.SplitHostPort(dtaAddr)
	if err != nil || ip != dp || ip == "0" {
		return nil // translator.listen is checked on its own
	}
	any := func(h string) bool { a, err := netip.ParseAddr(h); return h == "" || (err == nil && a.IsUnspecified()) }
	if ih == dh || any(ih) || any(dh) {
		return fmt.Errorf("%q shares port %s with translator.listen %q: give INT reports a port of their own", intAddr, ip, dtaAddr)
	}
	return nil
}
