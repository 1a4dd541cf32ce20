package query

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/store"
)

// entryJSON is one Append entry.
type entryJSON struct {
	Index    uint64   `json:"index"`
	Value    hexBytes `json:"value"`
	ValueU32 *uint32  `json:"value_u32,omitempty"`
}

// appendResponse is the answer to one Append poll.
type appendResponse struct {
	List       uint32      `json:"list"`
	Entries    []entryJSON `json:"entries"`
	NextCursor uint64      `json:"next_cursor"`
	Lost       uint64      `json:"lost"`
	Head       uint64      `json:"head"`
}

type headResponse struct {
	List uint32 `json:"list"`
	Head uint64 `json:"head"`
}

// list resolves the {list} path segment of an Append store.
func appendList(r *http.Request, st *store.Store) (uint32, *apiError) {
	if st.Append == nil {
		return 0, internal(errNoStoreKind)
	}
	list, err := parseList(r.PathValue("list"))
	if err != nil {
		return 0, err
	}
	if n := st.Append.Spec().Lists; list >= n {
		return 0, &apiError{status: http.StatusNotFound, reason: ReasonUnknownList, Field: "list",
			Message: fmt.Sprintf("list: %d is beyond store %q's %d lists (0..%d)", list, st.Name, n, n-1)}
	}
	return list, nil
}

func cursorAhead(cursor, head uint64) *apiError {
	return &apiError{status: http.StatusConflict, reason: ReasonCursorAhead, Field: "cursor", Head: &head,
		Message: fmt.Sprintf("cursor: %d is ahead of the list's head %d (the list was reset or its writer restarted); poll again from the head or from=oldest", cursor, head)}
}

// appendPoll returns the entries of a list from a cursor, waiting up to the
// request's wait for the first one to arrive.
func (s *Server) appendPoll(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	list, aerr := appendList(r, st)
	if aerr != nil {
		return aerr
	}
	p, aerr := parseAppendQuery(r.URL.RawQuery, &s.cfg)
	if aerr != nil {
		return aerr
	}
	al := st.Append
	cursor := p.cursor
	if !p.hasCursor && !p.oldest {
		h, err := al.Head(list)
		if err != nil {
			return internal(err)
		}
		cursor = h
	}
	res, err := al.Poll(list, cursor, p.limit, nil)
	if p.wait > 0 && err == nil && res.Count == 0 && res.Next == cursor {
		// Nothing yet: long-poll. Extend the write deadline past the wait so
		// that a server WriteTimeout shorter than it does not cut us off.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(p.wait + 10*time.Second))
		res, err = s.waitEntries(r, al, list, cursor, p.limit, p.wait, res)
		if r.Context().Err() != nil {
			return nil // the client went away; nobody to answer
		}
	}
	if errors.Is(err, appendlist.ErrCursorAhead) {
		return cursorAhead(cursor, res.Head)
	}
	if err != nil {
		return internal(err)
	}
	es := al.Spec().EntrySize
	resp := appendResponse{List: list, Entries: make([]entryJSON, res.Count), NextCursor: res.Next, Lost: res.Lost, Head: res.Head}
	if p.oldest {
		resp.Lost = 0 // the oldest readable entry is where the caller asked to start
	}
	for i := range res.Count {
		v := res.Data[i*es : (i+1)*es]
		resp.Entries[i] = entryJSON{Index: res.First + uint64(i), Value: v, ValueU32: u32(v)}
	}
	s.stats.Entries.Add(uint64(res.Count))
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// waitEntries polls list's head every PollInterval until it moves past
// cursor, wait elapses or the request is cancelled, and returns the last
// poll's result. The head word is the only thing read while nothing arrives.
func (s *Server) waitEntries(r *http.Request, al *appendlist.Store, list uint32, cursor uint64, limit int, wait time.Duration, last appendlist.PollResult) (appendlist.PollResult, error) {
	s.stats.LongPolls.Add(1)
	defer s.stats.LongPolls.Add(-1)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	seen := last.Head
	for {
		select {
		case <-r.Context().Done():
			return last, nil
		case <-deadline.C:
			return last, nil
		case <-tick.C:
		}
		h, err := al.Head(list)
		if err != nil {
			return last, err
		}
		if h == seen {
			continue
		}
		seen = h
		res, err := al.Poll(list, cursor, limit, nil)
		if err != nil || res.Count > 0 || res.Next != cursor {
			return res, err
		}
		last = res
	}
}

func (s *Server) appendHead(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	list, aerr := appendList(r, st)
	if aerr != nil {
		return aerr
	}
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	h, err := st.Append.Head(list)
	if err != nil {
		return internal(err)
	}
	writeJSON(w, http.StatusOK, headResponse{List: list, Head: h})
	return nil
}

// headsResponse is the answer to GET /v1/stores/{store}/append: the heads of
// a page of the store's lists.
type headsResponse struct {
	Lists uint32         `json:"lists"`
	Heads []headResponse `json:"heads"`
	Next  *uint32        `json:"next,omitempty"` // first list of the next page; absent on the last
}

// maxHeads bounds the lists one heads request returns (16 bytes or so of
// JSON each).
const maxHeads = 10000

// appendHeads returns the heads of lists first..first+limit-1 of the store.
func (s *Server) appendHeads(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if st.Append == nil {
		return internal(errNoStoreKind)
	}
	q, aerr := parseQuery(r.URL.RawQuery, "first", "limit")
	if aerr != nil {
		return aerr
	}
	n := st.Append.Spec().Lists
	first, aerr := intParam(q, "first", 0, int(n)-1, 0)
	if aerr != nil {
		return aerr
	}
	limit, aerr := intParam(q, "limit", 1, maxHeads, 1000)
	if aerr != nil {
		return aerr
	}
	end := min(uint64(first)+uint64(limit), uint64(n))
	resp := headsResponse{Lists: n, Heads: make([]headResponse, 0, end-uint64(first))}
	for l := uint32(first); uint64(l) < end; l++ {
		h, err := st.Append.Head(l)
		if err != nil {
			return internal(err)
		}
		resp.Heads = append(resp.Heads, headResponse{List: l, Head: h})
	}
	if end < uint64(n) {
		next := uint32(end)
		resp.Next = &next
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) appendReset(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if st.Append == nil {
		return internal(errNoStoreKind)
	}
	st.Append.Reset()
	s.resetDone(w, st)
	return nil
}
