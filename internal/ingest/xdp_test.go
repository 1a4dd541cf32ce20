package ingest_test

import (
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/xdp"
)

func TestAnAFXDPSetupFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		addr     string
		fallback bool
		wantErr  string
	}{
		{"stops the ingest with the failed step named", "127.0.0.1:40040", false, `interface "nosuchdta9"`},
		{"stops the ingest when the port is not fixed", "127.0.0.1:0", false, "want a fixed port"},
		{"falls back to UDP sockets when asked to", "127.0.0.1:0", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := storetest.Open(t)
			tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := ingest.DefaultConfig()
			cfg.UDP.Addr, cfg.UDP.Readers, cfg.UDP.RecvBuffer, cfg.AckPort = tc.addr, 1, 1<<20, 0
			x := xdp.DefaultConfig()
			x.Interface = "nosuchdta9"
			cfg.XDP, cfg.XDPFallback = &x, tc.fallback
			in, err := ingest.New(cfg, tr, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if in.Listener() == nil || in.XDPListener() != nil || in.LocalAddr().Port() == 0 {
				t.Fatalf("fell back to %v (UDP listener %v, AF_XDP listener %v)", in.LocalAddr(), in.Listener(), in.XDPListener())
			}
		})
	}
}
