package cli

import (
	"os"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dta-go/dta/internal/config"
)

// The rules examples of README.md and docs/API.md add a store for the
// answers to the stores a user already has: added to the embedded defaults
// (dta up --print-config), each example loads (its store id and name clash
// with none of them, and its rule names a store that exists).
func TestTheRulesExamplesLoadWithTheDefaultStores(t *testing.T) {
	block := regexp.MustCompile("(?s)```yaml\n(stores:\n.*?slow-paths.*?)```")
	for _, doc := range []string{"../../README.md", "../../docs/API.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := block.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no yaml block with the slow-paths rule", doc)
		}
		var example, base map[string]any
		if err := yaml.Unmarshal(m[1], &example); err != nil {
			t.Fatalf("%s: the example is not YAML: %v", doc, err)
		}
		if err := yaml.Unmarshal(config.DefaultYAML(), &base); err != nil {
			t.Fatal(err)
		}
		base["stores"] = append(base["stores"].([]any), example["stores"].([]any)...)
		base["rules"] = example["rules"]
		merged, err := yaml.Marshal(base)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse(merged); err != nil {
			t.Errorf("%s: the rules example added to the default stores: %v", doc, err)
		}
	}
}
