package decode

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ParseHex parses one datagram written in hex, as people paste it: spaces,
// tabs, colons and carriage returns are ignored, and so is a 0x prefix.
func ParseHex(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', ':', '\r':
			return -1
		}
		return r
	}, s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return nil, errors.New("no hex digits")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad hex: %w", err)
	}
	return b, nil
}
