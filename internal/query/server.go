package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// Config configures a [Server]. Zero fields take the value of [DefaultConfig].
type Config struct {
	// MaxBatch is the most keys one batch request may carry (default 10000).
	MaxBatch int
	// MaxBodyBytes bounds a request body (default 4 MiB: room for MaxBatch
	// keys of the longest text form).
	MaxBodyBytes int64
	// MaxEntries is the largest limit of one Append poll (default 10000).
	MaxEntries int
	// DefaultEntries is the limit of an Append poll that gives none (default 1000).
	DefaultEntries int
	// MaxWait caps an Append long poll's wait (default 30 s); longer waits
	// asked for are shortened to it.
	MaxWait time.Duration
	// PollInterval is how often a long poll reads the list's head (default
	// 2 ms). The collector's CPU is not told of RDMA writes: polling memory
	// is how DTA notices new entries.
	PollInterval time.Duration
	// NotifyBuffer is the notifications a stream may fall behind by before
	// it misses some (default 4096; counted in store.SinkStats.NotifyDropped).
	NotifyBuffer int
	// History, when set, serves GET /v1/epochs and ?at= on every query (a
	// collector with durable stores). Nil: no history.
	History History
	// AfterReset, when set, is called after a store was reset through the
	// API, so the composition root can tell a local translator (for Append,
	// appendlist.Writer.Resume with head 0). It must not block.
	AfterReset func(s *store.Store)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MaxBatch:       10000,
		MaxBodyBytes:   4 << 20,
		MaxEntries:     10000,
		DefaultEntries: 1000,
		MaxWait:        30 * time.Second,
		PollInterval:   2 * time.Millisecond,
		NotifyBuffer:   4096,
	}
}

// Validate reports the first field out of range, naming it. Zero fields are
// valid (they take their defaults).
func (c Config) Validate() error {
	switch {
	case c.MaxBatch < 0 || c.MaxBatch > 1_000_000:
		return fmt.Errorf("max_batch: %d out of range [1, 1000000]", c.MaxBatch)
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("max_body_bytes: %d is negative", c.MaxBodyBytes)
	case c.MaxEntries < 0 || c.MaxEntries > 1_000_000:
		return fmt.Errorf("max_entries: %d out of range [1, 1000000]", c.MaxEntries)
	case c.DefaultEntries < 0 || (c.MaxEntries != 0 && c.DefaultEntries > c.MaxEntries):
		return fmt.Errorf("default_entries: %d out of range [1, max_entries]", c.DefaultEntries)
	case c.MaxWait < 0 || c.MaxWait > 10*time.Minute:
		return fmt.Errorf("max_wait: %v out of range (0, 10m]", c.MaxWait)
	case c.PollInterval < 0 || c.PollInterval > time.Second:
		return fmt.Errorf("poll_interval: %v out of range (0, 1s]", c.PollInterval)
	case c.NotifyBuffer < 0 || c.NotifyBuffer > 1<<20:
		return fmt.Errorf("notify_buffer: %d out of range [1, 1048576]", c.NotifyBuffer)
	}
	return nil
}

// withDefaults replaces zero (and invalid negative) fields by the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxBatch <= 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = d.MaxEntries
	}
	if c.DefaultEntries <= 0 {
		c.DefaultEntries = min(d.DefaultEntries, c.MaxEntries)
	}
	c.DefaultEntries = min(c.DefaultEntries, c.MaxEntries)
	if c.MaxWait <= 0 {
		c.MaxWait = d.MaxWait
	}
	if c.PollInterval <= 0 {
		c.PollInterval = d.PollInterval
	}
	if c.NotifyBuffer <= 0 {
		c.NotifyBuffer = d.NotifyBuffer
	}
	return c
}

// Server answers queries over a catalogue's stores. It is safe for
// concurrent use.
type Server struct {
	cat    *store.Catalog
	cfg    Config
	logger *slog.Logger
	stats  Stats
	mux    *http.ServeMux
}

