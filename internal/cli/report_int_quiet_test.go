package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

func TestEveryReportSubcommandTakesQuiet(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasSubCommands() {
			return
		}
		if f := c.Flags().ShorthandLookup("q"); f == nil || f.Name != "quiet" {
			t.Errorf("%s has no -q/--quiet", c.CommandPath())
		}
	}
	walk(newReportCmd())
}

func TestReportINTQuietPrintsNothing(t *testing.T) {
	flow := "tcp,10.0.0.1:5000,10.0.0.2:80"
	tests := []struct {
		name string
		args []string
	}{
		{"an INT-MD report", []string{"md", "--flow", flow, "--switches", "11,22", "--latency", "100,200"}},
		{"an INT postcard", []string{"postcard", "--flow", flow, "--switch", "22", "--hop", "2", "--latency", "200"}},
		{"an INT drop report", []string{"drop", "--flow", flow, "--switch", "22", "--queue", "3", "--reason", "71"}},
		{"a generated INT stream", []string{"gen", "--count", "1", "--rate", "0"}},
	}
	for _, tt := range tests {
		for _, quiet := range []bool{false, true} {
			name := tt.name + " prints its line"
			if quiet {
				name = tt.name + " with -q is sent and prints nothing"
			}
			t.Run(name, func(t *testing.T) {
				s := newReportSink(t)
				args := append([]string{"report", "int"}, tt.args...)
				args = append(args, "--to", s.addr())
				if quiet {
					args = append(args, "-q")
				}
				code, out, errs := reportRun(t, nil, args...)
				if code != 0 || errs != "" {
					t.Fatalf("exit %d, stderr %q", code, errs)
				}
				s.next()
				if quiet != (out == "") {
					t.Errorf("stdout %q", out)
				}
			})
		}
	}
}
