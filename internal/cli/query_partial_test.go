package cli

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/dta-go/dta/partition"
)

// With a set of collectors one of which is down, a query of several keys
// prints the answers of the keys whose collector is up and fails (exit 1)
// naming the others, for every lookup that takes several keys.
func TestAQueryOfSeveralKeysAnswersThoseWhoseCollectorIsUp(t *testing.T) {
	cfg := smallConfig(t)
	var bases []string
	var stops []func()
	for range 2 {
		m, stop := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
		bases, stops = append(bases, m[2]), append(stops, stop)
	}
	stops[1]() // c2 is down
	pm, err := partition.New([]string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	var up, down []string
	for k := uint32(1); k <= 12; k++ {
		if pm.Owner(binary.BigEndian.AppendUint32(nil, k)) == 0 {
			up = append(up, strconv.Itoa(int(k)))
		} else {
			down = append(down, strconv.Itoa(int(k)))
		}
	}
	if len(up) == 0 || len(down) == 0 {
		t.Fatalf("keys 1..12: %d on c1, %d on c2", len(up), len(down))
	}
	servers := "c1=" + bases[0] + ",c2=" + bases[1]
	for _, cmd := range []string{"keywrite", "keyincrement", "postcard"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{"query", cmd, "--server", servers, "-o", "json"}
			for k := uint32(1); k <= 12; k++ {
				args = append(args, "--key", strconv.Itoa(int(k)))
			}
			var out, errOut strings.Builder
			code := Run(t.Context(), args, nil, &out, &errOut)
			if code != 1 {
				t.Errorf("exit %d, want 1 (some keys unanswered)\n%s", code, errOut.String())
			}
			for _, k := range up {
				if !strings.Contains(out.String(), `"key":"`+k+`"`) {
					t.Errorf("key %s, on c1 (up), not printed:\n%s", k, out.String())
				}
			}
			for _, k := range down {
				if strings.Contains(out.String(), `"key":"`+k+`"`) {
					t.Errorf("key %s, on c2 (down), printed:\n%s", k, out.String())
				}
			}
			msg := errOut.String()
			if !strings.Contains(msg, strconv.Itoa(len(down))+" of 12 keys not answered") || !strings.Contains(msg, strings.Join(down, ", ")) || !strings.Contains(msg, "c2") {
				t.Errorf("the error does not name c2's keys %v:\n%s", down, msg)
			}
		})
	}
}
