package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/roce"
)

// dta decode: flags, input and printing. Decoding and describing DTA and
// RoCEv2 packets is internal/decode's job.

type decodeOptions struct {
	pcap     string
	legacy   bool
	output   string
	port     uint16
	roce     bool // hex input is RoCEv2
	ip       bool // with roce: hex input is a whole IP datagram
	rocePort uint16
}

func newDecodeCmd() *cobra.Command {
	o := &decodeOptions{}
	cmd := &cobra.Command{
		Use:   "decode [--roce [--ip]] [HEX...] | --pcap FILE",
		Short: "Decode DTA datagrams and RoCEv2 packets (hex or a pcap/pcapng capture)",
		Long: `decode prints every field of every report in DTA datagrams (docs/PROTOCOL.md),
and every header of RoCEv2 packets (the translator-collector RDMA traffic).

Input, one of:
  HEX...        each argument is one datagram's UDP payload in hex (spaces,
                colons and a 0x prefix are ignored)
  (nothing)     the same, one datagram per line on stdin (# starts a comment)
  --pcap FILE   a capture (pcap or pcapng; "-" reads stdin) of Ethernet, Linux
                cooked, raw IP or loopback frames: every IPv4/IPv6 UDP datagram
                to port --port (reports) or to port 40044 (ACK/NACK) is decoded,
                and 2-byte datagrams from port --port (a translator's ACKs);
                datagrams to or from port --roce-port (4791) are decoded as
                RoCEv2; other packets are skipped

A 2-byte datagram is an ACK/NACK; anything else a report datagram with the
3-byte base header (--legacy: the prototype's 2-byte header).

RoCEv2: --roce reads hex input as RoCEv2 packets (UDP payload: BTH through
ICRC), whose ICRC cannot be checked without the IP header ("icrc: not checked
(no IP header)"); --roce --ip reads whole IPv4/IPv6 packets instead and checks
it. In a capture the ICRC is checked against the captured IP and UDP headers.
Each packet prints its BTH, the headers its opcode carries (reth, atomic_eth,
aeth, atomic_ack_eth, imm_dt, deth), its payload, the CM message of a UD SEND
to QP1 (private_data counts the bytes up to the last non-zero one) and
"icrc: ok", "bad" or "not checked". ICRC values are the trailer's 4 bytes in
wire order, as tshark shows them.

-o json prints one JSON object per datagram: "type" is "report" or "ack"
(every field present) or "roce" (the headers its opcode carries). A datagram
that does not decode prints an error and decoding goes on with the next one.
The exit code is 1 when some datagram did not decode or some RoCEv2 packet
has a bad ICRC.`,
		Example: `  dta decode 01010002000000010000002a
  dta decode "20 07 40 02  01 0009 02 00000001 0000002a  03 000d 04 00000009 0000000000000001"
  echo 0x0105 | dta decode
  dta decode --pcap dta.pcap
  dta decode --pcap dta.pcapng -o json | jq .reports
  tcpdump -i any -w - udp port 40040 | dta decode --pcap -
  tcpdump -i any -w - udp port 4791 | dta decode --pcap -
  dta decode --roce "1100ffff 00000011 00000100  1f000005  e35a05df"   # an ACK, MSN 5
  dta decode --roce --ip "4500003000004000401126bb0a0000020a000001  12b712b7001c0000  1100ffff0000001100000100 1f000005 e35a05df"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return usageError("-o: %q is not text or json", o.output)
			}
			if o.port == 0 {
				return usageError("--port: must be 1 to 65535")
			}
			if o.rocePort == 0 {
				return usageError("--roce-port: must be 1 to 65535")
			}
			if o.ip && !o.roce {
				return usageError("--ip: give --roce too (--roce --ip reads whole IP packets carrying RoCEv2)")
			}
			if o.pcap == "" {
				for _, f := range []string{"port", "roce-port"} {
					if cmd.Flags().Changed(f) {
						return usageError("--%s applies to --pcap (hex input says what it is with --roce)", f)
					}
				}
			}
			if o.legacy && o.roce {
				return usageError("--legacy applies to DTA reports; --roce hex input is RoCEv2")
			}
			p := &decodePrinter{w: cmd.OutOrStdout(), json: o.output == "json", dec: decode.Decoder{Legacy: o.legacy, Port: o.port, RoCEPort: o.rocePort}, hexRoCE: o.roce, hexIP: o.ip}
			var err error
			switch {
			case o.pcap == "" && cmd.Flags().Changed("pcap"):
				return usageError("--pcap: empty file name (- reads a capture from stdin)")
			case o.pcap != "" && len(args) > 0:
				return usageError("decode: give hex arguments or --pcap, not both")
			case o.pcap != "" && o.roce:
				return usageError("decode: --roce reads hex input; in a capture RoCEv2 is found by its UDP port (--roce-port)")
			case o.pcap != "":
				err = untilDone(cmd.Context(), func() error { return decodeCapture(cmd, o, p) })
			case len(args) > 0:
				for i, a := range args {
					b, herr := decode.ParseHex(a)
					if herr != nil {
						return usageError("argument %d: %v", i+1, herr)
					}
					if err = p.hexDatagram(i+1, b); err != nil {
						break
					}
				}
			default:
				in := ctxReader{cmd.Context(), cmd.InOrStdin()}
				err = untilDone(cmd.Context(), func() error { return decodeHexLines(in, p) })
			}
			if err != nil {
				return err
			}
			return p.verdict()
		},
	}
	cmd.SetFlagErrorFunc(flagUsageError)
	fl := cmd.Flags()
	fl.StringVar(&o.pcap, "pcap", "", "read a pcap or pcapng capture `FILE` (- = stdin)")
	fl.BoolVar(&o.legacy, "legacy", false, "reports use the prototype's 2-byte base header")
	fl.StringVarP(&o.output, "output", "o", "text", "output `format`: text or json")
	fl.Uint16Var(&o.port, "port", dta.Port, "UDP `port` of reports in a capture")
	fl.BoolVar(&o.roce, "roce", false, "hex input is RoCEv2 packets (UDP payload: BTH through ICRC)")
	fl.BoolVar(&o.ip, "ip", false, "with --roce: hex input is whole IPv4/IPv6 packets, so the ICRC is checked")
	fl.Uint16Var(&o.rocePort, "roce-port", roce.Port, "UDP `port` of RoCEv2 packets in a capture (either end)")
	return cmd
}

// decodeHexLines decodes one hex datagram per line of r.
func decodeHexLines(r io.Reader, p *decodePrinter) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line, index := 0, 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		b, err := decode.ParseHex(s)
		if err != nil {
			return fmt.Errorf("stdin line %d: %w", line, err)
		}
		index++
		if err := p.hexDatagram(index, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	if index == 0 {
		return usageError("decode: no datagrams on stdin (give hex arguments, hex lines on stdin, or --pcap FILE)")
	}
	return nil
}

// decodeCapture decodes the DTA and RoCEv2 datagrams of a capture file.
func decodeCapture(cmd *cobra.Command, o *decodeOptions, p *decodePrinter) error {
	var in io.Reader = ctxReader{cmd.Context(), cmd.InOrStdin()}
	if o.pcap != "-" {
		f, err := openFlagFile("pcap", o.pcap, math.MaxInt64)
		if err != nil {
			return err
		}
		defer f.Close()
		in = ctxReader{cmd.Context(), f}
	}
	packets := 0
	err := decode.ReadCapture(in, func(f decode.Frame) error {
		packets++
		if pkt, ok := p.dec.Frame(packets, f); ok {
			return p.print(pkt)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", o.pcap, err)
	}
	if p.count == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "dta: no DTA or RoCEv2 datagrams (UDP to port %d or %d, or to or from port %d) among the %d packets of %s\n", o.port, dta.AckPort, o.rocePort, packets, o.pcap)
	}
	return nil
}

// decodePrinter prints decoded datagrams as text or JSON lines, and counts
// them for the verdict.
type decodePrinter struct {
	w       io.Writer
	json    bool
	dec     decode.Decoder
	hexRoCE bool // hex input is RoCEv2 (UDP payloads)
	hexIP   bool // hex input is RoCEv2 in whole IP datagrams
	count   int  // datagrams printed
	failed  int  // datagrams with a decoding error
	badICRC int  // RoCEv2 packets whose ICRC does not match
}

// hexDatagram decodes datagram number index given in hex: DTA, or RoCEv2
// with --roce.
func (p *decodePrinter) hexDatagram(index int, b []byte) error {
	m := decode.Meta{Index: index}
	switch {
	case p.hexIP:
		return p.print(decode.Packet{RoCE: decode.DecodeRoCEIP(m, b)})
	case p.hexRoCE:
		return p.print(decode.Packet{RoCE: decode.DecodeRoCE(m, b, nil)})
	}
	return p.print(decode.Packet{DTA: p.dec.DTA(m, b)})
}

// print counts and prints a decoded datagram.
func (p *decodePrinter) print(pkt decode.Packet) error {
	p.count++
	if pkt.Failed() {
		p.failed++
	}
	if pkt.BadICRC() {
		p.badICRC++
	}
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		if pkt.RoCE != nil {
			return enc.Encode(pkt.RoCE)
		}
		return enc.Encode(pkt.DTA)
	}
	_, err := io.WriteString(p.w, pkt.Text())
	return err
}

// verdict is the command's error once every datagram is printed: nil
// unless some did not decode or had a bad ICRC.
func (p *decodePrinter) verdict() error {
	var msgs []string
	if p.failed > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d datagrams did not decode", p.failed, p.count))
	}
	if p.badICRC > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d datagrams have a bad RoCEv2 ICRC", p.badICRC, p.count))
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// describeReport is r on one line, as dta decode prints it ("keywrite
// key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01]"); dta report
// echoes what it sends with it.
func describeReport(r *dta.Report) string {
	d := decode.NewReport(r)
	return d.Text()
}

// ctxReader ends reading once ctx is done (a signal), however much input is
// still coming.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// untilDone runs fn and returns its error, or ctx's as soon as ctx is done:
// a read from an idle pipe (stdin) cannot be interrupted, so the command
// returns without it and the process exits.
func untilDone(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
