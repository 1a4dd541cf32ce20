package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dta-go/dta/internal/config"
)

// helpCommands walks the command tree as `dta [path] --help` lists it and
// returns every command's path ("hawkeye sim") and short description. It
// leaves out cobra's help command (every command has --help) and does not
// descend into cobra's completion command (one row for it is enough).
func helpCommands(t *testing.T) map[string]string {
	t.Helper()
	got := map[string]string{}
	var walk func(path []string)
	walk = func(path []string) {
		code, out, errs := reportRun(t, nil, append(slices.Clone(path), "--help")...)
		if code != 0 {
			t.Fatalf("dta %s --help: exit %d: %s", strings.Join(path, " "), code, errs)
		}
		listing := false
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "Available Commands:":
				listing = true
				continue
			case !listing:
				continue
			case strings.TrimSpace(line) == "":
				listing = false
				continue
			}
			name, short, _ := strings.Cut(strings.TrimSpace(line), " ")
			if name == "help" {
				continue
			}
			sub := append(slices.Clone(path), name)
			got[strings.Join(sub, " ")] = strings.TrimSpace(short)
			if name != "completion" || len(path) > 0 {
				walk(sub)
			}
		}
	}
	walk(nil)
	return got
}

// readmeCommands returns the rows of README.md's table of commands:
// command path ("hawkeye sim") → what.
func readmeCommands(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no '## Commands' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `dta ([^`]+)` \\| (.+) \\|$")
	got := map[string]string{}
	for line := range strings.SplitSeq(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			got[m[1]] = m[2]
		}
	}
	if len(got) == 0 {
		t.Fatal("no rows in README.md's table of commands")
	}
	return got
}

func TestTheREADMETableOfCommandsIsWhatDTAHelpLists(t *testing.T) {
	cmds, rows := helpCommands(t), readmeCommands(t)
	if _, ok := cmds["completion"]; !ok {
		t.Fatal("dta --help lists no completion command: the walk of the help is broken")
	}
	for path, short := range cmds {
		what, ok := rows[path]
		switch {
		case !ok:
			t.Errorf("README.md's table of commands lacks `dta %s` (%s)", path, short)
		case what != short:
			t.Errorf("README.md says `dta %s` is %q; its help says %q", path, what, short)
		}
	}
	for path := range rows {
		if _, ok := cmds[path]; !ok {
			t.Errorf("README.md's table of commands lists `dta %s`, which dta --help does not", path)
		}
	}
}

func TestNoFlagUsageRepeatsTheDefaultHelpPrints(t *testing.T) {
	// --help appends ` (default X)` to a flag whose default is not its
	// type's zero value; a usage string that names a default as well says
	// it twice, or contradicts it.
	root := newRootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				// The flag alone with a usage that says nothing: what
				// --help adds to it is its default.
				bare := pflag.NewFlagSet("", pflag.ContinueOnError)
				bare.AddFlag(&pflag.Flag{Name: f.Name, Value: f.Value, DefValue: f.DefValue, Usage: "usage"})
				shown := strings.Contains(bare.FlagUsages(), " (default ")
				if shown && strings.Contains(strings.ToLower(f.Usage), "default") {
					one := pflag.NewFlagSet("", pflag.ContinueOnError)
					one.AddFlag(f)
					t.Errorf("%s --%s names a default in its usage and --help adds another: %s", c.CommandPath(), f.Name, strings.TrimSpace(one.FlagUsages()))
				}
			})
		}
	}
	walk(root)
}

func TestUpHelpNamesEveryEmbeddedStore(t *testing.T) {
	code, out, errs := reportRun(t, nil, "up", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	help := strings.Join(strings.Fields(out), " ") // line breaks as spaces
	_, defaults, _ := strings.Cut(help, "one default store per primitive, named after it (")
	defaults, _, _ = strings.Cut(defaults, ")")
	named := map[string]bool{}
	for _, n := range strings.Split(defaults, ", ") {
		named[n] = true
	}
	for _, s := range config.Default().Stores {
		switch {
		case s.Default && !named[s.Name]:
			t.Errorf("dta up --help does not name the default store %s (%s, id %d) among the default stores (%s)", s.Name, s.Primitive, s.ID, defaults)
		case !s.Default && named[s.Name]:
			t.Errorf("dta up --help names %s among the default stores; it is not one", s.Name)
		case !strings.Contains(help, s.Name):
			t.Errorf("dta up --help does not name the embedded store %s (%s, id %d)", s.Name, s.Primitive, s.ID)
		}
	}
}
