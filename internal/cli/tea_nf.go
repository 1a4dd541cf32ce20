package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/nf"
	"github.com/dta-go/dta/internal/tea/nf/tun"
	"github.com/dta-go/dta/internal/tea/remote"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/dta"
)

type teaNFOptions struct {
	in, out  string
	table    string
	entries  []string
	buckets  uint64
	rdma     bool
	coll     string
	store    string
	timeout  time.Duration
	duration time.Duration
}

func newTeaNFCmd() *cobra.Command {
	var o teaNFOptions
	cmd := &cobra.Command{
		Use:   "nf nat|lb --in IFACE --out IFACE (--table FILE | --entry E ...)",
		Short: "Run a NAT or an L4 load balancer on TUN devices, its table looked up through TEA",
		Long: `nf runs a network function of TEA's §5 on two TUN devices: every packet the
kernel routes into --in is outbound, every packet routed into --out inbound;
each is looked up in the NF's TEA table, rewritten (address, port, IPv4 and
TCP/UDP checksums) and written to the other device, where the kernel routes
it on, or dropped and counted. --in and --out may name the same device.
The devices are created (or, made beforehand with ip tuntap add so that
routes can point at them, attached to) and brought up; route into them
with ip(8).

nat: source NAT. The table's keys are the packet's 5-tuple (13 bytes, as
dta tea load writes them), values the new address and port (6 bytes): an
outbound packet's source is rewritten, an inbound packet's destination.
--entry PROTO,PRIVATE:PORT,REMOTE:PORT=PUBLIC:PORT adds both directions of
one flow.
lb: L4 load balancer. Keys are protocol, address and port (7 bytes):
a client's packet (--in) to a VIP:port goes to the backend of its entry; a
backend's reply (--out) leaves from the VIP:port. --entry
PROTO,VIP:PORT=BACKEND:PORT adds both.

--table FILE loads a table file (dta tea load --key-size 13|7 --value-size
6 --scratchpad 128 --out FILE); --entry adds to it or to an empty table.
With --rdma the table is written into a region registered with a software
RoCEv2 responder in this process, on loopback, and every lookup is one
RDMA READ (the packet parked in the row's scratchpad by an RDMA WRITE when
the table has one): TEA's path. Without it the table is in local memory,
the server-based NF. Counters are printed at exit (SIGINT, SIGTERM or
--duration).`,
		Example: `  ip tuntap add dev tin mode tun; ip tuntap add dev tout mode tun
  ip rule add iif eth1 lookup 100; ip route add default dev tin table 100
  ip route add 203.0.113.0/24 dev tout                        # NAT: the public prefix
  dta tea nf nat --in tin --out tout --entry udp,10.1.0.2:40000,10.2.0.2:9000=203.0.113.7:50000 --rdma
  dta tea nf nat --in tin --out tout --table nat.tea --collector 10.0.0.5:4791 --store nat   # table in a collector
  ip rule add iif eth2 lookup 101; ip route add default dev tout table 101   # LB: the backends' replies
  dta tea nf lb --in tin --out tout --entry tcp,198.51.100.10:80=10.9.0.5:8080`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"nat", "lb"},
		RunE:      func(cmd *cobra.Command, args []string) error { return runTeaNF(cmd, args[0], &o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.in, "in", "", "TUN device of the inside (outbound packets)")
	fl.StringVar(&o.out, "out", "", "TUN device of the outside (inbound packets)")
	fl.StringVar(&o.table, "table", "", "table file to load (dta tea load --out)")
	fl.StringArrayVar(&o.entries, "entry", nil, "an entry to add, both directions (see above); repeatable")
	fl.Uint64Var(&o.buckets, "buckets", 1024, "buckets of the table without --table or --collector")
	fl.StringVar(&o.coll, "collector", "", "keep the table in this collector's teatable store (IP:4791) and look up with RDMA READs; the NF's control plane clears and loads it")
	fl.StringVar(&o.store, "store", "", "with --collector: the teatable store (default: the collector's default one)")
	fl.BoolVar(&o.rdma, "rdma", false, "keep the table behind a loopback software RoCEv2 responder and look up with RDMA READs")
	fl.DurationVar(&o.timeout, "timeout", 100*time.Millisecond, "a lookup unanswered this long is dropped (with --rdma or --collector; up to 1m)")
	fl.DurationVar(&o.duration, "duration", 0, "stop after this long; 0: at SIGINT or SIGTERM")
	return cmd
}

// teaNFEntries parses --entry values into table entries.
func teaNFEntries(kind nf.Kind, in []string) ([]nf.Entry, error) {
	var out []nf.Entry
	for _, s := range in {
		lhs, rhs, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usageError("--entry %q: want LEFT=ADDR:PORT", s)
		}
		to, err := netip.ParseAddrPort(rhs)
		if err != nil || !to.Addr().Is4() {
			return nil, usageError("--entry %q: %q is not an IPv4 ADDR:PORT", s, rhs)
		}
		var es [2]nf.Entry
		if kind == nf.NAT {
			ft, err := dta.ParseFiveTuple(lhs)
			if err != nil || !ft.Src.Is4() {
				return nil, usageError("--entry %q: want PROTO,PRIVATE:PORT,REMOTE:PORT=PUBLIC:PORT over IPv4", s)
			}
			es = nf.NATEntries(ft.Proto, netip.AddrPortFrom(ft.Src, ft.SrcPort), to, netip.AddrPortFrom(ft.Dst, ft.DstPort))
		} else {
			proto, vip, ok := strings.Cut(lhs, ",")
			ft, err := dta.ParseFiveTuple(proto + "," + vip + ",0.0.0.0:0")
			if !ok || err != nil || !ft.Src.Is4() {
				return nil, usageError("--entry %q: want PROTO,VIP:PORT=BACKEND:PORT over IPv4", s)
			}
			es = nf.LBEntries(ft.Proto, netip.AddrPortFrom(ft.Src, ft.SrcPort), to)
		}
		out = append(out, es[:]...)
	}
	return out, nil
}

