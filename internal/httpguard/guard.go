package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/internal/ratelog"
)

// Access is who may call a server. A Guard's Access can be replaced while it
// serves (SetAccess); each request is judged wholly by the old or the new.
type Access struct {
	// Tokens are the accepted bearer tokens; nil turns authentication off
	// (every request may do everything).
	Tokens *Tokens
	// Open lists paths served without a token (exact match), e.g. /healthz.
	Open []string
}

// Validate checks the open paths.
func (a Access) Validate() error {
	for i, p := range a.Open {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
			return fmt.Errorf("open_paths[%d]: %q is not a path (want e.g. /healthz)", i, p)
		}
	}
	return nil
}

// Limits bound what clients may take from a server. They are fixed for the
// server's life.
type Limits struct {
	ReadHeaderTimeout time.Duration // to read a request's headers (slow-header clients)
	ReadTimeout       time.Duration // to read a whole request, body included
	WriteTimeout      time.Duration // to write a response (long polls and streams extend their own)
	IdleTimeout       time.Duration // a keep-alive connection waiting for its next request
	MaxHeaderBytes    int           // request line and headers
	MaxBodyBytes      int64         // request body
	MaxRequests       int           // requests served at once (streams not included), and bodies received at once
	MaxStreams        int           // long polls and notification streams open at once
}

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		MaxBodyBytes:      4 << 20,
		MaxRequests:       256,
		MaxStreams:        128,
	}
}

// Validate reports the first field out of range, naming it as the
// configuration file does.
func (l Limits) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read_header_timeout", l.ReadHeaderTimeout}, {"read_timeout", l.ReadTimeout},
		{"write_timeout", l.WriteTimeout}, {"idle_timeout", l.IdleTimeout},
	} {
		if d.v <= 0 || d.v > time.Hour {
			return fmt.Errorf("%s: %v out of range (0, 1h]", d.name, d.v)
		}
	}
	switch {
	case l.ReadHeaderTimeout > l.ReadTimeout:
		return fmt.Errorf("read_header_timeout: %v is longer than read_timeout %v", l.ReadHeaderTimeout, l.ReadTimeout)
	case l.MaxHeaderBytes < 4<<10 || l.MaxHeaderBytes > 16<<20:
		return fmt.Errorf("max_header_bytes: %d out of range [4KiB, 16MiB]", l.MaxHeaderBytes)
	case l.MaxBodyBytes < 1<<10 || l.MaxBodyBytes > 1<<30:
		return fmt.Errorf("max_body_bytes: %d out of range [1KiB, 1GiB]", l.MaxBodyBytes)
	case l.MaxRequests < 1 || l.MaxRequests > 1<<20:
		return fmt.Errorf("max_requests: %d out of range [1, 1048576]", l.MaxRequests)
	case l.MaxStreams < 0 || l.MaxStreams > 1<<20:
		return fmt.Errorf("max_streams: %d out of range [0, 1048576]", l.MaxStreams)
	}
	return nil
}

// Config configures a Guard.
type Config struct {
	Access Access
	Limits Limits
	// Admin reports whether a request changes state and so needs an admin
	// token. Nil: no request does.
	Admin func(*http.Request) bool
	// Public reports whether a request is served without a token whatever
	// the Access says: pages that carry no data (the dashboard's static
	// assets). Nil: none is.
	Public func(*http.Request) bool
	// Stream reports whether a request may stay open long (a long poll, a
	// stream): it takes one of MaxStreams instead of MaxRequests. Its handler
	// must extend or lift its own write deadline (http.ResponseController),
	// as internal/query's do. Nil: no request is a stream.
	Stream func(*http.Request) bool
	// TLS, when set, serves HTTPS with its certificate (Serve).
	TLS *Certificate
	// Realm names the server in WWW-Authenticate (default "dta").
	Realm string
}

// Guard is the middleware and server settings of one HTTP server.
type Guard struct {
	cfg     Config
	access  atomic.Pointer[accessState]
	cop     *http.CrossOriginProtection
	reqs    chan struct{}
	bodies  chan struct{}
	streams chan struct{}
	stats   Stats
	logger  *slog.Logger
	limiter *ratelog.Limiter
}

type accessState struct {
	Access
}

// New returns a guard. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Guard, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Access.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Realm == "" {
		cfg.Realm = "dta"
	}
	g := &Guard{
		cfg:     cfg,
		cop:     http.NewCrossOriginProtection(),
		reqs:    make(chan struct{}, cfg.Limits.MaxRequests),
		bodies:  make(chan struct{}, cfg.Limits.MaxRequests),
		streams: make(chan struct{}, cfg.Limits.MaxStreams),
		logger:  logger,
		limiter: ratelog.New(logger, int(NumReasons), 10*time.Second),
	}
	g.access.Store(&accessState{Access: cloneAccess(cfg.Access)})
	return g, nil
}

