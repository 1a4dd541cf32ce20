package cli

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// reportKeyForms documents the --key forms once for every report command.
const reportKeyForms = `Keys (--key):
  42                               a decimal 32-bit key: sent in the prototype's compat format
  0x0a0b0c                         hex bytes (1 to 64): sent in the extended format
  tcp,10.0.0.1:5000,10.0.0.2:80    a 5-tuple, 13 bytes (IPv6 in brackets: 37 bytes)

Values (--value): a decimal number is sent as 4 big-endian bytes, 0x… as the
bytes given. A report that fits the prototype's format (32-bit key, 4-byte
value, default store, no path length) is sent in it; anything else in the
extended format (docs/PROTOCOL.md).`

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Send DTA reports to a translator",
		Long: `report sends DTA reports over UDP to a translator (dta up, dta translator),
one primitive per subcommand, or generates realistic telemetry streams (gen).

` + reportKeyForms,
		Example: `  dta report keywrite --key 1 --value 42
  dta report keyincrement --key 167772161 --delta 1500
  dta report append --list 3 --value 0xdeadbeef
  dta report postcard --key tcp,10.0.0.1:5000,10.0.0.2:80 --hops 65793,131329,196609,131585,66049
  dta report gen counters --rate 10000 --count 100000`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("report: unknown subcommand %q (want keywrite, keyincrement, append, postcard or gen)", args[0])
			}
			return usageError("report: give a subcommand: keywrite, keyincrement, append, postcard or gen (see dta report --help)")
		},
	}
	cmd.SetFlagErrorFunc(flagUsageError)
	cmd.AddCommand(
		newReportKeyWriteCmd(),
		newReportKeyIncrementCmd(),
		newReportAppendCmd(),
		newReportPostcardCmd(),
		newReportGenCmd(),
		newReportINTCmd(),
		newReportSketchCmd(),
	)
	return cmd
}

// flagUsageError turns a flag parsing error into a usage error (exit 2).
func flagUsageError(_ *cobra.Command, err error) error { return usageError("%v", err) }

// reportOptions are the flags every single-report command shares.
type reportOptions struct {
	to         string
	store      uint16
	immediate  bool
	count      int
	legacy     bool
	retransmit bool
	quiet      bool
}

func (o *reportOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.to, "to", reporter.DefaultTo, "translator `host:port`")
	fl.Uint16Var(&o.store, "store", 0, "target store `ID` (0 = the primitive's default store)")
	fl.BoolVar(&o.immediate, "immediate", false, "set the immediate flag (the collector CPU is told at once)")
	fl.IntVar(&o.count, "count", 1, "send the report(s) `N` times")
	fl.BoolVar(&o.legacy, "legacy", false, "use the prototype's 2-byte base header (no sequence number)")
	fl.BoolVar(&o.retransmit, "retransmit", false, "mark reports retransmittable and wait for the translator's ACKs (binds UDP :40044); exit 1 if some never come")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing on success")
	cmd.Args = reportNoArgs
}

// reportNoArgs rejects positional arguments as a usage error.
func reportNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("%s: unexpected argument %q (every input is a flag; see --help)", cmd.CommandPath(), args[0])
	}
	return nil
}

