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

	"github.com/dta-go/dta/wire/dta"
)

// runDemo sends a steady mix of reports of every primitive to addr until ctx
// is done: Key-Write key i → value 1000+i, Key-Increment over 16 hosts,
// 5-hop postcards for flow i, and Append entries over 4 lists.
func runDemo(ctx context.Context, addr netip.AddrPort, rate float64, out io.Writer, logger *slog.Logger) error {
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
		"          dta query append --list 1 --follow\n", rate)
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
	}
}