func cloneAccess(a Access) Access {
	a.Open = slices.Clone(a.Open)
	return a
}

// SetAccess replaces who may call the server, atomically.
func (g *Guard) SetAccess(a Access) error {
	if err := a.Validate(); err != nil {
		return err
	}
	g.access.Store(&accessState{Access: cloneAccess(a)})
	return nil
}

// Access returns who may call the server now.
func (g *Guard) Access() Access { return cloneAccess(g.access.Load().Access) }

// Stats returns the guard's counters.
func (g *Guard) Stats() *Stats { return &g.stats }

// Limits returns the limits the guard enforces.
func (g *Guard) Limits() Limits { return g.cfg.Limits }

// Handler wraps next: cross-origin protection, authentication, body size
// and receipt, concurrency.
//
// A request with a body has it received whole (bounded by MaxBodyBytes)
// before it takes one of MaxRequests, while it holds one of as many body
// slots: a client that sends its body slowly, or not at all, holds a body
// slot until ReadTimeout ends it, and never the slots that GETs and
// /healthz need.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.stats.Requests.Add(1)
		// A browser page of another site may send simple POSTs here (a
		// form); such requests must not change state or read with a body.
		if g.cop.Check(r) != nil {
			g.refuse(w, r, ReasonCrossOrigin, "")
			return
		}
		a := g.access.Load()
		if a.Tokens != nil && !slices.Contains(a.Open, r.URL.Path) && (g.cfg.Public == nil || !g.cfg.Public(r)) {
			if reason := g.authenticate(a, r); reason != NumReasons {
				g.refuse(w, r, reason, "")
				return
			}
		}
		if r.ContentLength > g.cfg.Limits.MaxBodyBytes {
			g.refuse(w, r, ReasonBodyTooLarge, "")
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			buf, ok := g.receive(w, r)
			if !ok {
				return
			}
			defer putBuffer(buf)
		}
		if g.cfg.Stream != nil && g.cfg.Stream(r) {
			select {
			case g.streams <- struct{}{}:
			default:
				g.refuse(w, r, ReasonTooManyStreams, "")
				return
			}
			g.stats.Streams.Add(1)
			defer func() { <-g.streams; g.stats.Streams.Add(-1) }()
		} else {
			select {
			case g.reqs <- struct{}{}:
			default:
				g.refuse(w, r, ReasonTooManyRequests, "")
				return
			}
			g.stats.InFlight.Add(1)
			defer func() { <-g.reqs; g.stats.InFlight.Add(-1) }()
		}
		next.ServeHTTP(w, r)
	})
}

// Unrouted returns the handler of every request a small server (one
// without an API of its own, as the translator's /metrics and /healthz)
// does not route: a JSON 405 with Allow for a path of paths asked with
// another method, a JSON 404 for any other path, both counted (no_route,
// method). paths maps each served path to its methods (GET implies HEAD).
func (g *Guard) Unrouted(paths map[string][]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods, ok := paths[r.URL.Path]
		if !ok {
			g.refuse(w, r, ReasonNoRoute, "")
			return
		}
		allow := slices.Clone(methods)
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		g.refuse(w, r, ReasonMethod, strings.Join(allow, ", "))
	})
}

// receive reads r's body whole into a pooled buffer, holding a body slot
// while it does, and replaces r.Body with it. When the body cannot be had
// it answers the request and returns false.
func (g *Guard) receive(w http.ResponseWriter, r *http.Request) (*bytes.Buffer, bool) {
	select {
	case g.bodies <- struct{}{}:
	default:
		g.refuse(w, r, ReasonTooManyRequests, fmt.Sprintf("busy: %d request bodies being received; retry after 1 s", g.cfg.Limits.MaxRequests))
		return nil, false
	}
	g.stats.Bodies.Add(1)
	buf := bufferPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, g.cfg.Limits.MaxBodyBytes))
	g.stats.Bodies.Add(-1)
	<-g.bodies
	if err != nil {
		putBuffer(buf)
		var tooLarge *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooLarge):
			g.refuse(w, r, ReasonBodyTooLarge, "")
		case errors.As(err, &ne) && ne.Timeout():
			g.refuse(w, r, ReasonBodyTimeout, "")
		default:
			g.refuse(w, r, ReasonBadBody, err.Error())
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	r.ContentLength = int64(buf.Len())
	return buf, true
}

