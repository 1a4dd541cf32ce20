package query

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/dta-go/dta/internal/store"
)

// History gives queries the collector's past epochs (durable stores with
// history, internal/snapshot): checkpoints kept read-only.
type History interface {
	// Epochs lists the epochs kept, oldest first.
	Epochs() []Epoch
	// Open resolves at (an epoch number, an RFC 3339 time, or a clock time
	// HH:MM[:SS] of today) to a kept epoch and returns its stores, to be
	// released when the request is done. An at that names no kept epoch
	// wraps ErrNoEpoch; a malformed one is any other error.
	Open(at string) (*store.Catalog, Epoch, func(), error)
}

// ErrNoEpoch is wrapped by History.Open for an at that names no kept epoch.
var ErrNoEpoch = errors.New("no such epoch")

// Epoch is one kept checkpoint as GET /v1/epochs lists it.
type Epoch struct {
	Epoch  uint64    `json:"epoch"`
	Time   time.Time `json:"time"`
	Full   bool      `json:"full"`
	Parent uint64    `json:"parent,omitempty"`
	Bytes  int64     `json:"bytes"`
}

type epochsResponse struct {
	Durable bool    `json:"durable"`
	Epochs  []Epoch `json:"epochs"`
}

// listEpochs answers GET /v1/epochs.
func (s *Server) listEpochs(w http.ResponseWriter, r *http.Request, _ *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	resp := epochsResponse{Epochs: []Epoch{}}
	if h := s.cfg.History; h != nil {
		resp.Durable = true
		resp.Epochs = append(resp.Epochs, h.Epochs()...)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// atCatalog returns the stores a request reads: the live ones, or with
// ?at= those of a kept epoch (and the function that releases them). It
// refuses at where it means nothing: on requests that change state, on
// waits and on the notification stream.
func (s *Server) atCatalog(w http.ResponseWriter, r *http.Request, rt route) (*store.Catalog, func(), *apiError) {
	q := r.URL.Query()
	if !q.Has("at") {
		return s.cat, func() {}, nil
	}
	at := q.Get("at")
	switch {
	case len(q["at"]) > 1:
		return nil, nil, invalid("at", "at: given %d times, want once", len(q["at"]))
	case ChangesState(r) || rt.endpoint == EndpointNotifications || rt.endpoint == EndpointEpochs:
		return nil, nil, invalid("at", "at: %s %s acts on the live stores only", r.Method, quote(r.URL.Path))
	case waits(q.Get("wait")):
		return nil, nil, invalid("at", "at: an epoch does not change; drop wait")
	case s.cfg.History == nil:
		return nil, nil, invalid("at", "at: this collector keeps no history (start it with --data-dir and history ≥ 1)")
	}
	cat, e, release, err := s.cfg.History.Open(at)
	if err != nil {
		if errors.Is(err, ErrNoEpoch) {
			return nil, nil, &apiError{status: http.StatusNotFound, reason: ReasonUnknownEpoch, Field: "at", Message: err.Error()}
		}
		if isAtSyntax(err) {
			return nil, nil, invalid("at", "%v", err)
		}
		return nil, nil, internal(fmt.Errorf("open epoch for at=%s: %w", quote(at), err))
	}
	w.Header().Set("X-DTA-Epoch", strconv.FormatUint(e.Epoch, 10))
	w.Header().Set("X-DTA-Epoch-Time", e.Time.UTC().Format(time.RFC3339Nano))
	return cat, release, nil
}

// waits reports whether a wait parameter asks to wait (absent, zero in any
// spelling, and malformed values do not: the handler rejects the last).
func waits(wait string) bool {
	d, err := parseWait(wait)
	return wait != "" && err == nil && d > 0
}

// ErrAtSyntax is wrapped by History.Open for an at it cannot parse.
var ErrAtSyntax = errors.New("bad at")

func isAtSyntax(err error) bool { return errors.Is(err, ErrAtSyntax) }

type catalogKey struct{}

func withCatalog(ctx context.Context, cat *store.Catalog) context.Context {
	return context.WithValue(ctx, catalogKey{}, cat)
}

// catalog returns the stores r reads (see atCatalog).
func (s *Server) catalog(r *http.Request) *store.Catalog {
	if cat, ok := r.Context().Value(catalogKey{}).(*store.Catalog); ok {
		return cat
	}
	return s.cat
}
