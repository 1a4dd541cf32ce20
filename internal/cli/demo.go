package cli

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// demoEpoch is the demo's Sketch-Merge epoch length.
const demoEpoch = 2 * time.Second

// runDemo sends a steady mix of reports of every primitive to addr until ctx
// is done: Key-Write key i → value 1000+i, Key-Increment over 16 hosts,
// 5-hop postcards for flow i, Append entries over 4 lists and, with a
// Sketch-Merge store of geometry sk (nil: none), a sketch of 64 flows with a
// skew (flow 0 the heaviest) flushed every demoEpoch.
func runDemo(ctx context.Context, addr netip.AddrPort, rate float64, sk *sketch.Geometry, out io.Writer, logger *slog.Logger) error {
	if addr.Addr().IsUnspecified() {
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), addr.Port())
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return fmt.Errorf("demo reporter: %w", err)
	}
	defer conn.Close()
	fmt.Fprintf(out, "demo:   sending %.0f reports/s of every primitive; look with\n"+
		"          dta query keywrite --key 7\n"+
		"          dta query keyincrement --key 3\n"+
		"          dta query postcard --key 7\n"+
		"          dta query append --list 1 --follow\n"+
		"          dta query sketchmerge topk --k 3 --key 0 --key 1 --key 2 --key 7   # after two epochs of %v\n", rate, demoEpoch)
	var local *sketch.Sketch
	if sk != nil {
		local, _ = sketch.New(*sk)
	}
	epochStart := time.Now()
	epoch := uint32(time.Now().Unix() / int64(demoEpoch/time.Second))
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate * 8))
	defer tick.Stop()
	buf := make([]byte, 0, 64)
	var key, val [4]byte
	send := func(r *dta.Report) {
		b, err := dta.AppendDatagram(buf[:0], dta.Header{}, r)
		if err != nil {
			logger.Error("demo report", "err", err)
			return
		}
		_, _ = conn.Write(b)
	}
	for i := uint32(0); ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		binary.BigEndian.PutUint32(key[:], i)
		binary.BigEndian.PutUint32(val[:], 1000+i)
		send(&dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key[:], Value: val[:]})
		binary.BigEndian.PutUint32(key[:], i%16)
		send(&dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 4, Key: key[:], Delta: 1})
		binary.BigEndian.PutUint32(key[:], i)
		for hop := uint8(1); hop <= 5; hop++ {
			binary.BigEndian.PutUint32(val[:], 100*uint32(hop)+i%100)
			send(&dta.Report{Opcode: dta.OpPostcard, Key: key[:], Hop: hop, Value: val[:]})
		}
		binary.BigEndian.PutUint32(val[:], i)
		send(&dta.Report{Opcode: dta.OpAppend, List: i % 4, Value: val[:]})
		if local == nil {
			continue
		}
		binary.BigEndian.PutUint32(key[:], (i*i)%64%(1+i%64)) // small flows far more often
		local.Update(key[:], 1)
		if time.Since(epochStart) >= demoEpoch {
			flushDemoSketch(local, epoch, send)
			local.Reset()
			epoch++
			epochStart = time.Now()
		}
	}
}

// flushDemoSketch sends sk as epoch e in runs of up to 64 counters.
func flushDemoSketch(sk *sketch.Sketch, e uint32, send func(*dta.Report)) {
	v := make([]byte, 0, 64*8)
	_ = sk.Runs(64, func(r sketch.Run) error {
		v = v[:0]
		for _, c := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		send(&dta.Report{Opcode: dta.OpSketchExt, Epoch: e, Row: uint8(r.Row), Column: uint32(r.Column), Value: v})
		return nil
	})
}
