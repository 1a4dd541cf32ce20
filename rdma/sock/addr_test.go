package sock

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseLocalTakesAnIPOrNothingAndAPort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		addr netip.Addr
		port uint16
		err  error // refused with this error (errors.Is)
		any  bool  // refused with any error
	}{
		{in: ":4791", port: 4791},
		{in: "127.0.0.1:0", addr: netip.MustParseAddr("127.0.0.1")},
		{in: "[::1]:65535", addr: netip.MustParseAddr("::1"), port: 65535},
		{in: "[fe80::1%eth0]:4791", addr: netip.MustParseAddr("fe80::1%eth0"), port: 4791},
		{in: "collector:4791", err: ErrHost},
		{in: ":65536", err: ErrPort},
		{in: ":http", err: ErrPort},
		{in: ":-1", err: ErrPort},
		{in: "4791", any: true},
		{in: "", any: true},
		{in: "1.2.3.4:5:6", any: true},
	} {
		a, p, err := ParseLocal(tc.in)
		switch {
		case tc.err == nil && !tc.any:
			if err != nil || a != tc.addr || p != tc.port {
				t.Errorf("ParseLocal(%q) = %v, %d, %v; want %v, %d, nil", tc.in, a, p, err, tc.addr, tc.port)
			}
		case tc.any:
			if err == nil {
				t.Errorf("ParseLocal(%q) accepted", tc.in)
			}
		default:
			if !errors.Is(err, tc.err) {
				t.Errorf("ParseLocal(%q) error %v, want %v", tc.in, err, tc.err)
			}
		}
	}
}
