package sock

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ErrHost reports a host part of a local address that is neither an IP
// address nor empty (ParseLocal).
var ErrHost = errors.New("host must be an IP address or empty")

// ErrPort reports a port part of a local address that is not a number from
// 0 to 65535 (ParseLocal).
var ErrPort = errors.New("port must be a number from 0 to 65535")

// ParseLocal checks a local address an end binds its socket to ("IP:port",
// "[IPv6]:port" or ":port", as [Listen] takes it) and returns its address
// (invalid when the host is empty: any local address) and its port (0: any
// free port, which a caller may refuse). It resolves no names.
func ParseLocal(s string) (netip.Addr, uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("%q: %w", s, err)
	}
	var a netip.Addr
	if host != "" {
		if a, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, 0, fmt.Errorf("%q: %w", s, ErrHost)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("%q: %w", s, ErrPort)
	}
	return a, uint16(p), nil
}
