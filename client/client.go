package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxBatch is the most keys the batch methods send in one request (the
// server's default limit); longer key lists are split.
const MaxBatch = 10000

// FollowWait is how long each poll of Follow waits on the server for entries
// (below the server's 30 s maximum).
const FollowWait = 25 * time.Second

// Client calls one collector's query API. It is safe for concurrent use.
type Client struct {
	base  string // scheme://host[:port][/prefix], no trailing slash
	hc    *http.Client
	token string // bearer token; "" sends none
	at    string // ?at= on every request (At); "" reads the live stores
	// maxResponse bounds one JSON answer (WithMaxResponseBytes).
	maxResponse int64
}

// New returns a client of the API at baseURL (for example
// "http://127.0.0.1:8040", or "https://collector.example:8040" for a
// collector serving TLS). hc may be nil for a client without a timeout:
// long polls and the notification stream last long, so bound calls with
// their context rather than http.Client.Timeout. Options add a bearer token
// (WithToken) and TLS settings (WithTLS).
func New(baseURL string, hc *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT", baseURL)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), hc: hc, maxResponse: DefaultMaxResponseBytes}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// storePath returns the URL of a store's resource.
func (c *Client) storePath(store, rest string) string {
	return c.base + "/v1/stores/" + url.PathEscape(store) + rest
}

// ErrNoStore is returned for a request that names no store (an empty name).
var ErrNoStore = errors.New("client: empty store name")

// do sends a request and decodes a 200 answer into out.
func (c *Client) do(ctx context.Context, method, u string, body any, out any) error {
	resp, err := c.send(ctx, method, u, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	// http.MaxBytesReader bounds a body (any body: it needs no
	// ResponseWriter) and says when the bound was hit.
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, c.maxResponse)).Decode(out); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return fmt.Errorf("%s %s: the answer is larger than %d bytes (client.WithMaxResponseBytes)", method, u, c.maxResponse)
		}
		return fmt.Errorf("%s %s: decode answer: %w", method, u, err)
	}
	return nil
}

