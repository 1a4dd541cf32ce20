package requester

import (
	"net/netip"
	"strings"
)

func netipMust(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
