package baseline_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/bench/baseline"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/wire/dta"
)

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func TestTheBaselineStoresWhatItReceives(t *testing.T) {
	cfg := baseline.Config{UDP: udp.DefaultConfig(), Keys: [dta.NumPrimitives]int{0, 1000, 0, 1000, 1000}, Lists: 4, Capacity: 8, EntrySize: 4}
	cfg.UDP.Addr, cfg.UDP.Readers, cfg.UDP.RecvBuffer = "127.0.0.1:0", 1, 1<<20
	c, err := baseline.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 1024), dta.Header{})
	reports := []dta.Report{
		{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(7), Value: be32(70)},
		{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(7), Value: be32(71)},
		{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(7), Delta: 5},
		{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(7), Delta: 6},
		{Opcode: dta.OpPostcard, Key: be32(9), Hop: 1, Value: be32(100)},
		{Opcode: dta.OpPostcard, Key: be32(9), Hop: 3, Value: be32(300)},
		{Opcode: dta.OpAppend, List: 2, Value: be32(1)},
		{Opcode: dta.OpAppend, List: 2, Value: be32(2)},
		{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 1, Key: bytes.Repeat([]byte{1}, 16), Value: be32(1)}, // key too long
		{Opcode: dta.OpAppend, List: 4, Value: be32(3)},                                                        // no such list
	}
	for i := range reports {
		if err := bw.Add(&reports[i]); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(c.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range [][]byte{bw.Bytes(), {0x09, 0, 0}} {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Datagrams < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}

	st := c.Stats()
	if st.Reports[dta.KeyWrite] != 2 || st.Reports[dta.KeyIncrement] != 2 || st.Reports[dta.Postcard] != 2 ||
		st.Reports[dta.Append] != 2 || st.Unsupported != 2 || st.Malformed != 1 {
		t.Fatalf("stats %+v", st)
	}
	if v, ok := c.Value(be32(7)); !ok || !bytes.Equal(v, be32(71)) {
		t.Errorf("value of key 7 = % X %v, want the last one written", v, ok)
	}
	if n := c.Counter(be32(7)); n != 11 {
		t.Errorf("counter of key 7 = %d, want 11", n)
	}
	if p := c.Path(be32(9)); !slices.Equal(p, []uint32{100, 0, 300}) {
		t.Errorf("path of flow 9 = %v", p)
	}
	if n, log := c.Log(2); n != 2 || !bytes.Equal(log, append(be32(1), be32(2)...)) {
		t.Errorf("log 2 = %d entries % X", n, log)
	}
}

func TestConfigIsValidated(t *testing.T) {
	good := baseline.Config{UDP: udp.DefaultConfig(), Keys: [dta.NumPrimitives]int{1: 10}, Lists: 1, Capacity: 4, EntrySize: 4}
	for _, mod := range []func(*baseline.Config){
		func(c *baseline.Config) { c.Keys[dta.KeyWrite] = -1 },
		func(c *baseline.Config) { c.Lists = 0 },
		func(c *baseline.Config) { c.EntrySize = 0 },
		func(c *baseline.Config) { c.Capacity = 0 },
		func(c *baseline.Config) { c.UDP.Readers = 0 },
	} {
		c := good
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
}
