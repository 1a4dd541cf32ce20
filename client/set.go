package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// Set queries several collectors as one deployment: a key is read from the
// collector the shared partition function (package partition) names as its
// owner — the one translators and DART reporters wrote it to — and, when the
// owner cannot answer, from its replicas in preference order. Batches are
// split by owner and sent to the collectors at once (scatter-gather), then
// put back in the caller's order. Sketch-Merge reads add the collectors'
// sketches up (they are linear).
//
// Members are named as the translators name them: "[NAME=]URL"; a member
// given without a name is asked its name (GET /healthz).
type Set struct {
	members  []*Client
	pm       *partition.Map
	replicas int
}

// NewSet connects to the collectors of servers ("[NAME=]URL" each) with
// replicas holding each key (1: the owner only; translator.replicas). opts
// apply to every member.
func NewSet(ctx context.Context, servers []string, replicas int, hc *http.Client, opts ...Option) (*Set, error) {
	if len(servers) == 0 {
		return nil, errors.New("client set: no servers")
	}
	s := &Set{replicas: replicas}
	names := make([]string, len(servers))
	for i, item := range servers {
		name, u, named := strings.Cut(item, "=")
		if !named || strings.Contains(name, "/") {
			name, u = "", item
		}
		c, err := New(u, hc, opts...)
		if err != nil {
			return nil, err
		}
		if name == "" {
			var h struct {
				Name string `json:"name"`
			}
			if err := c.do(ctx, http.MethodGet, c.base+"/healthz", nil, &h); err != nil {
				return nil, fmt.Errorf("client set: asking %s its name (or give NAME=URL): %w", u, err)
			}
			if h.Name == "" {
				return nil, fmt.Errorf("client set: %s has no name; give NAME=URL", u)
			}
			name = h.Name
		}
		names[i] = name
		s.members = append(s.members, c)
	}
	pm, err := partition.New(names)
	if err != nil {
		return nil, fmt.Errorf("client set: %w", err)
	}
	if replicas < 1 || replicas > len(names) {
		return nil, fmt.Errorf("client set: replicas %d out of range [1, %d]", replicas, len(names))
	}
	s.pm = pm
	return s, nil
}

// At returns a Set reading every member as of a kept epoch (Client.At).
func (s *Set) At(at string) *Set {
	n := *s
	n.members = make([]*Client, len(s.members))
	for i, c := range s.members {
		n.members[i] = c.At(at)
	}
	return &n
}

// Names returns the members' names, in the order given.
func (s *Set) Names() []string { return s.pm.Names() }

// Owners returns the members holding key (its text form, as dta query
// takes it), owner first.
func (s *Set) Owners(key string) ([]int, error) {
	k, err := dta.ParseKey(key)
	if err != nil {
		return nil, err
	}
	return s.pm.Owners(nil, k.Bytes, s.replicas), nil
}

// try calls fn on key's owner, then on its replicas while the previous
// member could not answer (a transport error or a 5xx).
func try[T any](s *Set, key string, fn func(c *Client) (T, error)) (T, error) {
	var zero T
	owners, err := s.Owners(key)
	if err != nil {
		return zero, err
	}
	var errs []error
	for _, o := range owners {
		v, err := fn(s.members[o])
		if err == nil || !unavailable(err) {
			return v, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.pm.Name(o), err))
	}
	return zero, errors.Join(errs...)
}

// unavailable reports whether err means the member could not answer (as
// opposed to an answer such as 404).
func unavailable(err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.StatusCode >= 500
	}
	return true
}

// UnansweredError is a batch lookup's error when the owners (and replicas)
// of some keys could not answer while the others did: the results returned
// with it are those of every key, and valid for every key not in Keys
// (whose entries hold zero values). A program that can use a partial answer
// takes it; one that cannot treats it as any error.
type UnansweredError struct {
	Keys  []int // indices, in the keys asked, of the keys not answered, ascending
	Total int   // keys asked
	Err   error // why: each member that could not answer, with its error
}

// Error says how many keys went unanswered and why.
func (e *UnansweredError) Error() string {
	return fmt.Sprintf("%d of %d keys unanswered (their collectors could not answer): %v", len(e.Keys), e.Total, e.Err)
}

// Unwrap returns why.
func (e *UnansweredError) Unwrap() error { return e.Err }

