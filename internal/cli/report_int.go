package cli

import (
	"fmt"
	"math"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/intreport"
)

// defaultINTTo is where `dta report int` sends by default: the int_listen
// the docs use.
const defaultINTTo = "127.0.0.1:32766"

func newReportINTCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "int md|postcard|drop|gen",
		Short: "Send P4.org INT telemetry reports (v2.0) to a translator's int_listen",
		Long: `int sends P4.org Telemetry Reports v2.0 (docs/INTEGRATIONS.md), as an INT
sink or INT-XD/MX node would, to a translator that listens for them
(translator.int_listen):

  md        the last hop's report of a packet: its own hop latency and queue,
            and an INT-MD stack with the hops before it (node id, hop latency,
            queue), in a truncated IPv4 packet whose INT rides in a new UDP
            header to port 5000 (INT_TBD), as the INT v2.1 example does
  postcard  one node's own report of a packet without a stack (INT-XD/MX);
            the packet's TTL (64 - hop + 1) gives its hop
  drop      a drop report: D flag, queue and drop reason
  gen       a generated stream of them over a simulated fat tree`,
		Example: `  dta up --config int.yaml      # translator.int_listen: ":32766"
  dta report int md --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switches 11,22,33 --latency 100,200,300
  dta report int postcard --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switch 22 --hop 2 --latency 200
  dta report int drop --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switch 22 --queue 3 --reason 71
  dta report int gen --mix mixed --rate 10000 --count 100000`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newReportINTOneCmd("md"), newReportINTOneCmd("postcard"), newReportINTOneCmd("drop"), newReportINTGenCmd())
	return cmd
}

func sendINT(to string, pkts ...[]byte) error {
	c, err := net.Dial("udp", to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer c.Close()
	for _, p := range pkts {
		if _, err := c.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func newReportINTOneCmd(kind string) *cobra.Command {
	var (
		to, flowS      string
		switches, lat  []uint
		node, hop      uint32
		queue, reason  uint8
		occupancy, seq uint32
		latency1       uint32
		quiet          bool
	)
	short := map[string]string{
		"md":       "An INT sink's report with the INT-MD stack of the hops before it",
		"postcard": "One node's own report of a packet (INT-XD/MX), the hop given by the TTL",
		"drop":     "A drop report from a node: queue and drop reason",
	}[kind]
	example := map[string]string{
		"md":       "  dta report int md --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switches 11,22,33 --latency 100,200,300 --queue 3 --occupancy 40",
		"postcard": "  dta report int postcard --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switch 22 --hop 2 --latency 200",
		"drop":     "  dta report int drop --flow tcp,10.0.0.1:5000,10.0.0.2:80 --switch 22 --queue 3 --reason 71",
	}[kind]
	cmd := &cobra.Command{
		Use:     kind,
		Short:   short,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkHostPort("to", to); err != nil {
				return err
			}
			ft, err := parseFlow(flowS)
			if err != nil {
				return err
			}
			fl := intreport.Flow{Src: ft.Src, Dst: ft.Dst, SrcPort: ft.SrcPort, DstPort: ft.DstPort, Proto: ft.Proto}
			p := intreport.Packet{Flow: fl, TTL: reporter.INTInitialTTL}
			r := intreport.Report{Type: intreport.RepINT, Inner: intreport.InIPv4, Tracked: true}
			if ft.Src.Is6() && !ft.Src.Is4In6() {
				r.Inner = intreport.InIPv6
			}
			var from uint32
			switch kind {
			case "md":
				if len(switches) < 1 || len(lat) != len(switches) {
					return usageError("--switches and --latency: give one latency per switch, first hop first")
				}
				if len(switches) > 9 {
					return usageError("--switches: %d, want at most 9 (the sink and the 8 hops its INT-MD stack holds)", len(switches))
				}
				for i := range switches {
					if switches[i] > math.MaxUint32 {
						return usageError("--switches: %d is not a 32-bit node id", switches[i])
					}
					if lat[i] > math.MaxUint32 {
						return usageError("--latency: %d is not a 32-bit hop latency", lat[i])
					}
				}
				for i := len(switches) - 2; i >= 0; i-- {
					p.Hops = append(p.Hops, intreport.Metadata{NodeID: uint32(switches[i]), HopLatency: uint32(lat[i]), QueueID: queue, QueueOccupancy: occupancy})
				}
				p.INT = &intreport.MDHeader{HopML: 3, RemainingHops: uint8(8 - len(p.Hops)), Instructions: reporter.INTInstructions}
				p.INTPort = reporter.INTPort
				p.TTL = uint8(reporter.INTInitialTTL - len(switches) + 1)
				from = uint32(switches[len(switches)-1])
				r.Metadata = intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency) | intreport.Mask(intreport.BitQueue),
					HopLatency: uint32(lat[len(lat)-1]), QueueID: queue, QueueOccupancy: occupancy}
			case "postcard":
				if hop < 1 || hop > reporter.INTInitialTTL {
					return usageError("--hop: %d, want 1 to %d", hop, reporter.INTInitialTTL)
				}
				p.TTL = uint8(reporter.INTInitialTTL - hop + 1)
				from = node
				r.Metadata = intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency) | intreport.Mask(intreport.BitQueue),
					HopLatency: latency1, QueueID: queue, QueueOccupancy: occupancy}
			case "drop":
				from, r.Dropped = node, true
				r.Metadata = intreport.Metadata{Bits: intreport.Mask(intreport.BitDrop), DropQueueID: queue, DropReason: reason}
			}
			if r.Contents, err = intreport.AppendPacket(nil, &p); err != nil {
				return usageError("%v", err)
			}
			pkt := intreport.GroupHeader{NodeID: from, Seq: seq}.AppendTo(nil)
			if pkt, err = intreport.AppendReport(pkt, &r); err != nil {
				return usageError("%v", err)
			}
			if err := sendINT(to, pkt); err != nil {
				return err
			}
			if quiet {
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sent INT %s report from node %d for %s to %s (%d bytes)\n", kind, from, ft, to, len(pkt))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", defaultINTTo, "the translator's int_listen `host:port`")
	f.StringVar(&flowS, "flow", "", "the packet's flow, PROTO,SRC:PORT,DST:PORT")
	f.Uint32Var(&seq, "seq", 1, "the group header's sequence number")
	f.Uint8Var(&queue, "queue", 0, "queue id")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	switch kind {
	case "md":
		f.UintSliceVar(&switches, "switches", nil, "node ids of the path, first hop first; the last one sends the report")
		f.UintSliceVar(&lat, "latency", nil, "hop latency of each switch")
		f.Uint32Var(&occupancy, "occupancy", 0, "queue occupancy at every hop")
	case "postcard":
		f.Uint32Var(&node, "switch", 0, "the reporting node id")
		f.Uint32Var(&hop, "hop", 1, "the node's hop on the path (the TTL is 64 - hop + 1)")
		f.Uint32Var(&latency1, "latency", 0, "its hop latency")
		f.Uint32Var(&occupancy, "occupancy", 0, "its queue occupancy")
	case "drop":
		f.Uint32Var(&node, "switch", 0, "the reporting node id")
		f.Uint8Var(&reason, "reason", 0, "the drop reason code")
	}
	return cmd
}