func runTeaNF(cmd *cobra.Command, name string, o *teaNFOptions) error {
	var kind nf.Kind
	switch name {
	case "nat":
		kind = nf.NAT
	case "lb":
		kind = nf.LB
	default:
		return usageError("%q: want nat or lb", name)
	}
	if o.in == "" || o.out == "" {
		return usageError("--in and --out are required")
	}
	if o.table == "" && len(o.entries) == 0 {
		return usageError("give --table FILE or at least one --entry")
	}
	if err := o.check(cmd); err != nil {
		return err
	}
	entries, err := teaNFEntries(kind, o.entries)
	if err != nil {
		return err
	}
	spec := tea.Spec{Buckets: o.buckets, Cells: 4, KeySize: kind.KeySize(), ValueSize: nf.ValueSize, Scratchpad: 128, Hash: tea.CRC64}
	var file *tea.File
	var fileBytes uint64
	if o.table != "" {
		b, err := readFlagFile("table", o.table, int64(min(teaMemoryLimit(), math.MaxInt64)))
		if err != nil {
			return err
		}
		if file, err = tea.DecodeFile(b); err != nil {
			return fmt.Errorf("--table: %s: %w", o.table, err)
		}
		spec, fileBytes = file.Spec, uint64(len(b))
	}
	if spec.KeySize != kind.KeySize() || spec.ValueSize != nf.ValueSize {
		return usageError("--table: %s: %d-byte keys and %d-byte values; %s wants %d and %d", o.table, spec.KeySize, spec.ValueSize, name, kind.KeySize(), nf.ValueSize)
	}
	if err := spec.Validate(); err != nil {
		return usageError("%v", err) // --buckets is checked, a file's spec decoded: not reached
	}
	if o.coll == "" { // the table in this process's memory (or its loopback responder's)
		flag := "--buckets"
		if file != nil {
			flag = "--table"
		}
		if err := teaCheckMemory(flag, fmt.Sprintf("a table of %d buckets of %d-byte rows", spec.Buckets, spec.RowSize()), spec.TableSize()+fileBytes); err != nil {
			return err
		}
	}
	p, err := tea.PlaceEqual(spec, 1, 1)
	if err != nil {
		return usageError("%v", err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		mem     tea.Memory
		readers []tea.Reader
		timeout = time.Second
		closers []io.Closer
	)
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
	}()
	switch {
	case o.coll != "" && o.rdma:
		return usageError("--collector and --rdma exclude each other")
	case o.coll != "":
		rt, err := teaDial(ctx, o.coll, o.store)
		if err != nil {
			return err
		}
		closers = append(closers, closerFunc(rt.q.Close))
		if rt.spec.KeySize != kind.KeySize() || rt.spec.ValueSize != nf.ValueSize {
			return usageError("store %s: %d-byte keys and %d-byte values; %s wants %d and %d", rt.store.Name, rt.spec.KeySize, rt.spec.ValueSize, name, kind.KeySize(), nf.ValueSize)
		}
		if file != nil && file.Spec != rt.spec {
			return usageError("%s: its geometry differs from the collector's store %s", o.table, rt.store.Name)
		}
		spec = rt.spec
		if p, err = tea.PlaceEqual(spec, 1, 1); err != nil {
			return usageError("%v", err)
		}
		m := remote.NewMemory(rt.q, 0)
		// The NF's control plane owns the table: what an earlier loader
		// placed is unknown to it (its stash died with it).
		if err := teaClear(m, spec); err != nil {
			return err
		}
		srv := remote.NewServer(rt.q, 0)
		closers = append(closers, closerFunc(func() error { srv.Close(); return nil }))
		mem, readers, timeout = m, []tea.Reader{srv}, o.timeout
	case o.rdma:
		m, srv, cl, err := teaNFRemote(ctx, p.Used(0))
		closers = append(closers, cl...)
		if err != nil {
			return err
		}
		mem, readers, timeout = m, []tea.Reader{srv}, o.timeout
	default:
		lm := tea.NewLocalMemory(spec.TableSize())
		mem, readers = lm, []tea.Reader{tea.MemoryReader{Mem: lm}}
	}
	var tab *tea.Table
	if file != nil {
		tab, err = tea.Restore(file, mem, tea.TableConfig{MaxTries: tea.DefaultMaxTries, Seed: 1})
	} else {
		tab, err = tea.NewTable(spec, mem, tea.TableConfig{MaxTries: tea.DefaultMaxTries, Seed: 1})
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := tab.Insert(e.Key, e.Value); errors.Is(err, tea.ErrExists) {
			err = tab.Update(e.Key, e.Value)
		} else if err != nil {
			return fmt.Errorf("--entry: %w", err)
		}
	}
	in, err := tun.Open(o.in)
	if err != nil {
		return err
	}
	out := in
	if o.out != o.in {
		if out, err = tun.Open(o.out); err != nil {
			in.Close()
			return err
		}
	}
	n, err := nf.New(nf.Config{Kind: kind, Placement: p, Readers: readers, Stash: tab.Stash(), Cache: tab.Cache(),
		Engine: tea.Config{Timeout: timeout}, Send: nf.Sender(in, out)})
	if err != nil {
		in.Close()
		out.Close()
		return err
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	w := cmd.OutOrStdout()
	where := "local memory"
	if o.rdma {
		where = "a server's memory over RDMA (loopback software RoCEv2)"
	}
	if o.coll != "" {
		where = "the collector's memory over RDMA (" + o.coll + ")"
	}
	fmt.Fprintf(w, "%s on %s → %s: %d entries in %s\n", name, o.in, o.out, tab.Len(), where)
	start := time.Now()
	err = nf.Serve(ctx, n, in, out)
	teaNFPrintStats(w, n, time.Since(start))
	return err
}

// teaNFRemote puts size bytes of table memory behind a software RoCEv2
// responder on loopback and connects a requester to it.
func teaNFRemote(ctx context.Context, size uint64) (*remote.Memory, *remote.Server, []io.Closer, error) {
	var cl []io.Closer
	rc := region.DefaultConfig()
	rc.HugePages, rc.Size = region.HugePagesOff, size
	mem, err := region.New(rc, nil)
	if err != nil {
		return nil, nil, cl, err
	}
	cl = append(cl, mem)
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	resp, err := rdma.NewResponder(cfg, nil)
	if err != nil {
		return nil, nil, cl, err
	}
	mr, err := resp.RegisterMR("tea", mem, rdma.AccessRemoteWrite|rdma.AccessRemoteRead)
	if err != nil {
		resp.Close()
		return nil, nil, cl, err
	}
	resp.SetAdvertisement([]byte("tea"))
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	cl = append(cl, closerFunc(func() error { resp.Close(); return <-done }))
	qc := requester.DefaultConfig()
	qc.Collector = resp.LocalAddr()
	qc.Timeout = 50 * time.Millisecond
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q, err := requester.Dial(dctx, qc, nil)
	if err != nil {
		return nil, nil, cl, err
	}
	cl = append(cl, closerFunc(func() error { q.Close(); return nil }))
	q.SetTargets([]requester.Target{{VA: mr.VA, RKey: mr.RKey, Length: mr.Length}})
	srv := remote.NewServer(q, 0)
	cl = append(cl, closerFunc(func() error { srv.Close(); return nil }))
	return remote.NewMemory(q, 0), srv, cl, nil
}

// check refuses flags out of range or given where they mean nothing, naming
// them, before any device or connection is opened.
func (o *teaNFOptions) check(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	switch {
	case o.coll != "" && o.rdma:
		return usageError("--collector and --rdma exclude each other")
	case o.coll == "" && changed("store"):
		return usageError("--store: only with --collector")
	case changed("buckets") && (o.table != "" || o.coll != ""):
		return usageError("--buckets: the table's geometry is --table's or the collector's store's; not with them")
	case changed("timeout") && !o.rdma && o.coll == "":
		return usageError("--timeout: lookups time out only over RDMA (--rdma or --collector)")
	}
	if err := checkInt("buckets", o.buckets, 2, tea.MaxBuckets); err != nil {
		return err
	}
	if o.timeout <= 0 || o.timeout > time.Minute {
		return usageError("--timeout: %v out of range (0, 1m]", o.timeout)
	}
	if o.duration < 0 {
		return usageError("--duration: %v is negative (0: until SIGINT or SIGTERM)", o.duration)
	}
	return nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// teaNFPrintStats prints an NF's counters.
func teaNFPrintStats(w io.Writer, n *nf.NF, el time.Duration) {
	s, e := n.Stats(), n.Engine().Stats()
	out, in := s.Translated[nf.Outbound].Load(), s.Translated[nf.Inbound].Load()
	fmt.Fprintf(w, "%v: %d packets received, %d translated outbound, %d inbound (%.0f packets/s)\n",
		el.Round(time.Millisecond), s.Received.Load(), out, in, float64(out+in)/max(el.Seconds(), 1e-9))
	fmt.Fprintf(w, "dropped: %d no entry, %d malformed, %d unsupported, %d too big, %d busy, %d unavailable, %d lost, %d send errors\n",
		s.NoEntry.Load(), s.Malformed.Load(), s.Unsupported.Load(), s.TooBig.Load(), s.Busy.Load(), s.Unavailable.Load(), s.Lost.Load(), s.SendErrors.Load())
	fmt.Fprintf(w, "lookups: %d, %d from memory reads, %d from the stash, %d from the cache, %d retries\n",
		e.Lookups.Load(), e.MemoryReads.Load(), e.StashHits.Load(), e.CacheHits.Load(), e.Retries.Load())
}