// send sends a request and returns a 2xx response, or the server's *Error.
func (c *Client) send(ctx context.Context, method, u string, body any) (*http.Response, error) {
	if strings.Contains(u, "/v1/stores//") {
		return nil, ErrNoStore
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	if c.at != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + "at=" + url.QueryEscape(c.at)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{StatusCode: resp.StatusCode}
	if json.Unmarshal(raw, e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return nil, e
}

// Stores lists the collector's stores.
func (c *Client) Stores(ctx context.Context) ([]Store, error) {
	var out struct {
		Stores []Store `json:"stores"`
	}
	err := c.do(ctx, http.MethodGet, c.base+"/v1/stores", nil, &out)
	return out.Stores, err
}

// Store describes one store, given by name or numeric id.
func (c *Client) Store(ctx context.Context, store string) (Store, error) {
	var out Store
	err := c.do(ctx, http.MethodGet, c.storePath(store, ""), nil, &out)
	return out, err
}

type batchBody struct {
	Keys      []string `json:"keys"`
	N         int      `json:"n,omitempty"`
	Threshold int      `json:"threshold,omitempty"`
}

// batch runs one batch request per MaxBatch keys and concatenates the results.
func batch[T any](ctx context.Context, c *Client, u string, keys []string, n, threshold int) ([]T, error) {
	if len(keys) == 0 {
		return nil, errors.New("batch: no keys")
	}
	out := make([]T, 0, len(keys))
	for start := 0; start < len(keys); start += MaxBatch {
		part := keys[start:min(start+MaxBatch, len(keys))]
		var resp struct {
			Results []T `json:"results"`
		}
		if err := c.do(ctx, http.MethodPost, u, batchBody{Keys: part, N: n, Threshold: threshold}, &resp); err != nil {
			return nil, err
		}
		if len(resp.Results) != len(part) {
			return nil, fmt.Errorf("batch: %d results for %d keys", len(resp.Results), len(part))
		}
		out = append(out, resp.Results...)
	}
	return out, nil
}

// KeyWrite looks key up in a Key-Write store.
func (c *Client) KeyWrite(ctx context.Context, store, key string, opt KeyWriteOptions) (KeyWriteResult, error) {
	q := url.Values{"key": {key}}
	if opt.N != 0 {
		q.Set("n", strconv.Itoa(opt.N))
	}
	if opt.Threshold != 0 {
		q.Set("threshold", strconv.Itoa(opt.Threshold))
	}
	var out KeyWriteResult
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/keywrite?"+q.Encode()), nil, &out)
	return out, err
}

// KeyWriteBatch looks keys up in a Key-Write store; results are in the order
// of keys.
func (c *Client) KeyWriteBatch(ctx context.Context, store string, keys []string, opt KeyWriteOptions) ([]KeyWriteResult, error) {
	return batch[KeyWriteResult](ctx, c, c.storePath(store, "/keywrite:batch"), keys, opt.N, opt.Threshold)
}

// KeyIncrement returns key's count in a Key-Increment store: the minimum of
// its first n counters (0: all of the store's N, the tightest estimate).
func (c *Client) KeyIncrement(ctx context.Context, store, key string, n int) (KeyIncrementResult, error) {
	q := url.Values{"key": {key}}
	if n != 0 {
		q.Set("n", strconv.Itoa(n))
	}
	var out KeyIncrementResult
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/keyincrement?"+q.Encode()), nil, &out)
	return out, err
}

// KeyIncrementBatch returns the counts of keys, in their order.
func (c *Client) KeyIncrementBatch(ctx context.Context, store string, keys []string, n int) ([]KeyIncrementResult, error) {
	return batch[KeyIncrementResult](ctx, c, c.storePath(store, "/keyincrement:batch"), keys, n, 0)
}

// ResetKeyIncrement zeroes every counter of a Key-Increment store.
func (c *Client) ResetKeyIncrement(ctx context.Context, store string) error {
	return c.do(ctx, http.MethodPost, c.storePath(store, "/keyincrement:reset"), nil, nil)
}

// Postcard returns the path of the flow key in a Postcarding store.
func (c *Client) Postcard(ctx context.Context, store, key string) (PostcardResult, error) {
	var out PostcardResult
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/postcard?"+url.Values{"key": {key}}.Encode()), nil, &out)
	return out, err
}

// PostcardBatch returns the paths of keys, in their order.
func (c *Client) PostcardBatch(ctx context.Context, store string, keys []string) ([]PostcardResult, error) {
	return batch[PostcardResult](ctx, c, c.storePath(store, "/postcard:batch"), keys, 0, 0)
}

// Cursor is where an Append poll starts. The zero Cursor is FromHead.
type Cursor struct {
	index  uint64
	at     bool
	oldest bool
}

// CursorAt starts at absolute entry index i (a NextCursor of an earlier poll).
func CursorAt(i uint64) Cursor { return Cursor{index: i, at: true} }

// Cursors that start at the list's current head (only entries appended from
// now on) and at its oldest entry still in memory.
var (
	FromHead   = Cursor{}
	FromOldest = Cursor{oldest: true}
)

// String returns the cursor as the CLI's --cursor flag takes it.
func (c Cursor) String() string {
	switch {
	case c.at:
		return strconv.FormatUint(c.index, 10)
	case c.oldest:
		return "oldest"
	}
	return "head"
}

// ParseCursor parses a decimal entry index, "oldest" or "head".
func ParseCursor(s string) (Cursor, error) {
	switch s {
	case "head", "":
		return FromHead, nil
	case "oldest":
		return FromOldest, nil
	}
	i, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return Cursor{}, fmt.Errorf("cursor %q: want an entry index, oldest or head", s)
	}
	return CursorAt(i), nil
}

// AppendOptions tune one Append poll.
type AppendOptions struct {
	// Limit is the most entries returned; 0 means the server's default (1000).
	Limit int
	// Wait is how long the server waits for a first entry when none is
	// available (at most 30 s); 0 returns at once.
	Wait time.Duration
}

// Append polls list of an Append store once, from cur.
func (c *Client) Append(ctx context.Context, store string, list uint32, cur Cursor, opt AppendOptions) (AppendResult, error) {
	q := url.Values{}
	switch {
	case cur.at:
		q.Set("cursor", strconv.FormatUint(cur.index, 10))
	case cur.oldest:
		q.Set("from", "oldest")
	}
	if opt.Limit != 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	if opt.Wait > 0 {
		q.Set("wait", opt.Wait.String())
	}
	u := c.storePath(store, "/append/"+strconv.FormatUint(uint64(list), 10))
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var out AppendResult
	err := c.do(ctx, http.MethodGet, u, nil, &out)
	return out, err
}

// AppendHead returns the number of entries published to list so far.
func (c *Client) AppendHead(ctx context.Context, store string, list uint32) (uint64, error) {
	var out struct {
		Head uint64 `json:"head"`
	}
	err := c.do(ctx, http.MethodGet, c.storePath(store, "/append/"+strconv.FormatUint(uint64(list), 10)+"/head"), nil, &out)
	return out.Head, err
}

// ResetAppend empties every list of an Append store.
func (c *Client) ResetAppend(ctx context.Context, store string) error {
	return c.do(ctx, http.MethodPost, c.storePath(store, "/append:reset"), nil, nil)
}

// Follow calls fn with every entry of list from cur on, as entries arrive
// (long polls of FollowWait), until ctx is done (it returns ctx.Err()), fn
// returns an error (returned as is), or a poll fails. An entry preceded by
// entries the writer overwrote before they could be read carries their count
// in Lost. When the list is reset under it, Follow returns an *Error with
// StatusCode 409 and the list's new Head.
func (c *Client) Follow(ctx context.Context, store string, list uint32, cur Cursor, fn func(Entry) error) error {
	var lost uint64
	for {
		res, err := c.Append(ctx, store, list, cur, AppendOptions{Wait: FollowWait})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		lost += res.Lost
		for _, e := range res.Entries {
			e.Lost, lost = lost, 0
			if err := fn(e); err != nil {
				return err
			}
		}
		cur = CursorAt(res.NextCursor)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Notifications calls fn with every write with immediate the collector
// receives from now on, until ctx is done (it returns ctx.Err()), fn returns
// an error, or the stream breaks.
func (c *Client) Notifications(ctx context.Context, fn func(Notification) error) error {
	resp, err := c.send(ctx, http.MethodGet, c.base+"/v1/notifications", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var n Notification
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			return fmt.Errorf("notification %q: %w", sc.Text(), err)
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("notification stream: %w", err)
	}
	return errors.New("notification stream: closed by the server")
}
