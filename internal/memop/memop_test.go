package memop_test

import (
	"bytes"
	"testing"

	"github.com/dta-go/dta/internal/memop"
)

func TestBatch(t *testing.T) {
	t.Run("ops are appended in order with their fields", func(t *testing.T) {
		b := memop.NewBatch(0, 0)
		d := []byte{1, 2}
		b.Write(1, 10, d)
		b.WriteImm(2, 20, d, 7)
		b.FetchAdd(3, 32, 5)
		want := []memop.Op{
			{Kind: memop.Write, Store: 1, Offset: 10, Data: d},
			{Kind: memop.WriteImm, Store: 2, Offset: 20, Data: d, Imm: 7},
			{Kind: memop.FetchAdd, Store: 3, Offset: 32, Delta: 5},
		}
		if len(b.Ops) != 3 {
			t.Fatalf("%d ops", len(b.Ops))
		}
		for i := range want {
			g, w := b.Ops[i], want[i]
			if g.Kind != w.Kind || g.Store != w.Store || g.Offset != w.Offset || !bytes.Equal(g.Data, w.Data) || g.Imm != w.Imm || g.Delta != w.Delta {
				t.Errorf("op %d = %+v, want %+v", i, g, w)
			}
		}
		if b.Ops[0].Len() != 2 || b.Ops[2].Len() != 8 {
			t.Errorf("Len = %d, %d; want 2 and 8", b.Ops[0].Len(), b.Ops[2].Len())
		}
	})

	t.Run("Alloc returns zeroed, capped slices that survive growth", func(t *testing.T) {
		b := memop.NewBatch(1, 8)
		first := b.Alloc(6)
		copy(first, "abcdef")
		second := b.Alloc(100) // grows the arena
		if len(second) != 100 || cap(second) != 100 || len(first) != 6 || cap(first) != 6 {
			t.Fatalf("len/cap: %d/%d, %d/%d", len(first), cap(first), len(second), cap(second))
		}
		for i := range second {
			second[i] = 0xFF
		}
		if string(first) != "abcdef" {
			t.Errorf("first allocation changed to %q", first)
		}
		b.Reset()
		if len(b.Ops) != 0 {
			t.Error("Reset kept ops")
		}
		again := b.Alloc(100)
		if !bytes.Equal(again, make([]byte, 100)) {
			t.Error("Alloc after Reset returned dirty bytes")
		}
	})

	t.Run("a reused batch allocates nothing after warm-up", func(t *testing.T) {
		b := memop.NewBatch(0, 0)
		run := func() {
			b.Reset()
			for range 4 {
				b.Write(0, 0, b.Alloc(20))
			}
			b.FetchAdd(0, 0, 1)
		}
		run()
		if a := testing.AllocsPerRun(100, run); a != 0 {
			t.Errorf("%v allocs per run", a)
		}
	})
}

func TestKindString(t *testing.T) {
	for k, want := range map[memop.Kind]string{memop.Write: "write", memop.WriteImm: "write-imm", memop.FetchAdd: "fetch-add", 0: "invalid", 99: "invalid"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
