package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// An Append reset through dta up's query API reaches the exporter: the
// entries written after it are exported under a new generation, so no
// (store, list, generation, index) names two different entries, although
// the list's indices start again at 0.
func TestAResetThroughTheQueryAPIStartsANewExportGeneration(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "dta.append", "dta.paths", "dta.changes"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	m, _ := startCmd(t, upExportReady, "up", "--config", exportConfig(t, cluster.ListenAddrs()), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	udp, base := m[1], m[2]
	send := func(values ...int) {
		for _, v := range values {
			args := []string{"report", "append", "--list", "1", "--value", strconv.Itoa(v), "--to", udp, "-q"}
			if code := Run(t.Context(), args, nil, &strings.Builder{}, &strings.Builder{}); code != 0 {
				t.Fatalf("dta %s: exit %d", strings.Join(args, " "), code)
			}
		}
	}
	send(1, 2, 3)
	kafkaRecords(t, cluster.ListenAddrs(), "dta.append", 3, 5*time.Second)
	if status, body := call(t, nil, "POST", base+"/v1/stores/append/append:reset", ""); status != 200 {
		t.Fatalf("reset: %d %s", status, body)
	}
	send(7, 8)
	recs := kafkaRecords(t, cluster.ListenAddrs(), "dta.append", 5, 5*time.Second)
	if len(recs) != 5 {
		t.Fatalf("%d Append records, want 5", len(recs))
	}
	names := map[string]string{}
	gens := map[string]bool{}
	for _, r := range recs {
		f := parseJSONRecord(t, r.Value)
		name := f["list"] + "/" + f["generation"] + "/" + f["index"]
		if prev, ok := names[name]; ok && prev != f["data"] {
			t.Errorf("list/generation/index %s names two entries: %s and %s", name, prev, f["data"])
		}
		names[name] = f["data"]
		gens[f["generation"]] = true
	}
	if len(gens) != 2 {
		t.Errorf("%d generations, want 2 (one before the reset, one after): %v", len(gens), gens)
	}
}