// bufferPool holds request body buffers; putBuffer keeps only small ones.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 {
		bufferPool.Put(b)
	}
}

// authenticate returns why r may not proceed, or NumReasons when it may.
func (g *Guard) authenticate(a *accessState, r *http.Request) Reason {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return ReasonMissingToken
	}
	scheme, tok, ok := strings.Cut(h[0], " ")
	if len(h) != 1 || !ok || !strings.EqualFold(scheme, "Bearer") || !validToken([]byte(tok)) || len(tok) > MaxTokenLen {
		return ReasonMalformedToken
	}
	role := a.Tokens.Lookup(tok)
	switch {
	case role == RoleNone:
		return ReasonInvalidToken
	case role < RoleAdmin && g.cfg.Admin != nil && g.cfg.Admin(r):
		return ReasonForbidden
	}
	return NumReasons
}

// errorBody is a refusal as the query API answers errors.
type errorBody struct {
	Message string `json:"error"`
	Field   string `json:"field,omitempty"`
}

// refuse answers, counts and (at a bounded rate) logs a refused request.
// detail, when not empty, says more (a body's read error).
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, reason Reason, detail string) {
	g.stats.Refused[reason].Add(1)
	if ok, n := g.limiter.Allow(int(reason), time.Now().UnixNano()); ok {
		g.logger.Warn("http request refused", "reason", reason.String(), "remote", r.RemoteAddr,
			"method", r.Method, "path", shortPath(r.URL.Path), "suppressed", n)
	}
	h := w.Header()
	status := reason.Status()
	realm := strconv.Quote(g.cfg.Realm)
	var msg string
	switch reason {
	case ReasonMissingToken:
		h.Set("WWW-Authenticate", "Bearer realm="+realm)
		msg = "authentication required: send Authorization: Bearer <token>"
	case ReasonMalformedToken:
		h.Set("WWW-Authenticate", "Bearer realm="+realm+`, error="invalid_request"`)
		msg = "malformed Authorization header: want exactly one, of the form Bearer <token>"
	case ReasonInvalidToken:
		h.Set("WWW-Authenticate", "Bearer realm="+realm+`, error="invalid_token"`)
		msg = "invalid token"
	case ReasonForbidden:
		h.Set("WWW-Authenticate", "Bearer realm="+realm+`, error="insufficient_scope"`)
		msg = fmt.Sprintf("%s %s changes state and needs an admin token; this token has the read role", r.Method, shortPath(r.URL.Path))
	case ReasonBodyTooLarge:
		msg = fmt.Sprintf("body: larger than %d bytes", g.cfg.Limits.MaxBodyBytes)
		h.Set("Connection", "close")
	case ReasonTooManyRequests:
		h.Set("Retry-After", "1")
		msg = fmt.Sprintf("busy: %d requests in progress; retry after 1 s", g.cfg.Limits.MaxRequests)
		if detail != "" {
			msg = detail
		}
	case ReasonTooManyStreams:
		h.Set("Retry-After", "1")
		msg = fmt.Sprintf("busy: %d streams and long polls open; retry after 1 s", g.cfg.Limits.MaxStreams)
	case ReasonCrossOrigin:
		msg = fmt.Sprintf("%s %s: refused from a web page of another origin (Origin %s); only this server's own pages, and programs that send no Origin, may", r.Method, shortPath(r.URL.Path), shortPath(r.Header.Get("Origin")))
	case ReasonBodyTimeout:
		msg = fmt.Sprintf("body: not received within %v (read_timeout)", g.cfg.Limits.ReadTimeout)
		h.Set("Connection", "close")
	case ReasonBadBody:
		msg = "body: could not be read: " + shortText(detail)
		h.Set("Connection", "close")
	case ReasonNoRoute:
		msg = fmt.Sprintf("no endpoint %s %s", r.Method, shortPath(r.URL.Path))
	case ReasonMethod:
		msg = fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, shortPath(r.URL.Path), detail)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	body := errorBody{Message: msg}
	switch {
	case reason == ReasonCrossOrigin:
		body.Field = "Origin"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		body.Field = "Authorization"
	}
	_ = enc.Encode(body)
}

// shortText bounds text from outside in a message.
func shortText(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// shortPath bounds a request path from outside in a log line: its first
// 80 bytes, invalid UTF-8 replaced. It is not quoted: the log handler
// quotes and escapes what needs it (a quoted path was quoted twice).
func shortPath(p string) string {
	if len(p) > 80 {
		return strings.ToValidUTF8(p[:80], "\uFFFD") + "..."
	}
	return strings.ToValidUTF8(p, "\uFFFD")
}
