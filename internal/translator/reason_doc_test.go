package translator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryDropReasonIsInTheProtocolDocument keeps docs/PROTOCOL.md's table
// of drop reasons whole: an encoder written from it must be able to tell why
// a report was dropped.
func TestEveryDropReasonIsInTheProtocolDocument(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "PROTOCOL.md"))
	if err != nil {
		t.Fatal(err)
	}
	for r := range NumReasons {
		if !strings.Contains(string(doc), "| `"+r.String()+"` |") {
			t.Errorf("drop reason %q has no row in docs/PROTOCOL.md's table of drop reasons", r)
		}
	}
}
