package requester

import (
	"testing"
	"time"
)

func TestTokenBucket(t *testing.T) {
	if newTokenBucket(0, 10, 0) != nil {
		t.Fatal("rate 0 should mean no bucket")
	}
	b := newTokenBucket(1000, 10, 0) // 1000/s, burst 10
	var waited time.Duration
	for range 10 {
		waited += b.take(1, 0)
	}
	if waited != 0 {
		t.Errorf("the burst waited %v", waited)
	}
	if d := b.take(1, 0); d < 900*time.Microsecond || d > 1100*time.Microsecond {
		t.Errorf("the 11th packet waits %v, want 1ms", d)
	}
	// After a second the bucket is full again, not fuller.
	if d := b.take(10, int64(time.Second)); d != 0 {
		t.Errorf("after a second, a burst waits %v", d)
	}
	if d := b.take(1, int64(time.Second)); d == 0 {
		t.Error("the bucket holds more than its burst")
	}
}

func TestTimeoutCode(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint8
	}{{0, 0}, {4096 * time.Nanosecond, 0}, {5 * time.Microsecond, 1}, {100 * time.Millisecond, 15}, {time.Hour, 30}, {100 * time.Hour, 31}} {
		if got := timeoutCode(c.d); got != c.want {
			t.Errorf("timeoutCode(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestThrottleLetsOneLinePerKeyAndIntervalThrough(t *testing.T) {
	var th throttle
	if ok, _ := th.allow(logNAK, 1); !ok {
		t.Fatal("the first line was suppressed")
	}
	for range 3 {
		if ok, _ := th.allow(logNAK, 2); ok {
			t.Fatal("a second line within the interval got through")
		}
	}
	if ok, _ := th.allow(logRecv, 2); !ok {
		t.Fatal("another key was throttled")
	}
	ok, sup := th.allow(logNAK, 1+int64(10*time.Second))
	if !ok || sup != 3 {
		t.Fatalf("after the interval: ok %v, %d suppressed, want 3", ok, sup)
	}
}

func TestConfigValidateNamesEveryBadField(t *testing.T) {
	if err := DefaultConfig().Validate(); err == nil {
		t.Fatal("a config without a collector validated")
	}
	c := DefaultConfig()
	c.Collector = netipMust("127.0.0.1:4791")
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.MTU, c.Window, c.Timeout, c.Local = 1000, 0, 0, "[::1]:0"
	err := c.Validate()
	for _, want := range []string{"Config.MTU", "Config.Window", "Config.Timeout", "different IP versions"} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
