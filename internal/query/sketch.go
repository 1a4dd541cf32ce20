package query

import (
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// sketchEpochsResponse lists a Sketch-Merge store's epochs.
type sketchEpochsResponse struct {
	Store   string          `json:"store"`
	Kind    string          `json:"kind"`
	Rows    int             `json:"rows"`
	Columns uint64          `json:"columns"`
	Epochs  []sketchEpochJS `json:"epochs"`
	// Latest is the newest closed epoch, the default of every read.
	Latest *uint32 `json:"latest,omitempty"`
}

type sketchEpochJS struct {
	Epoch uint32 `json:"epoch"`
	State string `json:"state"`
}

// sketchEstimate is one key's point estimate.
type sketchEstimate struct {
	Key      string `json:"key"`
	Epoch    uint32 `json:"epoch"`
	Estimate int64  `json:"estimate"`
}

type sketchTopKResponse struct {
	Epoch   uint32           `json:"epoch"`
	Hitters []sketchEstimate `json:"hitters"`
}

type sketchNormsResponse struct {
	Epoch uint32  `json:"epoch"`
	L1    float64 `json:"l1"`
	L2    float64 `json:"l2"`
}

// sketchCountersResponse is a whole epoch's counters, row by row, for
// merging sketches of several collectors (they are linear: add them).
type sketchCountersResponse struct {
	Epoch    uint32    `json:"epoch"`
	Kind     string    `json:"kind"`
	Rows     int       `json:"rows"`
	Columns  uint64    `json:"columns"`
	Counters [][]int64 `json:"counters"`
}

// maxSketchCounters bounds the counters one /counters answer carries.
const maxSketchCounters = 1 << 22

// sketchEpoch returns the epoch a read names (?epoch=, default the newest
// closed one).
func sketchEpoch(q url.Values, sm *sketchmerge.Store) (uint32, *apiError) {
	if v, ok := q["epoch"]; ok {
		e, err := strconv.ParseUint(v[0], 10, 32)
		if err != nil || len(v) != 1 {
			return 0, invalid("epoch", "epoch: %s is not an epoch number (0..4294967295)", quote(v[0]))
		}
		return uint32(e), nil
	}
	e, err := sm.Latest()
	if err != nil {
		return 0, sketchErr(err)
	}
	return e, nil
}

func sketchErr(err error) *apiError {
	if errors.Is(err, sketchmerge.ErrEpoch) {
		return &apiError{status: http.StatusNotFound, reason: ReasonUnknownEpoch, Field: "epoch", Message: err.Error()}
	}
	return internal(err)
}

func (s *Server) sketchEpochs(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	sp := st.SketchMerge.Spec()
	eps, err := st.SketchMerge.Epochs()
	if err != nil {
		return internal(err)
	}
	res := sketchEpochsResponse{Store: st.Name, Kind: sp.Kind.String(), Rows: sp.Rows, Columns: sp.Columns, Epochs: []sketchEpochJS{}}
	for _, e := range eps {
		res.Epochs = append(res.Epochs, sketchEpochJS{Epoch: e.Epoch, State: e.State})
	}
	if l, err := st.SketchMerge.Latest(); err == nil {
		res.Latest = &l
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) sketchEstimate(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	k, q, err := singleKey(r.URL.RawQuery, "epoch")
	if err != nil {
		return err
	}
	e, err := sketchEpoch(q, st.SketchMerge)
	if err != nil {
		return err
	}
	var buf [4]byte
	est, serr := st.SketchMerge.Estimate(e, hashedKey(dta.SketchMerge, k, &buf))
	if serr != nil {
		return sketchErr(serr)
	}
	writeJSON(w, http.StatusOK, sketchEstimate{Key: k.String(), Epoch: e, Estimate: est})
	return nil
}

func (s *Server) sketchTopK(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	q, err := parseQuery(r.URL.RawQuery, "epoch", "k")
	if err != nil {
		return err
	}
	e, err := sketchEpoch(q, st.SketchMerge)
	if err != nil {
		return err
	}
	k, err := intParam(q, "k", 1, maxParam, 10)
	if err != nil {
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
	// A key given twice (or in two spellings of the same bytes) is one
	// candidate, named as the caller first wrote it.
	cands := make([][]byte, 0, len(keys))
	byBytes := make(map[string]string, len(keys))
	for _, key := range keys {
		var buf [4]byte
		b := hashedKey(dta.SketchMerge, key, &buf)
		if _, dup := byBytes[string(b)]; dup {
			continue
		}
		byBytes[string(b)] = key.String()
		cands = append(cands, append([]byte(nil), b...))
	}
	hs, serr := st.SketchMerge.TopK(e, cands, k)
	if serr != nil {
		return sketchErr(serr)
	}
	res := sketchTopKResponse{Epoch: e, Hitters: make([]sketchEstimate, len(hs))}
	for i, h := range hs {
		res.Hitters[i] = sketchEstimate{Key: byBytes[string(h.Key)], Epoch: e, Estimate: h.Estimate}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) sketchNorms(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	q, err := parseQuery(r.URL.RawQuery, "epoch")
	if err != nil {
		return err
	}
	e, err := sketchEpoch(q, st.SketchMerge)
	if err != nil {
		return err
	}
	n, serr := st.SketchMerge.Norms(e)
	if serr != nil {
		return sketchErr(serr)
	}
	writeJSON(w, http.StatusOK, sketchNormsResponse{Epoch: e, L1: finite(n.L1), L2: finite(n.L2)})
	return nil
}

func (s *Server) sketchCounters(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	q, err := parseQuery(r.URL.RawQuery, "epoch")
	if err != nil {
		return err
	}
	e, err := sketchEpoch(q, st.SketchMerge)
	if err != nil {
		return err
	}
	sp := st.SketchMerge.Spec()
	if sp.Counters() > maxSketchCounters {
		return invalid("store", "the sketch has %d counters, more than the %d one answer carries", sp.Counters(), maxSketchCounters)
	}
	res := sketchCountersResponse{Epoch: e, Kind: sp.Kind.String(), Rows: sp.Rows, Columns: sp.Columns, Counters: make([][]int64, sp.Rows)}
	for row := range sp.Rows {
		c, serr := st.SketchMerge.Row(e, row, nil)
		if serr != nil {
			return sketchErr(serr)
		}
		res.Counters[row] = c
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func finite(f float64) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

// sketchKey is the bytes a Sketch-Merge store hashes for a compat key: its
// four big-endian bytes, as the report carries it.
func sketchKey(k uint32, buf *[4]byte) []byte {
	binary.BigEndian.PutUint32(buf[:], k)
	return buf[:]
}
