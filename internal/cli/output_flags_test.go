package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutputFileRefusesWhatCannotBeCreated(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.json")
	if err := os.WriteFile(existing, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string // in the error; "" : none
	}{
		{"a flag not given passes", "", ""},
		{"a new file in an existing directory passes", filepath.Join(dir, "new.json"), ""},
		{"an existing file passes (it is overwritten)", existing, ""},
		{"a device such as /dev/null passes", os.DevNull, ""},
		{"a directory is refused", dir, "is a directory"},
		{"a file in a directory that does not exist is refused", filepath.Join(dir, "missing", "x.json"), "its directory does not exist"},
		{"a file under a regular file is refused", filepath.Join(existing, "x.json"), "its directory does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOutputFile("json", tt.path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var ee *exitError
			if err == nil || !errors.As(err, &ee) || ee.code != 2 || !strings.HasPrefix(err.Error(), "--json: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want a usage error (exit 2) naming --json and saying %q", err, tt.want)
			}
			if _, err := os.Stat(tt.path); tt.path != dir && err == nil {
				t.Errorf("%s was created", tt.path)
			}
		})
	}
}

func TestEveryOutputFileFlagIsCheckedBeforeAnyWork(t *testing.T) {
	// Each command is given what would make its work fail otherwise (a
	// collector that does not answer) or take time, so that an exit 2
	// naming the output flag shows the flag was checked first.
	bad := filepath.Join(t.TempDir(), "missing")
	nowhere := []string{"--to", "127.0.0.1:1", "--server", "http://127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		flag string
	}{
		{"hawkeye sim --svg", append([]string{"hawkeye", "sim", "--scenario", "incast", "--svg", bad + "/x.svg"}, nowhere...), "--svg"},
		{"hawkeye graph --svg", append([]string{"hawkeye", "graph", "--scenario", "incast", "--svg", bad + "/x.svg"}, nowhere...), "--svg"},
		{"tea load --out", []string{"tea", "load", "--gen", "1K", "--out", bad + "/x.tea"}, "--out"},
		{"simulate --plot", []string{"simulate", "--keys", "1M", "--plot", bad + "/x.svg"}, "--plot"},
		{"bench --json", []string{"bench", "--json", bad + "/x.json"}, "--json"},
		{"bench --cpuprofile", []string{"bench", "--cpuprofile", bad + "/cpu.out"}, "--cpuprofile"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" in a directory that does not exist is a usage error naming the flag", func(t *testing.T) {
			code, out, errs := reportRun(t, nil, tt.args...)
			if code != 2 || !strings.Contains(errs, "dta: "+tt.flag+": ") || !strings.Contains(errs, "its directory does not exist") {
				t.Errorf("dta %s: exit %d, stderr %q; want 2 and an error naming %s", strings.Join(tt.args, " "), code, errs, tt.flag)
			}
			if out != "" {
				t.Errorf("stdout %q: work was done before the check", out)
			}
		})
	}
}
