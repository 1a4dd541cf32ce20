package tea_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
)

// A collector's mmap'd region is a Memory as it is: the table can live in
// one, and the engine can read it.
var _ tea.Memory = (*region.Region)(nil)

func TestATableInARegionIsFoundByTheEngine(t *testing.T) {
	spec := tea.Spec{Buckets: 128, Cells: 8, KeySize: 13, ValueSize: 6, Scratchpad: 64, Hash: tea.CRC64}
	r, err := region.New(region.Config{Size: spec.TableSize(), HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tab, err := tea.NewTable(spec, r, tea.DefaultTableConfig())
	if err != nil {
		t.Fatal(err)
	}
	ks := keys(700, 13, 21)
	for _, k := range ks {
		if err := tab.Insert(k, valueOf(k, 6)); err != nil {
			t.Fatal(err)
		}
	}
	checkTable(t, tab, r)
	p, _ := tea.PlaceEqual(spec, 1, 1)
	var bad int
	// A read answered after Timeout counts as lost (and with one server the
	// lookup fails): a second, not the 1 ms default, so that a descheduled
	// test goroutine on a loaded machine is not a lost read.
	eng, err := tea.New(tea.Config{Placement: p, Readers: []tea.Reader{tea.MemoryReader{Mem: r}}, Stash: tab.Stash(), Timeout: time.Second,
		Done: func(res *tea.Result) {
			if !res.Found || !bytes.Equal(res.Value, valueOf(res.Key, 6)) || res.Reads > 1 || string(res.Packet) != "pkt" {
				bad++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if err := eng.LookupPacket(k, []byte("pkt"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if bad != 0 {
		t.Errorf("%d of %d lookups wrong", bad, len(ks))
	}
}
