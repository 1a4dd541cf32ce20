package query

import (
	"net/http"

	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// hopJSON is one hop of a decoded path; Value is absent for a hole.
type hopJSON struct {
	Hop     int     `json:"hop"`
	Value   *uint32 `json:"value,omitempty"`
	Present bool    `json:"present"`
}

// postcardResult is one Postcarding answer.
type postcardResult struct {
	Key      string    `json:"key"`
	Status   string    `json:"status"`
	Hops     []hopJSON `json:"hops"`
	PathLen  int       `json:"path_len"`
	Complete bool      `json:"complete"`
	Valid    int       `json:"valid"`
	Copies   int       `json:"copies"`
}

type postcardBatchResponse struct {
	Results []postcardResult `json:"results"`
}

func (s *Server) postcard(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	k, _, err := singleKey(r.URL.RawQuery)
	if err != nil {
		return err
	}
	res, err := s.lookupPostcard(st, []dta.Key{k})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res[0])
	return nil
}

func (s *Server) postcardBatch(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	req, err := decodeBatch(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), s.cfg.MaxBatch, batchFields{})
	if err != nil {
		return err
	}
	keys, err := parseKeys(req.Keys)
	if err != nil {
		return err
	}
	res, err := s.lookupPostcard(st, keys)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, postcardBatchResponse{Results: res})
	return nil
}

func (s *Server) lookupPostcard(st *store.Store, keys []dta.Key) ([]postcardResult, *apiError) {
	if st.Postcard == nil {
		return nil, internal(errNoStoreKind)
	}
	out := make([]postcardResult, len(keys))
	var buf [4]byte
	var hops []postcard.Hop
	for i, k := range keys {
		res, err := st.Postcard.Query(hashedKey(dta.Postcard, k, &buf), hops)
		if err != nil {
			return nil, internal(err)
		}
		hops = res.Hops[:0]
		pr := postcardResult{Key: k.String(), Status: res.Status.String(), Hops: make([]hopJSON, len(res.Hops)),
			PathLen: res.PathLen, Complete: res.Complete, Valid: res.Valid, Copies: res.Copies}
		for j, h := range res.Hops {
			pr.Hops[j] = hopJSON{Hop: j + 1, Present: h.Present}
			if h.Present {
				v := h.Value
				pr.Hops[j].Value = &v
			}
		}
		out[i] = pr
	}
	s.stats.Keys.Add(uint64(len(keys)))
	return out, nil
}
