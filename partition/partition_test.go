package partition

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"
)

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.0.%d:4791", i+1)
	}
	return out
}

func key32(k uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], k)
	return b[:]
}

func mustNew(t testing.TB, names []string) *Map {
	t.Helper()
	m, err := New(names)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewRejectsBadMemberLists(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"no members", nil},
		{"an empty name", []string{"a", ""}},
		{"a name twice", []string{"a", "b", "a"}},
		{"too many members", members(MaxMembers + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.names); err == nil {
				t.Fatalf("New(%q) accepted", tc.names)
			}
		})
	}
}

// The hashes are a contract between processes: these vectors must never
// change, or every key of a running deployment moves.
func TestHashesMatchTheirGoldenVectors(t *testing.T) {
	// Expected values from an independent bit-by-bit CRC implementation.
	for _, tc := range []struct {
		key  []byte
		want uint64
	}{
		{[]byte{}, 0x0000000000000000},
		{[]byte("123456789"), 0xe3069283cbf43926}, // the CRC-32C and CRC-32 check values
		{key32(1), 0xba0cc8c45643ef8a},
		{[]byte("tcp,10.0.0.1:5000"), 0xd333b0ca3302e194},
	} {
		if got := KeyHash(tc.key); got != tc.want {
			t.Errorf("KeyHash(% x) = %#016x, want %#016x", tc.key, got, tc.want)
		}
	}
	if ListHash(1) != KeyHash(key32(1)) {
		t.Errorf("ListHash(1) is not KeyHash of its big-endian bytes")
	}
	m := mustNew(t, []string{"10.0.0.1:4791", "10.0.0.2:4791", "10.0.0.3:4791"})
	got := make([]string, 0, 8)
	for k := range uint32(8) {
		got = append(got, m.Name(m.Owner(key32(k))))
	}
	// From an independent implementation of the rendezvous rule.
	want := []string{"10.0.0.2:4791", "10.0.0.2:4791", "10.0.0.1:4791", "10.0.0.2:4791",
		"10.0.0.3:4791", "10.0.0.3:4791", "10.0.0.1:4791", "10.0.0.2:4791"}
	if !slices.Equal(got, want) {
		t.Errorf("owners of keys 0..7 over three members:\n got %q\nwant %q", got, want)
	}
}

func TestOwnersDoNotDependOnMemberOrder(t *testing.T) {
	names := members(7)
	a := mustNew(t, names)
	rev := slices.Clone(names)
	slices.Reverse(rev)
	b := mustNew(t, rev)
	for k := range uint32(10000) {
		ka := a.Owners(nil, key32(k), 3)
		kb := b.Owners(nil, key32(k), 3)
		for i := range ka {
			if a.Name(ka[i]) != b.Name(kb[i]) {
				t.Fatalf("key %d: rank %d is %s in one order, %s in the other", k, i, a.Name(ka[i]), b.Name(kb[i]))
			}
		}
		if a.Name(a.ListOwner(k)) != b.Name(b.ListOwner(k)) {
			t.Fatalf("list %d has different owners", k)
		}
	}
}

func TestAddingAMemberMovesOnlyTheKeysItTakes(t *testing.T) {
	names := members(5)
	before := mustNew(t, names)
	after := mustNew(t, append(slices.Clone(names), "10.0.0.99:4791"))
	const n = 60000
	moved := 0
	for k := range uint32(n) {
		was, is := before.Name(before.Owner(key32(k))), after.Name(after.Owner(key32(k)))
		if was != is {
			if is != "10.0.0.99:4791" {
				t.Fatalf("key %d moved from %s to %s, not to the new member", k, was, is)
			}
			moved++
		}
	}
	// The new member should take about 1/6 of the keys.
	if frac := float64(moved) / n; math.Abs(frac-1.0/6) > 0.02 {
		t.Errorf("the new member took %.3f of the keys, want about %.3f", frac, 1.0/6)
	}
}

func TestKeysSpreadEvenlyOverMembers(t *testing.T) {
	for _, n := range []int{2, 3, 8} {
		m := mustNew(t, members(n))
		counts := make([]int, n)
		lists := make([]int, n)
		const keys = 80000
		for k := range uint32(keys) {
			counts[m.Owner(key32(k))]++
			lists[m.ListOwner(k)]++
		}
		for i := range counts {
			for what, c := range map[string]int{"keys": counts[i], "lists": lists[i]} {
				if dev := math.Abs(float64(c)/keys*float64(n) - 1); dev > 0.05 {
					t.Errorf("%d members: member %d holds %d %s, %.1f%% off an even share", n, i, c, what, 100*dev)
				}
			}
		}
	}
}

func TestOwnersAreDistinctAndStartWithTheOwner(t *testing.T) {
	m := mustNew(t, members(4))
	for k := range uint32(2000) {
		key := key32(k)
		for r := -1; r <= 6; r++ {
			got := m.Owners([]int{42}, key, r) // a prefix the call must keep
			if got[0] != 42 {
				t.Fatalf("Owners overwrote dst's prefix")
			}
			got = got[1:]
			want := min(max(r, 1), 4)
			if len(got) != want {
				t.Fatalf("Owners(r=%d) returned %d members, want %d", r, len(got), want)
			}
			if got[0] != m.Owner(key) {
				t.Fatalf("key %d: Owners starts with %d, Owner says %d", k, got[0], m.Owner(key))
			}
			s := slices.Clone(got)
			slices.Sort(s)
			if len(slices.Compact(s)) != len(got) {
				t.Fatalf("key %d: Owners(r=%d) = %v repeats a member", k, r, got)
			}
		}
	}
}

func TestLookupsDoNotAllocate(t *testing.T) {
	m := mustNew(t, members(5))
	key := key32(7)
	dst := make([]int, 0, 5)
	if n := testing.AllocsPerRun(100, func() {
		_ = m.Owner(key)
		_ = m.ListOwner(3)
		dst = m.Owners(dst[:0], key, 3)
	}); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

func BenchmarkOwner(b *testing.B) {
	for _, n := range []int{3, 16} {
		m := mustNew(b, members(n))
		key := []byte("tcp,10.0.0.1:5000")
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = m.Owner(key)
			}
		})
	}
}