// send sends reps count times, one datagram each, printing one line per
// report sent.
func (o *reportOptions) send(cmd *cobra.Command, reps []dta.Report) error {
	if o.count < 1 {
		return usageError("--count: %d, want at least 1", o.count)
	}
	if o.legacy && o.retransmit {
		return usageError("--legacy and --retransmit exclude each other: the 2-byte header has no sequence number")
	}
	for i := range reps {
		if _, err := reps[i].AppendTo(nil); err != nil {
			return usageError("%v", err)
		}
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := checkHostPort("to", o.to); err != nil {
		return err
	}
	cfg := reporter.Config{To: o.to, Legacy: o.legacy, Retransmit: o.retransmit}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	r, err := reporter.New(cfg, logger)
	if err != nil {
		return err
	}
	defer r.Close()
	st := r.Stats()
	for range o.count {
		for i := range reps {
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			before := st.Bytes.Load()
			if err := r.Send(&reps[i], o.immediate); err != nil {
				return err
			}
			if !o.quiet {
				fmt.Fprintf(out, "sent %s to %v (%d bytes)\n", describeReport(&reps[i]), r.RemoteAddr(), st.Bytes.Load()-before)
			}
		}
	}
	if err := r.Close(); err != nil {
		return err
	}
	if !o.retransmit {
		return nil
	}
	if !o.quiet {
		reportAckSummary(out, st)
	}
	return reportUnacknowledged(r)
}

func reportAckSummary(w io.Writer, st *reporter.Stats) {
	fmt.Fprintf(w, "translator: %d ACKs, %d NACKs; %d datagrams resent, %d forgotten unacknowledged, %d NACKed after being forgotten\n",
		st.Acks.Load(), st.Nacks.Load(), st.Retransmits.Load(), st.Evicted.Load(), st.Unrecoverable.Load())
}

// reportUnacknowledged is the error (exit 1) of a --retransmit command
// after Close: nil when the translator acknowledged every datagram sent.
func reportUnacknowledged(r *reporter.Reporter) error {
	st := r.Stats()
	return unacknowledgedError(r.RemoteAddr(), r.Unacknowledged(), st.Datagrams.Load(), st.Acks.Load()+st.Nacks.Load())
}

// unacknowledgedError says, in one line, how many of the datagrams sent to
// the translator at to it never acknowledged; answers is how many ACKs and
// NACKs came back at all. nil when unacked is 0.
func unacknowledgedError(to netip.AddrPort, unacked, sent, answers uint64) error {
	if unacked == 0 {
		return nil
	}
	why := ""
	if answers == 0 {
		why = ": no ACK or NACK came back (is a translator listening there, and do its answers reach UDP port 40044 here?)"
	}
	return fmt.Errorf("--retransmit: %d of %d datagrams sent not acknowledged by the translator at %v%s", unacked, sent, to, why)
}

// parseReportKey parses --key.
func parseReportKey(s string) (dta.Key, error) {
	if s == "" {
		return dta.Key{}, usageError("--key: required")
	}
	k, err := dta.ParseKey(s)
	if err != nil {
		return dta.Key{}, usageError("--key: %v", err)
	}
	return k, nil
}

// parseReportValue parses a value: decimal → 4 big-endian bytes, 0x… → the
// bytes given (1 to maxLen).
func parseReportValue(flag, s string, maxLen int) ([]byte, error) {
	if s == "" {
		return nil, usageError("%s: required", flag)
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, usageError("%s %q: bad hex: %v", flag, s, err)
		}
		if len(b) == 0 || len(b) > maxLen {
			return nil, usageError("%s %q: %d bytes, want 1 to %d", flag, s, len(b), maxLen)
		}
		return b, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return nil, usageError("%s %q: want a decimal number from 0 to 4294967295 (sent as 4 bytes) or 0x-prefixed hex bytes", flag, s)
	}
	return binary.BigEndian.AppendUint32(nil, uint32(n)), nil
}

func reportCheckRedundancy(n int) error {
	if n < 1 || n > dta.MaxRedundancy {
		return usageError("--redundancy: %d, want 1 to %d copies", n, dta.MaxRedundancy)
	}
	return nil
}

