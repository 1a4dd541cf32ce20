package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, nil)), 2, time.Second)
	base := int64(10 * time.Second)
	for i := range 100 {
		l.Log(0, base+int64(i), slog.LevelWarn, "drop")
	}
	if got := strings.Count(buf.String(), "drop"); got != 1 {
		t.Fatalf("a burst within one interval logged %d lines, want 1", got)
	}
	l.Log(1, base, slog.LevelWarn, "other")
	if !strings.Contains(buf.String(), "other") {
		t.Fatal("a second key was throttled by the first")
	}
	l.Log(0, base+int64(2*time.Second), slog.LevelWarn, "drop")
	if !strings.Contains(buf.String(), "suppressed=99") {
		t.Fatalf("the next line after the interval should count 99 suppressed lines:\n%s", buf.String())
	}
	if ok, _ := l.Allow(5, base); ok {
		t.Fatal("a key out of range was allowed")
	}
	if a := testing.AllocsPerRun(100, func() { l.Allow(0, base+int64(2*time.Second)+1) }); a != 0 {
		t.Fatalf("a suppressed Allow allocated %v times", a)
	}
}