// New returns a server over cat. Zero fields of cfg take their defaults (call
// cfg.Validate first to reject bad values). logger may be nil; it receives
// only internal errors, never a line per request.
func New(cat *store.Catalog, cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cat: cat, cfg: cfg.withDefaults(), logger: logger, mux: http.NewServeMux()}
	var paths []string
	allowed := map[string][]string{}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
		if allowed[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// The same paths without a method catch the other methods: 405.
	for _, p := range paths {
		s.mux.Handle(p, s.methodNotAllowed(allowed[p]))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// Handler returns the HTTP handler serving the API under /v1.
func (s *Server) Handler() http.Handler { return s.mux }

// Stats returns the server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// handlerFunc handles one request for a resolved store (nil for routes
// without {store}) and returns the error to answer with, or nil when it has
// written the response itself.
type handlerFunc func(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError

// route is one endpoint: its pattern, its Stats slot, the primitive its
// {store} must be (0: any store; routes without {store} ignore it).
type route struct {
	method   string
	path     string
	endpoint Endpoint
	hasStore bool
	prim     dta.Primitive
	handle   handlerFunc
}

// routes lists every endpoint. docs/openapi.yaml documents each of them (a
// test checks it).
func (s *Server) routes() []route {
	const st = "/v1/stores/{store}"
	return []route{
		{http.MethodGet, "/v1/stores", EndpointStores, false, 0, s.listStores},
		{http.MethodGet, st, EndpointStore, true, 0, s.getStore},
		{http.MethodGet, st + "/keywrite", EndpointKeyWrite, true, dta.KeyWrite, s.keyWrite},
		{http.MethodPost, st + "/keywrite:batch", EndpointKeyWriteBatch, true, dta.KeyWrite, s.keyWriteBatch},
		{http.MethodGet, st + "/keyincrement", EndpointKeyIncrement, true, dta.KeyIncrement, s.keyIncrement},
		{http.MethodPost, st + "/keyincrement:batch", EndpointKeyIncrementBatch, true, dta.KeyIncrement, s.keyIncrementBatch},
		{http.MethodPost, st + "/keyincrement:reset", EndpointKeyIncrementReset, true, dta.KeyIncrement, s.keyIncrementReset},
		{http.MethodGet, st + "/postcard", EndpointPostcard, true, dta.Postcard, s.postcard},
		{http.MethodPost, st + "/postcard:batch", EndpointPostcardBatch, true, dta.Postcard, s.postcardBatch},
		{http.MethodGet, st + "/append", EndpointAppendHeads, true, dta.Append, s.appendHeads},
		{http.MethodGet, st + "/append/{list}", EndpointAppend, true, dta.Append, s.appendPoll},
		{http.MethodGet, st + "/append/{list}/head", EndpointAppendHead, true, dta.Append, s.appendHead},
		{http.MethodPost, st + "/append:reset", EndpointAppendReset, true, dta.Append, s.appendReset},
		{http.MethodGet, st + "/sketchmerge", EndpointSketch, true, dta.SketchMerge, s.sketchEstimate},
		{http.MethodPost, st + "/sketchmerge:topk", EndpointSketchTopK, true, dta.SketchMerge, s.sketchTopK},
		{http.MethodGet, st + "/sketchmerge/norms", EndpointSketchNorms, true, dta.SketchMerge, s.sketchNorms},
		{http.MethodGet, st + "/sketchmerge/epochs", EndpointSketchEpochs, true, dta.SketchMerge, s.sketchEpochs},
		{http.MethodGet, st + "/sketchmerge/counters", EndpointSketchCounters, true, dta.SketchMerge, s.sketchCounters},
		{http.MethodGet, "/v1/notifications", EndpointNotifications, false, 0, s.notifications},
		{http.MethodGet, "/v1/epochs", EndpointEpochs, false, 0, s.listEpochs},
	}
}

// wrap counts the request, resolves {store} and answers errors.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.stats.Requests[rt.endpoint].Add(1)
		if rt.endpoint != EndpointNotifications {
			start := time.Now()
			defer func() { s.stats.Latency[rt.endpoint].Observe(time.Since(start)) }()
		}
		var st *store.Store
		cat, release, err := s.atCatalog(w, r, rt)
		if err == nil {
			defer release()
			r = r.WithContext(withCatalog(r.Context(), cat))
		}
		if err == nil && rt.hasStore {
			st, err = s.resolve(cat, r.PathValue("store"), rt.prim)
		}
		if err == nil {
			err = rt.handle(w, r, st)
		}
		if err != nil {
			s.fail(w, rt.endpoint, err)
		}
	})
}

