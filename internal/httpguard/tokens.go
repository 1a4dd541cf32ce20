package httpguard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Role is what a token may do.
type Role uint8

// Roles. An admin token may do everything a read token may.
const (
	RoleNone  Role = iota // no token matched
	RoleRead              // queries, /metrics, streams
	RoleAdmin             // also requests that change state (store resets)
)

// String returns the role's name as the token file spells it.
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// Bounds of a token file.
const (
	MaxTokenFileBytes = 1 << 20
	MaxTokens         = 10000
	MinTokenLen       = 16
	MaxTokenLen       = 4096
)

// Tokens is an immutable set of bearer tokens, each with a role. Only the
// SHA-256 of each token is kept.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum  [sha256.Size]byte
	role Role
}

// Len is the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Lookup returns the role of token (RoleNone when it matches none). It
// compares the token's SHA-256 with every stored one in constant time and
// never stops early, so its timing depends only on the number of tokens and
// the length of the presented token, never on which token (if any) matched.
func (t *Tokens) Lookup(token string) Role {
	if t == nil {
		return RoleNone
	}
	sum := sha256.Sum256([]byte(token))
	role := 0
	for i := range t.entries {
		e := &t.entries[i]
		eq := subtle.ConstantTimeCompare(sum[:], e.sum[:])
		role = subtle.ConstantTimeSelect(eq, int(e.role), role)
	}
	return Role(role)
}

// validTokenByte reports whether c may appear in a token: the b64token
// characters of RFC 6750 (A-Z a-z 0-9 - . _ ~ + / and trailing =).
func validTokenByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '='
}

// validToken checks a token's syntax: b64token characters, '=' only at the end.
func validToken(tok []byte) bool {
	if len(tok) == 0 {
		return false
	}
	pad := false
	for _, c := range tok {
		if !validTokenByte(c) || pad && c != '=' {
			return false
		}
		pad = pad || c == '='
	}
	return tok[0] != '='
}

// ParseTokens parses a token file:
//
//	# comments start with '#', anywhere on a line
//	TOKEN            a token with the read role
//	TOKEN read       the same, explicit
//	TOKEN admin      a token that may also change state (reset stores)
//
// A token is 16 to 4096 characters of A-Z a-z 0-9 - . _ ~ + / (RFC 6750's
// b64token, '=' padding allowed at the end); generate one with
// `openssl rand -hex 32`. A token listed twice, an unknown role, or a file
// without a token is an error. Errors name the line and never quote a token.
func ParseTokens(b []byte) (*Tokens, error) {
	if len(b) > MaxTokenFileBytes {
		return nil, fmt.Errorf("%d bytes, at most %d", len(b), MaxTokenFileBytes)
	}
	t := &Tokens{}
	first := map[[sha256.Size]byte]int{}
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("line %d: %d fields, want TOKEN [read|admin]", n, len(f))
		}
		tok := f[0]
		switch {
		case !validToken(tok):
			return nil, fmt.Errorf("line %d: the token has a character outside A-Z a-z 0-9 - . _ ~ + / (and = at its end)", n)
		case len(tok) < MinTokenLen:
			return nil, fmt.Errorf("line %d: the token is %d characters, at least %d (generate one with: openssl rand -hex 32)", n, len(tok), MinTokenLen)
		case len(tok) > MaxTokenLen:
			return nil, fmt.Errorf("line %d: the token is %d characters, at most %d", n, len(tok), MaxTokenLen)
		}
		role := RoleRead
		if len(f) == 2 {
			switch string(f[1]) {
			case "read":
			case "admin":
				role = RoleAdmin
			default:
				return nil, fmt.Errorf("line %d: role %q, want read or admin", n, shorten(f[1]))
			}
		}
		e := tokenEntry{sum: sha256.Sum256(tok), role: role}
		if prev, ok := first[e.sum]; ok {
			return nil, fmt.Errorf("line %d: the same token as line %d", n, prev)
		}
		if len(t.entries) == MaxTokens {
			return nil, fmt.Errorf("line %d: more than %d tokens", n, MaxTokens)
		}
		first[e.sum] = n
		t.entries = append(t.entries, e)
	}
	if len(t.entries) == 0 {
		return nil, errors.New("no tokens (one per line: TOKEN [read|admin])")
	}
	return t, nil
}

func shorten(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}

// LoadTokens reads and parses the token file at path. Like ssh with a
// private key, it refuses a file that others could read or that anyone but
// its owner could write (mode bits o+rwx or g+w): such a file gives away or
// lets others grant access. Group read is allowed (0640 for a service group).
func LoadTokens(path string) (*Tokens, error) {
	b, err := ReadSecret(path, MaxTokenFileBytes)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return t, nil
}

// ReadSecret reads a file holding secrets (a token file, a private key)
// after checking that others cannot read it and only its owner can write it
// (see LoadTokens), and that it is a regular file of at most maxBytes.
func ReadSecret(path string, maxBytes int64) ([]byte, error) {
	return readRegular(path, maxBytes, true)
}

// OpenNoWait opens path for reading without waiting: a FIFO with no writer
// would block open(2) forever (and a signal with it); O_NONBLOCK returns at
// once, and the caller's Stat then refuses what is not a regular file.
// Reads of a regular file are not affected by the flag.
func OpenNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// ReadRegular reads a regular file of at most maxBytes (a certificate, a
// configuration): a device, a FIFO or a directory is refused rather than
// read without end.
func ReadRegular(path string, maxBytes int64) ([]byte, error) {
	return readRegular(path, maxBytes, false)
}

func readRegular(path string, maxBytes int64, secret bool) ([]byte, error) {
	f, err := OpenNoWait(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); secret && perm&0o027 != 0 {
		return nil, fmt.Errorf("%s: permissions %04o are too open: others may read it or others than its owner write it; run chmod 600 %s (or 640 for a service group)", path, perm, path)
	}
	if fi.Size() > maxBytes {
		return nil, fmt.Errorf("%s: %d bytes, at most %d", path, fi.Size(), maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", path, maxBytes)
	}
	return b, nil
}
