package query

import (
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// hexBytes is a byte string that JSON carries as lowercase hex without prefix.
type hexBytes []byte

// MarshalText encodes h as hex.
func (h hexBytes) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, h), nil }

// UnmarshalText decodes hex.
func (h *hexBytes) UnmarshalText(b []byte) error {
	v, err := hex.AppendDecode(nil, b)
	*h = v
	return err
}

// u32 returns the big-endian value of a 4-byte value (compat data), else nil.
func u32(b []byte) *uint32 {
	if len(b) != 4 {
		return nil
	}
	v := binary.BigEndian.Uint32(b)
	return &v
}

// keyWriteResult is one Key-Write answer.
type keyWriteResult struct {
	Key      string   `json:"key"`
	Status   string   `json:"status"`
	Value    hexBytes `json:"value,omitempty"`
	ValueU32 *uint32  `json:"value_u32,omitempty"`
	Votes    int      `json:"votes"`
	Checks   int      `json:"checks"`
	Copies   int      `json:"copies"`
}

type keyWriteBatchResponse struct {
	Results []keyWriteResult `json:"results"`
}

// keyIncrementResult is one Key-Increment answer.
type keyIncrementResult struct {
	Key    string `json:"key"`
	Count  uint64 `json:"count"`
	Copies int    `json:"copies"`
}

type keyIncrementBatchResponse struct {
	Results []keyIncrementResult `json:"results"`
}

// parseKeys parses every key of a batch, naming the first bad one.
func parseKeys(texts []string) ([]dta.Key, *apiError) {
	keys := make([]dta.Key, len(texts))
	for i, t := range texts {
		k, err := parseKey("keys["+strconv.Itoa(i)+"]", t)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

// singleKey parses the query string of a single-key lookup.
func singleKey(raw string, params ...string) (dta.Key, url.Values, *apiError) {
	q, err := parseQuery(raw, append([]string{"key"}, params...)...)
	if err != nil {
		return dta.Key{}, nil, err
	}
	k, err := parseKey("key", q.Get("key"))
	return k, q, err
}

func (s *Server) keyWrite(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	k, q, err := singleKey(r.URL.RawQuery, "n", "threshold")
	if err != nil {
		return err
	}
	n, err := intParam(q, "n", 0, maxParam, 0)
	if err != nil {
		return err
	}
	threshold, err := intParam(q, "threshold", 0, maxParam, 0)
	if err != nil {
		return err
	}
	res, err := s.lookupKeyWrite(st, []dta.Key{k}, n, threshold)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res[0])
	return nil
}

func (s *Server) keyWriteBatch(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	req, err := decodeBatch(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), s.cfg.MaxBatch, batchFields{n: true, threshold: true})
	if err != nil {
		return err
	}
	keys, err := parseKeys(req.Keys)
	if err != nil {
		return err
	}
	res, err := s.lookupKeyWrite(st, keys, req.N, req.Threshold)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyWriteBatchResponse{Results: res})
	return nil
}

func (s *Server) lookupKeyWrite(st *store.Store, keys []dta.Key, n, threshold int) ([]keyWriteResult, *apiError) {
	if st.KeyWrite == nil {
		return nil, internal(errNoStoreKind)
	}
	n, aerr := redundancy(n, threshold, st.KeyWrite.Spec().MaxRedundancy, "maximum redundancy", true)
	if aerr != nil {
		return nil, aerr
	}
	// One QueryBatch for every key: it overlaps the keys' cache misses.
	bufs := make([][4]byte, len(keys))
	hashed := make([][]byte, len(keys))
	for i, k := range keys {
		hashed[i] = hashedKey(dta.KeyWrite, k, &bufs[i])
	}
	results := make([]keywrite.Result, len(keys))
	vals := make([]byte, len(keys)*st.KeyWrite.Spec().ValueSize)
	if err := st.KeyWrite.QueryBatch(hashed, n, threshold, results, vals); err != nil {
		return nil, internal(err)
	}
	out := make([]keyWriteResult, len(keys))
	for i, k := range keys {
		res := results[i]
		out[i] = keyWriteResult{Key: k.String(), Status: res.Status.String(), Votes: res.Votes, Checks: res.Checks, Copies: res.Copies}
		if len(res.Value) > 0 {
			out[i].Value, out[i].ValueU32 = res.Value, u32(res.Value)
		}
	}
	s.stats.Keys.Add(uint64(len(keys)))
	return out, nil
}

func (s *Server) keyIncrement(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	k, q, err := singleKey(r.URL.RawQuery, "n")
	if err != nil {
		return err
	}
	n, err := intParam(q, "n", 0, maxParam, 0)
	if err != nil {
		return err
	}
	res, err := s.lookupKeyIncrement(st, []dta.Key{k}, n)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res[0])
	return nil
}

func (s *Server) keyIncrementBatch(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	req, err := decodeBatch(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), s.cfg.MaxBatch, batchFields{n: true})
	if err != nil {
		return err
	}
	keys, err := parseKeys(req.Keys)
	if err != nil {
		return err
	}
	res, err := s.lookupKeyIncrement(st, keys, req.N)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyIncrementBatchResponse{Results: res})
	return nil
}

func (s *Server) lookupKeyIncrement(st *store.Store, keys []dta.Key, n int) ([]keyIncrementResult, *apiError) {
	if st.KeyIncrement == nil {
		return nil, internal(errNoStoreKind)
	}
	n, aerr := redundancy(n, 0, st.KeyIncrement.Spec().Redundancy, "redundancy", false)
	if aerr != nil {
		return nil, aerr
	}
	out := make([]keyIncrementResult, len(keys))
	var buf [4]byte
	for i, k := range keys {
		count, err := st.KeyIncrement.Query(hashedKey(dta.KeyIncrement, k, &buf), n)
		if err != nil {
			return nil, internal(err)
		}
		out[i] = keyIncrementResult{Key: k.String(), Count: count, Copies: n}
	}
	s.stats.Keys.Add(uint64(len(keys)))
	return out, nil
}

func (s *Server) keyIncrementReset(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if st.KeyIncrement == nil {
		return internal(errNoStoreKind)
	}
	st.KeyIncrement.Reset()
	s.resetDone(w, st)
	return nil
}
