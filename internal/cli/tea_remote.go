package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/remote"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/advert"
	"github.com/dta-go/dta/wire/dta"
)

// teaRemote is a TEA table in a collector's store, reached over RoCEv2:
// the requester has one target, the store's region, at index 0.
type teaRemote struct {
	q     *requester.Requester
	store advert.Store
	spec  tea.Spec
	addr  string // the collector's address, for output
}

// teaDialTimeout bounds the RoCEv2 handshake and the advertisement.
const teaDialTimeout = 10 * time.Second

// teaDial connects to the collector at addr (IP:PORT, port 4791 if absent),
// reads its store advertisement and picks the TEA table store named name
// (the default TEA table store for ""). The caller closes t.q.
func teaDial(ctx context.Context, addr, name string) (*teaRemote, error) {
	ap, err := teaCollectorAddr(addr)
	if err != nil {
		return nil, err
	}
	qc := requester.DefaultConfig()
	qc.Collector = ap
	// A READ of a row answers within a round trip; a second is generous.
	qc.Timeout = 50 * time.Millisecond
	// The advertisement of a large store list fits the largest accepted.
	qc.MaxAdvertisement = 64 << 20
	dctx, cancel := context.WithTimeout(ctx, teaDialTimeout)
	defer cancel()
	q, err := requester.Dial(dctx, qc, nil)
	if err != nil {
		return nil, fmt.Errorf("collector %s: %w", ap, err)
	}
	stores, err := advert.Decode(q.Advertisement())
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("collector %s: %w", ap, err)
	}
	i := advert.Find(stores, dta.TeaTable, name)
	if i < 0 {
		q.Close()
		var names []string
		for _, s := range stores {
			if s.Primitive == dta.TeaTable {
				names = append(names, s.Name)
			}
		}
		if name == "" {
			return nil, usageError("collector %s has no default teatable store (its teatable stores: %v): give --store", ap, names)
		}
		return nil, usageError("collector %s has no teatable store %q (its teatable stores: %v)", ap, name, names)
	}
	s := stores[i]
	g := s.TeaTable
	spec := tea.Spec{Buckets: g.Buckets, Cells: g.Cells, KeySize: g.KeySize, ValueSize: g.ValueSize, Scratchpad: g.Scratchpad, Hash: tea.Hash(g.TableHash)}
	if err := spec.Validate(); err != nil {
		q.Close()
		return nil, fmt.Errorf("collector %s: store %s: %w", ap, s.Name, err)
	}
	if s.Length < spec.TableSize() {
		q.Close()
		return nil, fmt.Errorf("collector %s: store %s: region of %d bytes cannot hold its table of %d", ap, s.Name, s.Length, spec.TableSize())
	}
	q.SetTargets([]requester.Target{{VA: s.VA, RKey: s.RKey, Length: s.Length}})
	return &teaRemote{q: q, store: s, spec: spec, addr: ap.String()}, nil
}

// teaCollectorAddr parses IP:PORT or HOST:PORT, with port 4791 when none
// is given.
func teaCollectorAddr(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 4791), nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(s, "4791")
	}
	ua, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, usageError("--collector %q: %v", s, err)
	}
	ap := ua.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// teaChunk is the bytes of one READ or WRITE when the whole table is
// scanned or cleared.
const teaChunk = 64 << 10