// gather splits keys by owner, runs fn on every owner's share at once, and
// puts the answers back in the order of keys; a share whose owner cannot
// answer goes to the next replica. Keys none of whose members can answer are
// reported in an *UnansweredError, with the other keys' answers.
func gather[T any](ctx context.Context, s *Set, keys []string, fn func(c *Client, keys []string) ([]T, error)) ([]T, error) {
	ranked := make([][]int, len(keys))
	for i, k := range keys {
		o, err := s.Owners(k)
		if err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		ranked[i] = o
	}
	out := make([]T, len(keys))
	pending := make([]int, len(keys)) // indices still to answer
	for i := range pending {
		pending[i] = i
	}
	for round := 0; round < s.replicas && len(pending) > 0; round++ {
		share := map[int][]int{}
		for _, i := range pending {
			share[ranked[i][round]] = append(share[ranked[i][round]], i)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var next []int
		var errs []error
		for m, idx := range share {
			wg.Go(func() {
				ks := make([]string, len(idx))
				for j, i := range idx {
					ks[j] = keys[i]
				}
				res, err := fn(s.members[m], ks)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					for j, i := range idx {
						out[i] = res[j]
					}
				case unavailable(err):
					next = append(next, idx...)
					errs = append(errs, fmt.Errorf("%s: %w", s.pm.Name(m), err))
				default:
					errs = append(errs, err)
					next = nil
				}
			})
		}
		wg.Wait()
		for _, e := range errs {
			if !unavailable(e) {
				return nil, e
			}
		}
		if len(next) > 0 && round == s.replicas-1 {
			slices.Sort(next)
			return out, &UnansweredError{Keys: next, Total: len(keys), Err: errors.Join(errs...)}
		}
		pending = next
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// KeyWrite looks key up on its owner (then replicas).
func (s *Set) KeyWrite(ctx context.Context, store, key string, opt KeyWriteOptions) (KeyWriteResult, error) {
	return try(s, key, func(c *Client) (KeyWriteResult, error) { return c.KeyWrite(ctx, store, key, opt) })
}

// KeyWriteBatch looks keys up, each on its owner, in their order.
// Keys whose every member is down are named in an *UnansweredError,
// returned with the other keys' answers.
func (s *Set) KeyWriteBatch(ctx context.Context, store string, keys []string, opt KeyWriteOptions) ([]KeyWriteResult, error) {
	return gather(ctx, s, keys, func(c *Client, ks []string) ([]KeyWriteResult, error) { return c.KeyWriteBatch(ctx, store, ks, opt) })
}

// KeyIncrement reads key's count on its owner (then replicas).
func (s *Set) KeyIncrement(ctx context.Context, store, key string, n int) (KeyIncrementResult, error) {
	return try(s, key, func(c *Client) (KeyIncrementResult, error) { return c.KeyIncrement(ctx, store, key, n) })
}

// KeyIncrementBatch reads keys' counts, each on its owner.
// Keys whose every member is down are named in an *UnansweredError,
// returned with the other keys' answers.
func (s *Set) KeyIncrementBatch(ctx context.Context, store string, keys []string, n int) ([]KeyIncrementResult, error) {
	return gather(ctx, s, keys, func(c *Client, ks []string) ([]KeyIncrementResult, error) {
		return c.KeyIncrementBatch(ctx, store, ks, n)
	})
}

// Postcard reads key's path on its owner (then replicas).
func (s *Set) Postcard(ctx context.Context, store, key string) (PostcardResult, error) {
	return try(s, key, func(c *Client) (PostcardResult, error) { return c.Postcard(ctx, store, key) })
}

// PostcardBatch reads keys' paths, each on its owner.
// Keys whose every member is down are named in an *UnansweredError,
// returned with the other keys' answers.
func (s *Set) PostcardBatch(ctx context.Context, store string, keys []string) ([]PostcardResult, error) {
	return gather(ctx, s, keys, func(c *Client, ks []string) ([]PostcardResult, error) { return c.PostcardBatch(ctx, store, ks) })
}

// SketchCounters adds up epoch's counters of every collector: the sketch of
// all their reporters' streams. Every collector must answer.
func (s *Set) SketchCounters(ctx context.Context, store string, epoch int64) (SketchCounters, error) {
	res := make([]SketchCounters, len(s.members))
	errs := make([]error, len(s.members))
	var wg sync.WaitGroup
	for i, c := range s.members {
		wg.Go(func() { res[i], errs[i] = c.SketchCounters(ctx, store, epoch) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return SketchCounters{}, fmt.Errorf("%s: %w", s.pm.Name(i), err)
		}
	}
	sum := res[0]
	for _, r := range res[1:] {
		if r.Epoch != sum.Epoch {
			return SketchCounters{}, fmt.Errorf("collectors read different epochs (%d, %d): give the epoch", sum.Epoch, r.Epoch)
		}
		if err := sum.Add(r); err != nil {
			return SketchCounters{}, err
		}
	}
	return sum, nil
}

// SketchEstimate is key's point estimate in the merged sketch of epoch.
func (s *Set) SketchEstimate(ctx context.Context, store, key string, epoch int64) (SketchEstimate, error) {
	m, err := s.SketchCounters(ctx, store, epoch)
	if err != nil {
		return SketchEstimate{}, err
	}
	return m.Estimate(key)
}

// Estimate is key's point estimate in these counters (count-min: minimum
// over the rows; count-sketch: median of sign × counter), with the sketch
// hash contract of package sketch.
func (m *SketchCounters) Estimate(key string) (SketchEstimate, error) {
	k, err := dta.ParseKey(key)
	if err != nil {
		return SketchEstimate{}, err
	}
	kind, err := sketch.ParseKind(m.Kind)
	if err != nil {
		return SketchEstimate{}, err
	}
	if m.Rows > sketch.MaxRows || len(m.Counters) != m.Rows {
		return SketchEstimate{}, fmt.Errorf("sketch of %d rows", m.Rows)
	}
	h := sketch.Key(k.Bytes)
	var cs [sketch.MaxRows]int64
	for r := range m.Rows {
		col := h.Column(r, m.Columns)
		if col >= uint64(len(m.Counters[r])) {
			return SketchEstimate{}, fmt.Errorf("row %d has %d counters, not %d", r, len(m.Counters[r]), m.Columns)
		}
		cs[r] = m.Counters[r][col]
	}
	return SketchEstimate{Key: key, Epoch: m.Epoch, Estimate: sketch.Estimate(kind, h, cs[:m.Rows])}, nil
}
