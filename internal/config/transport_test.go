package config

import (
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/transport/xdp"
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

// TestTransportSettings runs the same cases over translator.transport
// (the ingest's AF_XDP path) and collector.transport (the responder's),
// then each section's own; SECTION in a case's YAML is the section's name.
func TestTransportSettings(t *testing.T) {
	type tcase struct {
		name    string
		yaml    string
		wantErr string
		xdp     bool
		tx      int // TXFrames with xdp; -1: the section's default
	}
	shared := []tcase{
		{"the default transport is UDP", "", "", false, -1},
		{"transport xdp with an interface selects AF_XDP", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frame_size: 4096\n", "", true, -1},
		{"transport xdp without an interface names the key", "SECTION:\n  transport: xdp\n", "SECTION.xdp: interface", false, -1},
		{"an unknown transport is refused", "SECTION:\n  transport: dpdk\n", "SECTION.transport", false, -1},
		{"an unknown fallback is refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    fallback: tcp\n", "SECTION.xdp.fallback", false, -1},
		{"a ring that is not a power of two is refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    rx_ring: 1000\n", "SECTION.xdp: rx_ring", false, -1},
		{"UMEM frames that are not a power of two are refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frames: 1000\n", "SECTION.xdp: frames", false, -1},
		{"an unknown bind mode is refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    bind_mode: fast\n", "SECTION.xdp: bind_mode", false, -1},
		{"a pause longer than 1ms is refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    coalesce: 2ms\n", "SECTION.xdp: coalesce:", false, -1},
		{"a pause that may grow less than it starts is refused", "SECTION:\n  transport: xdp\n  xdp:\n    interface: eth0\n    coalesce: 200us\n    coalesce_max: 100us\n", "SECTION.xdp: coalesce_max", false, -1},
	}
	for _, sec := range []struct {
		name string
		own  []tcase
		xdp  func(*File) *xdp.Config
		tx   int           // TXFrames by default
		co   time.Duration // Coalesce by default
	}{
		{"translator", []tcase{
			{"the collector's transport leaves the translator's alone", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n", "", false, -1},
			{"tx_frames is a collector key", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n    tx_frames: 64\n", "translator.xdp.tx_frames", false, -1},
		}, func(f *File) *xdp.Config { return f.IngestConfig().XDP }, 0, 50 * time.Microsecond},
		{"collector", []tcase{
			{"port 0 cannot be steered", "collector:\n  rdma: 127.0.0.1:0\n  transport: xdp\n  xdp:\n    interface: eth0\n", "collector.rdma", false, -1},
			{"port 0 is fine without xdp", "collector:\n  rdma: 127.0.0.1:0\n", "", false, -1},
			{"the translator's transport leaves the responder's alone", "translator:\n  transport: xdp\n  xdp:\n    interface: eth0\n", "", false, -1},
			{"tx_frames 0 sends responses through the UDP socket", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frame_size: 4096\n    tx_frames: 0\n", "", true, 0},
			{"tx_frames sizes the TX ring", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    frame_size: 4096\n    tx_frames: 256\n", "", true, 256},
			{"tx_frames that are not a power of two are refused", "collector:\n  transport: xdp\n  xdp:\n    interface: eth0\n    tx_frames: 1000\n", "collector.xdp: tx_frames", false, -1},
		}, func(f *File) *xdp.Config {
			rc := f.ResponderConfig()
			if err := rc.Validate(); err != nil {
				t.Errorf("the responder's config does not validate: %v", err)
			}
			return rc.XDP
		}, rdma.DefaultXDPConfig("").TXFrames, 150 * time.Microsecond},
	} {
		for _, tc := range append(shared, sec.own...) {
			t.Run(sec.name+"/"+tc.name, func(t *testing.T) {
				f, err := Parse([]byte(strings.ReplaceAll(tc.yaml, "SECTION", sec.name)))
				if err == nil {
					err = f.Validate()
				}
				if want := strings.ReplaceAll(tc.wantErr, "SECTION", sec.name); want != "" {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("err = %v, want one naming %s", err, want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				x := sec.xdp(f)
				if (x != nil) != tc.xdp {
					t.Fatalf("%s AF_XDP config = %v, want set: %v", sec.name, x, tc.xdp)
				}
				tx := tc.tx
				if tx < 0 {
					tx = sec.tx
				}
				if tc.xdp && (x.Interface != "eth0" || x.FrameSize != 4096 || x.TXFrames != tx || x.Coalesce != sec.co) {
					t.Errorf("XDP config %+v, want interface eth0, frame size 4096, TXFrames %d, Coalesce %v", *x, tx, sec.co)
				}
			})
		}
	}
}
