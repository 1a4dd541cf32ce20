package config

import (
	"strings"
	"testing"
	"time"
)

func TestXDPPausesAreTakenFromTheFile(t *testing.T) {
	for _, tc := range []struct {
		name          string
		yaml          string
		coalesce, max time.Duration
	}{
		{"unset pauses keep the library's defaults", "", 50 * time.Microsecond, 500 * time.Microsecond},
		{"both pauses set", "    coalesce: 20us\n    coalesce_max: 2ms\n", 20 * time.Microsecond, 2 * time.Millisecond},
		{"zero pauses are kept, not defaulted", "    coalesce: 0s\n    coalesce_max: 0s\n", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte("translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n" + tc.yaml))
			if err == nil {
				err = f.Validate()
			}
			if err != nil {
				t.Fatal(err)
			}
			x := f.IngestConfig().XDP
			if x.Coalesce != tc.coalesce || x.CoalesceMax != tc.max {
				t.Errorf("coalesce %v, coalesce_max %v; want %v, %v", x.Coalesce, x.CoalesceMax, tc.coalesce, tc.max)
			}
		})
	}
}

func TestTransportSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		wantErr string
		xdp     bool
	}{
		{"the default transport is UDP", "", "", false},
		{"transport xdp with an interface selects AF_XDP", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n", "", true},
		{"transport xdp without an interface names the key", "translator:\n  transport: xdp\n", "Config.Interface", false},
		{"an unknown transport is refused", "translator:\n  transport: dpdk\n", "translator.transport", false},
		{"an unknown fallback is refused", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    fallback: tcp\n", "translator.xdp.fallback", false},
		{"a ring that is not a power of two is refused", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    rx_ring: 1000\n", "Config.RXRing", false},
		{"an unknown bind mode is refused", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    bind_mode: fast\n", "Config.BindMode", false},
		{"a pause longer than 1ms is refused", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    coalesce: 2ms\n", "Config.Coalesce", false},
		{"a pause that may grow less than it starts is refused", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    coalesce: 200us\n    coalesce_max: 100us\n", "Config.CoalesceMax", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml))
			if err == nil {
				err = f.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ic := f.IngestConfig()
			if (ic.XDP != nil) != tc.xdp {
				t.Fatalf("IngestConfig().XDP = %v, want set: %v", ic.XDP, tc.xdp)
			}
			if tc.xdp && (ic.XDP.Interface != "eth0" || ic.XDP.FrameSize != 2048) {
				t.Errorf("XDP config %+v", *ic.XDP)
			}
		})
	}
}

func TestCollectorTransportSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		wantErr string
		xdp     bool
	}{
		{"the responder takes UDP by default", "", "", false},
		{"transport xdp with an interface gives the responder an AF_XDP path", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frame_size: 4096\n", "", true},
		{"transport xdp without an interface names the key", "collector:\n  transport: xdp\n", "collector.xdp", false},
		{"an unknown transport is refused", "collector:\n  transport: dpdk\n", "collector.transport", false},
		{"an unknown fallback is refused", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    fallback: tcp\n", "collector.xdp.fallback", false},
		{"a ring that is not a power of two is refused", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frames: 1000\n", "Config.Frames", false},
		{"port 0 cannot be steered", "collector:\n  rdma: 127.0.0.1:0\n  transport: xdp\n  xdp:\n    interface: eth0\n", "collector.rdma", false},
		{"the translator's transport leaves the responder's alone", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml))
			if err == nil {
				err = f.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rc := f.ResponderConfig()
			if (rc.XDP != nil) != tc.xdp {
				t.Fatalf("ResponderConfig().XDP = %v, want set: %v", rc.XDP, tc.xdp)
			}
			if tc.xdp && (rc.XDP.Interface != "eth0" || rc.XDP.FrameSize != 4096) {
				t.Errorf("XDP config %+v", *rc.XDP)
			}
			if err := rc.Validate(); err != nil {
				t.Errorf("the responder's config does not validate: %v", err)
			}
		})
	}
}