func newReportKeyWriteCmd() *cobra.Command {
	o := &reportOptions{}
	do := &directOptions{}
	var key, value string
	var n int
	cmd := &cobra.Command{
		Use:   "keywrite --key KEY --value VALUE",
		Short: "Send Key-Write reports: store a value under a key",
		Long: `keywrite sends Key-Write reports: the translator writes (checksum, value) at
--redundancy slots chosen by hashing the key; dta query keywrite reads it back.

With --direct there is no translator: the command writes the slots itself
into the memory of the collector that owns the key (DART), over RoCEv2 to
every collector of --collectors (their RoCEv2 addresses, named exactly as the
translators name them, since the name decides the owner). It learns each
collector's stores from the advertisement the collector posts; --store picks
one by id. With --cas, every copy after the first is a compare-and-swap that
only takes an empty slot (DART §7; the store's slots must be a multiple of 8
bytes). --keys N writes N keys counting up from --key, with values counting
up from --value, and prints a summary.

` + reportKeyForms,
		Example: `  dta report keywrite --key 1 --value 42
  dta report keywrite --key 7 --value 0x0000002a --redundancy 4 --immediate
  # a 12-byte value into store 5 (configured with value_size: 12):
  dta report keywrite --key tcp,10.0.0.1:5000,10.0.0.2:80 --value 0x000101010002010100030000 --store 5
  dta report keywrite --key 1 --value 42 --to 192.0.2.10:40040 --count 10 -q
  # DART: straight into the memory of the collector that owns key 7
  dta report keywrite --direct --collectors c1=192.0.2.10:4791,c2=192.0.2.11:4791 --key 7 --value 42
  # 100000 keys 1.. with values 1000.., later copies by compare-and-swap
  dta report keywrite --direct --collectors 192.0.2.10:4791,192.0.2.11:4791 --cas --key 1 --keys 100000 --value 1000`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := do.check(cmd, o); err != nil {
				return err
			}
			k, err := parseReportKey(key)
			if err != nil {
				return err
			}
			v, err := parseReportValue("--value", value, dta.MaxValueLen)
			if err != nil {
				return err
			}
			if err := reportCheckRedundancy(n); err != nil {
				return err
			}
			if do.direct {
				return runDirectKeyWrite(cmd, do, o, k, v, n)
			}
			return o.send(cmd, []dta.Report{reporter.KeyWrite(k, v, n, o.store)})
		},
	}
	o.addFlags(cmd)
	do.addFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "the `KEY` (decimal, 0x hex, or a 5-tuple)")
	fl.StringVar(&value, "value", "", "the `VALUE` (decimal → 4 bytes, or 0x hex bytes)")
	fl.IntVar(&n, "redundancy", 2, "copies `N` written (1-8)")
	return cmd
}

func newReportKeyIncrementCmd() *cobra.Command {
	o := &reportOptions{}
	var key string
	var delta uint64
	var n int
	cmd := &cobra.Command{
		Use:   "keyincrement --key KEY [--delta D]",
		Short: "Send Key-Increment reports: add to a key's counter",
		Long: `keyincrement sends Key-Increment reports: the translator adds --delta to
--redundancy counters chosen by hashing the key (a count-min sketch);
dta query keyincrement returns the smallest of them.

` + reportKeyForms,
		Example: `  dta report keyincrement --key 9 --delta 1500
  dta report keyincrement --key 9 --count 100 -q
  dta report keyincrement --key 0x0a000001 --delta 64 --redundancy 4`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := parseReportKey(key)
			if err != nil {
				return err
			}
			if err := reportCheckRedundancy(n); err != nil {
				return err
			}
			return o.send(cmd, []dta.Report{reporter.KeyIncrement(k, delta, n, o.store)})
		},
	}
	o.addFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "the `KEY` (decimal, 0x hex, or a 5-tuple)")
	fl.Uint64Var(&delta, "delta", 1, "the increment `D` (0 to 2^64-1)")
	fl.IntVar(&n, "redundancy", 2, "counters `N` incremented (1-8)")
	return cmd
}

func newReportAppendCmd() *cobra.Command {
	o := &reportOptions{}
	var value string
	var list uint32
	cmd := &cobra.Command{
		Use:   "append --list ID --value VALUE",
		Short: "Send Append reports: add an entry to a list",
		Long: `append sends Append reports: the translator appends the entry to list --list
of the store (a ring buffer in collector memory); dta query append reads the
list. The entry's size must be the store's entry size (4 bytes by default).

Values (--value): a decimal number is sent as 4 big-endian bytes, 0x… as the
bytes given (up to 1024).`,
		Example: `  dta report append --list 3 --value 42
  dta report append --list 0 --value 0xdeadbeef --immediate
  # an 18-byte loss event into store 6 (configured with entry_size: 18):
  dta report append --list 1 --value 0x0a0000010a000002138801bb06000100010a --store 6`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := parseReportValue("--value", value, dta.MaxValueLen)
			if err != nil {
				return err
			}
			return o.send(cmd, []dta.Report{reporter.Append(list, v, o.store)})
		},
	}
	o.addFlags(cmd)
	fl := cmd.Flags()
	fl.Uint32Var(&list, "list", 0, "list `ID` (0 to the store's lists - 1)")
	fl.StringVar(&value, "value", "", "the entry `VALUE` (decimal → 4 bytes, or 0x hex bytes)")
	return cmd
}