// resolve finds the store named ref (a name, or else a numeric id) and checks
// its primitive.
func (s *Server) resolve(cat *store.Catalog, ref string, prim dta.Primitive) (*store.Store, *apiError) {
	st := cat.ByName(ref)
	if st == nil {
		if id, err := strconv.ParseUint(ref, 10, 16); err == nil {
			st = cat.ByID(uint16(id))
		}
	}
	if st == nil {
		return nil, &apiError{status: http.StatusNotFound, reason: ReasonUnknownStore, Field: "store",
			Message: fmt.Sprintf("no store named %s (or with that id); GET /v1/stores lists them", quote(ref))}
	}
	if prim != 0 && st.Primitive != prim {
		return nil, &apiError{status: http.StatusNotFound, reason: ReasonWrongPrimitive, Field: "store",
			Message: fmt.Sprintf("store %q is %s store, not %s store", st.Name, article(st.Primitive), article(prim))}
	}
	return st, nil
}

// article prefixes a primitive's name with its indefinite article.
func article(p dta.Primitive) string {
	if p == dta.Append {
		return "an append"
	}
	return "a " + p.String()
}

// methodNotAllowed answers a request for a path served only for other
// methods.
func (s *Server) methodNotAllowed(methods []string) http.Handler {
	allow := slices.Clone(methods)
	if slices.Contains(allow, http.MethodGet) {
		allow = append(allow, http.MethodHead)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.stats.Requests[EndpointOther].Add(1)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.fail(w, EndpointOther, &apiError{status: http.StatusMethodNotAllowed, reason: ReasonMethod,
			Message: fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
	})
}

// noRoute answers requests no pattern matched.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	s.stats.Requests[EndpointOther].Add(1)
	s.fail(w, EndpointOther, &apiError{status: http.StatusNotFound, reason: ReasonNoRoute,
		Message: fmt.Sprintf("no endpoint %s %s; see docs/API.md", r.Method, quote(r.URL.Path))})
}

// apiError is a failed request as the API answers it: {"error": ..., "field": ...}.
type apiError struct {
	status  int
	reason  Reason
	Message string  `json:"error"`
	Field   string  `json:"field,omitempty"`
	Head    *uint64 `json:"head,omitempty"` // cursor_ahead: the list's head
}

// invalid is a 400 for field (shortened when it names a caller's unknown
// parameter or JSON field of any length).
func invalid(field, format string, a ...any) *apiError {
	if len(field) > maxFieldLen {
		field = field[:maxFieldLen] + "..."
	}
	return &apiError{status: http.StatusBadRequest, reason: ReasonInvalid, Field: field, Message: fmt.Sprintf(format, a...)}
}

// maxFieldLen bounds the field an error names.
const maxFieldLen = 80

func internal(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, reason: ReasonInternal, Message: "internal error: " + err.Error()}
}

// fail counts and writes err.
func (s *Server) fail(w http.ResponseWriter, ep Endpoint, err *apiError) {
	s.stats.Errors[ep][err.reason].Add(1)
	if err.status >= 500 {
		s.logger.Error("query failed", "endpoint", ep.String(), "err", err.Message)
	}
	writeJSON(w, err.status, err)
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// quote quotes user text for an error message, shortened if long.
func quote(s string) string {
	const maxLen = 80
	if len(s) > maxLen {
		return strconv.Quote(s[:maxLen]) + fmt.Sprintf(" (%d bytes, shortened)", len(s))
	}
	return strconv.Quote(s)
}

// resetDone answers a successful reset.
func (s *Server) resetDone(w http.ResponseWriter, st *store.Store) {
	if s.cfg.AfterReset != nil {
		s.cfg.AfterReset(st)
	}
	writeJSON(w, http.StatusOK, resetResponse{Store: st.Name, Reset: true})
}

type resetResponse struct {
	Store string `json:"store"`
	Reset bool   `json:"reset"`
}

var errNoStoreKind = errors.New("store has no query store bound")
