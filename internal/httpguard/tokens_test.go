package httpguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	readTok  = "r3adR3adR3adR3ad-0123456789abcdef"
	adminTok = "adm1nAdm1nAdm1n.0123456789abcdef="
)

func TestTokenFilesParse(t *testing.T) {
	tk, err := ParseTokens([]byte("# dta tokens\r\n\n" + readTok + "   # grafana\r\n" + adminTok + " admin\n  0123456789abcdef0123456789abcdef read\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Len() != 3 {
		t.Fatalf("%d tokens", tk.Len())
	}
	for _, tc := range []struct {
		tok  string
		want Role
	}{
		{readTok, RoleRead},
		{adminTok, RoleAdmin},
		{"0123456789abcdef0123456789abcdef", RoleRead},
		{"", RoleNone},
		{readTok[:len(readTok)-1], RoleNone}, // a prefix of a token
		{readTok + "x", RoleNone},
		{strings.ToUpper(readTok), RoleNone},
	} {
		if got := tk.Lookup(tc.tok); got != tc.want {
			t.Errorf("Lookup(%q) = %v, want %v", tc.tok, got, tc.want)
		}
	}
	var none *Tokens
	if none.Lookup(readTok) != RoleNone || none.Len() != 0 {
		t.Error("a nil token set matched")
	}
}

func TestBadTokenFilesNameTheLineAndNotTheToken(t *testing.T) {
	secret := "s3cretS3cretS3cret"
	for _, tc := range []struct {
		name, file, want string
	}{
		{"no tokens", "# nothing\n\n", "no tokens"},
		{"a short token", "short\n", "line 1: the token is 5 characters, at least 16"},
		{"a bad character", "# x\n" + secret + "\"quote\n", "line 2: the token has a character outside"},
		{"padding inside a token", secret + "=x\n", "line 1: the token has a character outside"},
		{"an unknown role", secret + " root\n", `line 1: role "root"`},
		{"three fields", secret + " read extra\n", "line 1: 3 fields"},
		{"a token listed twice", secret + "\n" + readTok + "\n" + secret + " admin\n", "line 3: the same token as line 1"},
		{"a token too long", strings.Repeat("a", MaxTokenLen+1) + "\n", "at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
	if _, err := ParseTokens(make([]byte, MaxTokenFileBytes+1)); err == nil {
		t.Error("a file above MaxTokenFileBytes was accepted")
	}
}

func TestTokenFilesOthersCanReadOrWriteAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o640, true},
		{0o644, false},
		{0o604, false},
		{0o620, false},
		{0o602, false},
		{0o666, false},
	} {
		path := filepath.Join(dir, "tokens-"+tc.mode.String())
		if err := os.WriteFile(path, []byte(readTok+"\n"), tc.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, tc.mode) // past the umask
		_, err := LoadTokens(path)
		if (err == nil) != tc.ok {
			t.Errorf("mode %04o: err = %v, want ok=%v", tc.mode, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: the error does not say how to fix it: %v", tc.mode, err)
		}
	}
	if _, err := LoadTokens(dir); err == nil {
		t.Error("a directory was accepted as a token file")
	}
	if _, err := LoadTokens(filepath.Join(dir, "absent")); err == nil {
		t.Error("an absent file was accepted")
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(readTok + "\n" + adminTok + " admin\n# c\n"))
	f.Add([]byte("0123456789abcdef0123456789abcdef read # x\r\n"))
	f.Add([]byte("a=b=c=d=e=f=g=h=i=j\n"))
	f.Add([]byte("\n\n\n#\n"))
	f.Add([]byte("aaaaaaaaaaaaaaaa\naaaaaaaaaaaaaaaa\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := ParseTokens(b)
		if err != nil {
			return
		}
		// Every token of the file is found with its role, and the number
		// of tokens is the number of lines that carry one.
		n := 0
		for line := range strings.SplitSeq(string(b), "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			n++
			want := RoleRead
			if len(f) == 2 && f[1] == "admin" {
				want = RoleAdmin
			}
			if got := tk.Lookup(f[0]); got != want {
				t.Fatalf("token on a line of %q: role %v, want %v", b, got, want)
			}
		}
		if n != tk.Len() {
			t.Fatalf("%d token lines, %d tokens", n, tk.Len())
		}
	})
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf("token-%04d-0123456789abcdef", i))
		}
		tk, err := ParseTokens([]byte(strings.Join(lines, "\n")))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tk.Lookup("token-0000-0123456789abcdef")
			}
		})
	}
}