func newReportINTGenCmd() *cobra.Command {
	var (
		to, mixS string
		rate     float64
		count    int64
		seed     uint64
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Send a generated stream of INT telemetry reports",
		Long: `gen sends a deterministic stream of telemetry report packets over the
simulated k=16 fat tree of 'dta report gen': md (sinks' reports with INT-MD
stacks), postcards (one report per hop), drops, or mixed (md with 1 % drops).
One switch is congested: its hop latencies and queue occupancies are high and
drops cluster on it.`,
		Example: "  dta report int gen --mix mixed --rate 10000 --count 100000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mix, err := reporter.ParseINTMix(mixS)
			if err != nil {
				return usageError("--mix: %v", err)
			}
			if rate != 0 && !(rate >= reporter.MinRate && rate <= reporter.MaxRate) { // NaN fails both
				return usageError("--rate: %v, want 0 (unlimited) or %g to %g packets/s", rate, reporter.MinRate, reporter.MaxRate)
			}
			if count < 0 {
				return usageError("--count: %d, want 0 (until interrupted) or more", count)
			}
			if err := checkHostPort("to", to); err != nil {
				return err
			}
			g, err := reporter.NewINTGenerator(reporter.GenConfig{Seed: seed}, mix)
			if err != nil {
				return usageError("%v", err)
			}
			c, err := net.Dial("udp", to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			defer c.Close()
			ctx := cmd.Context()
			start := time.Now()
			var sent int64
			for count == 0 || sent < count {
				if ctx.Err() != nil {
					break
				}
				if rate > 0 {
					if ahead := time.Duration(float64(sent)/rate*1e9) - time.Since(start); ahead > 0 {
						select { // a signal ends the wait
						case <-time.After(ahead):
						case <-ctx.Done():
						}
					}
				}
				if _, err := c.Write(g.Next()); err != nil {
					return err
				}
				sent++
			}
			if quiet {
				return nil
			}
			el := time.Since(start)
			fmt.Fprintf(cmd.OutOrStdout(), "sent %d INT telemetry report packets (%s) to %s in %v (%.0f/s)\n", sent, mixS, to, el.Round(time.Millisecond), float64(sent)/el.Seconds())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", defaultINTTo, "the translator's int_listen `host:port`")
	f.StringVar(&mixS, "mix", "mixed", "md, postcards, drops or mixed")
	f.Float64Var(&rate, "rate", 10000, "packets per second, 0.001 to 1e12 (0 = as fast as possible)")
	f.Int64Var(&count, "count", 100000, "packets to send (0 = until interrupted)")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	return cmd
}
