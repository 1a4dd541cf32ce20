package cli

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// directOptions are the flags of `dta report keywrite --direct`: DART's
// direct reporting, with no translator.
type directOptions struct {
	direct     bool
	collectors string
	cas        bool
	keys       int
}

func (o *directOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&o.direct, "direct", false, "write the slots into the collectors' memory over RoCEv2 (DART), without a translator")
	fl.StringVar(&o.collectors, "collectors", "", "with --direct: the collectors, `[NAME=]IP:PORT,...` (RoCEv2 addresses, named as the translators name them)")
	fl.BoolVar(&o.cas, "cas", false, "with --direct: later copies by compare-and-swap, only into empty slots (DART §7)")
	fl.IntVar(&o.keys, "keys", 1, "write `N` keys: --key, --key+1, ... with values --value, --value+1, ... (decimal key and value)")
}

// check refuses flags that do not go with --direct, or --direct's flags
// without it.
func (o *directOptions) check(cmd *cobra.Command, ro *reportOptions) error {
	fl := cmd.Flags()
	if !o.direct {
		for _, f := range []string{"collectors", "cas", "keys"} {
			if fl.Changed(f) {
				return usageError("--%s goes with --direct", f)
			}
		}
		return nil
	}
	for _, f := range []string{"to", "immediate", "legacy", "retransmit"} {
		if fl.Changed(f) {
			return usageError("--%s does not go with --direct: the reporter writes the collectors' memory itself", f)
		}
	}
	if o.collectors == "" {
		return usageError("--direct needs --collectors [NAME=]IP:PORT,...")
	}
	if o.keys < 1 {
		return usageError("--keys: %d, want at least 1", o.keys)
	}
	if ro.count < 1 {
		return usageError("--count: %d, want at least 1", ro.count)
	}
	return nil
}

// runDirectKeyWrite writes o.keys keys from key (values from value) count
// times, directly into the collectors' memory, and prints a summary.
func runDirectKeyWrite(cmd *cobra.Command, o *directOptions, ro *reportOptions, key dta.Key, value []byte, n int) error {
	if o.keys > 1 && (!key.Compat || len(value) != 4) {
		return usageError("--keys %d needs a decimal --key and a decimal --value (the keys and values count up from them)", o.keys)
	}
	// The keys and values count up without wrapping past 2^32 - 1 (which
	// would write other keys' slots).
	if last := uint64(key.U32()) + uint64(o.keys) - 1; o.keys > 1 && last > math.MaxUint32 {
		return usageError("--keys %d from --key %d passes 2^32 - 1, the last 32-bit key", o.keys, key.U32())
	}
	if last := uint64(binary.BigEndian.Uint32(value)) + uint64(o.keys) - 1; o.keys > 1 && last > math.MaxUint32 {
		return usageError("--keys %d from --value %d passes 2^32 - 1, the last 32-bit value", o.keys, binary.BigEndian.Uint32(value))
	}
	members, err := partition.ParseMembers(o.collectors)
	if err != nil {
		return usageError("--collectors: %v", err)
	}
	cfg := reporter.DefaultDirectConfig()
	cfg.Collectors, cfg.CompareSwap, cfg.StoreID = members, o.cas, ro.store
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := cmd.Context()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	d, err := reporter.DialDirect(dctx, cfg, logger)
	cancel()
	if err != nil {
		return err
	}
	defer d.Close()
	k := dta.Key{Compat: key.Compat, Bytes: append([]byte(nil), key.Bytes...)}
	v := append([]byte(nil), value...)
	start := time.Now()
	for range ro.count {
		for i := range o.keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			if o.keys > 1 {
				binary.BigEndian.PutUint32(k.Bytes, key.U32()+uint32(i))
				binary.BigEndian.PutUint32(v, binary.BigEndian.Uint32(value)+uint32(i))
			}
			if err := d.KeyWrite(k, v, n); err != nil {
				return fmt.Errorf("key %v: %w", k, err)
			}
			if !ro.quiet && o.keys == 1 {
				fmt.Fprintf(out, "wrote %v = 0x%x (%d copies) into collector %s\n", k, v, n, d.Owner(k))
			}
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.Flush(fctx); err != nil {
		return fmt.Errorf("waiting for the collectors' acknowledgements: %w", err)
	}
	if !ro.quiet {
		printDirectSummary(out, d, o, n, time.Since(start))
	}
	return d.Close()
}

func printDirectSummary(w io.Writer, d *reporter.Direct, o *directOptions, n int, took time.Duration) {
	st := d.Stats()
	var per []string
	for _, c := range d.Collectors() {
		per = append(per, fmt.Sprintf("%s: %d", c.Name, c.Keys))
	}
	fmt.Fprintf(w, "direct: %d keys written in %v (%s), %d copies each: %d writes",
		st.Keys.Load(), took.Round(time.Millisecond), strings.Join(per, ", "), n, st.Writes.Load())
	if o.cas {
		fmt.Fprintf(w, ", %d compare-and-swaps (%d won, %d found the slot taken, %d rewrote the key's own copy, %d failed)",
			st.Swaps.Load(), st.SwapsWon.Load(), st.SwapsTaken.Load(), st.SwapsRewritten.Load(), st.SwapsFailed.Load())
	}
	fmt.Fprintln(w)
}
