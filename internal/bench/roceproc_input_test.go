package bench

import (
	"io"
	"strings"
	"testing"
)

func TestTheResponderProcessRefusesARequestLineWithoutEnd(t *testing.T) {
	err := ServeResponder(strings.NewReader(strings.Repeat("x", 2*maxRequestLine)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("a request of %d bytes without a newline: %v, want a refusal", 2*maxRequestLine, err)
	}
}
