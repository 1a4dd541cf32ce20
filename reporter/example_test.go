package reporter_test

import (
	"log"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// Send a few reports of every primitive to a translator on this machine.
func Example() {
	r, err := reporter.New(reporter.Config{To: "127.0.0.1:40040", Batch: 16}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	key, _ := dta.ParseKey("42")
	flow, _ := dta.ParseKey("tcp,10.0.0.1:5000,10.0.0.2:80")
	reports := []dta.Report{
		reporter.KeyWrite(key, []byte{0, 0, 0, 7}, 2, 0),      // compat Key-Write
		reporter.KeyIncrement(flow, 1500, 2, 0),               // extended: a 5-tuple key
		reporter.Append(3, []byte{0xde, 0xad, 0xbe, 0xef}, 0), // compat Append
		reporter.Postcard(flow, 1, 5, []byte{0, 1, 0, 1}, 0),  // extended: path length 5
	}
	for i := range reports {
		if err := r.Send(&reports[i], false); err != nil {
			log.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		log.Fatal(err)
	}
}

// Stream generated INT path-tracing reports at 10,000 reports/s, resending
// what the translator NACKs.
func ExampleGenerator() {
	g, err := reporter.NewGenerator(reporter.GenConfig{Kind: reporter.INTPath, Seed: 1, Store: 5})
	if err != nil {
		log.Fatal(err)
	}
	r, err := reporter.New(reporter.Config{Batch: 16, Rate: 10000, Retransmit: true}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	buf := make([]dta.Report, 64)
	for range 100 {
		g.Fill(buf)
		for i := range buf {
			if err := r.Send(&buf[i], false); err != nil {
				log.Fatal(err)
			}
		}
	}
}