func newReportPostcardCmd() *cobra.Command {
	o := &reportOptions{}
	var key, value, hops string
	var hop, pathLen int
	cmd := &cobra.Command{
		Use:   "postcard --key KEY (--hop H --value V | --hops V1,V2,...)",
		Short: "Send Postcarding reports: per-hop values of a flow",
		Long: `postcard sends Postcarding reports (INT postcards): the value one switch
reports for hop --hop of the flow --key. --hops sends a whole path at once,
one postcard per hop, with the path length set, so that the translator writes
the path as soon as the last hop arrives. Hop values are switch ids, 1 to 8
bytes (4 in the default store, whose value set is 0..1048575).

` + reportKeyForms,
		Example: `  dta report postcard --key 7 --hop 1 --value 101
  dta report postcard --key 7 --hop 2 --value 102 --path-len 2
  dta report postcard --key 7 --hops 101,102,103,104,105
  dta report postcard --key tcp,10.0.0.1:5000,10.0.0.2:80 --hops 65793,131329,196609`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := parseReportKey(key)
			if err != nil {
				return err
			}
			if pathLen < 0 || pathLen > dta.MaxHops {
				return usageError("--path-len: %d, want 0 (unknown) to %d", pathLen, dta.MaxHops)
			}
			if hops == "" {
				if !cmd.Flags().Changed("hop") {
					return usageError("--hop: required (or give the whole path with --hops)")
				}
				if hop < 1 || hop > dta.MaxHops || (pathLen != 0 && hop > pathLen) {
					return usageError("--hop: %d, want 1 to %d (and at most --path-len)", hop, dta.MaxHops)
				}
				v, err := parseReportValue("--value", value, dta.MaxHopValue)
				if err != nil {
					return err
				}
				return o.send(cmd, []dta.Report{reporter.Postcard(k, hop, pathLen, v, o.store)})
			}
			if cmd.Flags().Changed("hop") || value != "" {
				return usageError("--hops sends a whole path: give it without --hop and --value")
			}
			vals := strings.Split(hops, ",")
			if len(vals) > dta.MaxHops {
				return usageError("--hops: %d hops, want at most %d", len(vals), dta.MaxHops)
			}
			if pathLen == 0 {
				pathLen = len(vals)
			} else if pathLen < len(vals) {
				return usageError("--path-len %d is shorter than the %d hops of --hops", pathLen, len(vals))
			}
			reps := make([]dta.Report, len(vals))
			for i, s := range vals {
				v, err := parseReportValue(fmt.Sprintf("--hops (hop %d)", i+1), strings.TrimSpace(s), dta.MaxHopValue)
				if err != nil {
					return err
				}
				reps[i] = reporter.Postcard(k, i+1, pathLen, v, o.store)
			}
			return o.send(cmd, reps)
		},
	}
	o.addFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "the flow `KEY` (decimal, 0x hex, or a 5-tuple)")
	fl.IntVar(&hop, "hop", 0, "hop number `H` (1-8)")
	fl.StringVar(&value, "value", "", "the hop's `VALUE` (decimal → 4 bytes, or 0x hex, 1-8 bytes)")
	fl.IntVar(&pathLen, "path-len", 0, "path length `L` (0 = unknown; set: extended format)")
	fl.StringVar(&hops, "hops", "", "a whole path `V1,V2,...`: one postcard per hop, path length set")
	return cmd
}