// teaTableEmpty reports whether no cell of the remote table holds an entry,
// reading it with RDMA READs of teaChunk bytes.
func teaTableEmpty(m tea.Memory, spec tea.Spec) (bool, error) {
	buf := make([]byte, teaChunk/spec.RowSize()*spec.RowSize())
	if len(buf) == 0 {
		buf = make([]byte, spec.RowSize())
	}
	rows := uint64(len(buf)) / spec.RowSize()
	for r := uint64(0); r < spec.Buckets; r += rows {
		n := min(rows, spec.Buckets-r)
		b := buf[:n*spec.RowSize()]
		if err := m.Read(spec.RowOffset(r), b); err != nil {
			return false, err
		}
		for i := range n {
			for c := range spec.Cells {
				if b[i*spec.RowSize()+uint64(c)*spec.CellSize()]&tea.FlagValid != 0 {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// teaClear zeroes the remote table with RDMA WRITEs.
func teaClear(m tea.Memory, spec tea.Spec) error {
	zero := make([]byte, teaChunk)
	for off := uint64(0); off < spec.TableSize(); off += teaChunk {
		if err := m.Write(off, zero[:min(teaChunk, spec.TableSize()-off)]); err != nil {
			return err
		}
	}
	return nil
}

// teaRemoteLoad opens the control plane of the collector's table for
// dta tea load --collector: the table must be empty (the control plane's
// state, its stash, lives in the process that loaded it), unless clear
// zeroes it first.
func teaRemoteLoad(cmd *cobra.Command, o *teaLoadOptions) (*teaRemote, *tea.Table, error) {
	for _, f := range []string{"buckets", "key-size", "value-size", "cells", "scratchpad", "load-factor", "out"} {
		if cmd.Flags().Changed(f) {
			return nil, nil, usageError("--%s: the table's geometry is the collector's store's; not with --collector", f)
		}
	}
	t, err := teaDial(cmd.Context(), o.collector, o.store)
	if err != nil {
		return nil, nil, err
	}
	mem := remote.NewMemory(t.q, 0)
	if o.clear {
		err = teaClear(mem, t.spec)
	} else {
		var empty bool
		if empty, err = teaTableEmpty(mem, t.spec); err == nil && !empty {
			err = usageError("store %s on %s already holds entries, and the control plane that placed them (and its stash) was another process's: give --clear to zero the table and load it again", t.store.Name, t.addr)
		}
	}
	if err != nil {
		t.q.Close()
		return nil, nil, err
	}
	tab, err := tea.NewTable(t.spec, mem, tea.TableConfig{MaxTries: o.maxTries, Seed: o.seed})
	if err != nil {
		t.q.Close()
		return nil, nil, usageError("%v", err)
	}
	return t, tab, nil
}

// runTeaRemoteLookup is dta tea lookup --collector: one lookup per key
// through the lookup engine, each one RDMA READ of the key's row in the
// collector's store. The stash is empty here: entries the loader kept in
// its stash are not found.
func runTeaRemoteLookup(cmd *cobra.Command, o *teaLookupOptions) error {
	if cmd.Flags().Changed("servers") || cmd.Flags().Changed("replicas") {
		return usageError("--servers, --replicas: the table is the collector's store, on one server; not with --collector")
	}
	t, err := teaDial(cmd.Context(), o.collector, o.store)
	if err != nil {
		return err
	}
	defer t.q.Close()
	p, err := tea.PlaceEqual(t.spec, 1, 1)
	if err != nil {
		return err
	}
	srv := remote.NewServer(t.q, 0)
	defer srv.Close()
	results := make(chan teaLookupRow, 1)
	server := t.addr + " store " + t.store.Name
	eng, err := tea.New(tea.Config{Placement: p, Readers: []tea.Reader{srv}, InFlight: 1,
		Timeout: time.Second, HotThreshold: ^uint32(0),
		Done: func(r *tea.Result) {
			row := teaLookupRow{Found: r.Found, Source: r.Source.String(), Reads: r.Reads, Bucket: r.Bucket, Cell: -1}
			if r.Found {
				row.Value = "0x" + hex.EncodeToString(r.Value)
				row.Cell = r.Cell
			}
			if r.Server >= 0 {
				row.Server = server
			}
			if r.Err != nil {
				row.Error = r.Err.Error()
			}
			results <- row
		}})
	if err != nil {
		return err
	}
	var rows []teaLookupRow
	for _, s := range o.keys {
		k, err := dta.ParseKey(s)
		if err != nil {
			return usageError("--key: %v", err)
		}
		if len(k.Bytes) != t.spec.KeySize {
			return usageError("--key %s: %d bytes, the table's keys have %d", s, len(k.Bytes), t.spec.KeySize)
		}
		if err := eng.Lookup(k.Bytes, 0); err != nil {
			return err
		}
		var row teaLookupRow
		select {
		case row = <-results:
		case <-time.After(5 * time.Second):
			eng.Expire(time.Now().Add(time.Hour))
			row = <-results
		}
		row.Key, row.Home = s, t.spec.HomeOf(k.Bytes)
		if row.Error != "" {
			return fmt.Errorf("--key %s: %s", s, row.Error)
		}
		rows = append(rows, row)
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		return teaJSON(out, rows)
	}
	for _, r := range rows {
		reads := "1 read"
		if r.Reads != 1 {
			reads = fmt.Sprintf("%d reads", r.Reads)
		}
		if r.Found {
			fmt.Fprintf(out, "%s: %s from %s on %s, bucket %d cell %d (home %d), %s\n", r.Key, r.Value, r.Source, r.Server, r.Bucket, r.Cell, r.Home, reads)
		} else {
			fmt.Fprintf(out, "%s: not found (home %d, %s; an entry the loader kept in its stash is not in the collector's memory)\n", r.Key, r.Home, reads)
		}
	}
	return nil
}
