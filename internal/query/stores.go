package query

import (
	"net/http"

	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// storeInfo is a store as GET /v1/stores describes it.
type storeInfo struct {
	Name        string   `json:"name"`
	ID          uint16   `json:"id"`
	Primitive   string   `json:"primitive"`
	Default     bool     `json:"default"`
	Geometry    geometry `json:"geometry"`
	RegionBytes uint64   `json:"region_bytes"`
	Backing     string   `json:"backing"`
}

// geometry is a store's Spec; only its primitive's fields are present.
type geometry struct {
	Hash          string  `json:"hash,omitempty"`
	Slots         uint64  `json:"slots,omitempty"`
	SlotSize      uint64  `json:"slot_size,omitempty"`
	ValueSize     int     `json:"value_size,omitempty"`
	MaxRedundancy int     `json:"max_redundancy,omitempty"`
	Chunks        uint64  `json:"chunks,omitempty"`
	Hops          int     `json:"hops,omitempty"`
	Redundancy    int     `json:"redundancy,omitempty"`
	MinValue      *uint32 `json:"min_value,omitempty"`
	MaxValue      *uint32 `json:"max_value,omitempty"`
	Lists         uint32  `json:"lists,omitempty"`
	Capacity      uint64  `json:"capacity,omitempty"`
	EntrySize     int     `json:"entry_size,omitempty"`
	Batch         int     `json:"batch,omitempty"`
	Rows          int     `json:"rows,omitempty"`
	Columns       uint64  `json:"columns,omitempty"`
	Epochs        int     `json:"epochs,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	Buckets       uint64  `json:"buckets,omitempty"`
	Cells         int     `json:"cells,omitempty"`
	KeySize       int     `json:"key_size,omitempty"`
	Scratchpad    int     `json:"scratchpad,omitempty"`
}

func describe(st *store.Store) storeInfo {
	info := storeInfo{
		Name:        st.Name,
		ID:          st.ID,
		Primitive:   st.Primitive.String(),
		Default:     st.Default,
		RegionBytes: st.Region.Size(),
		Backing:     st.Region.Backing(),
	}
	g := &info.Geometry
	switch st.Primitive {
	case dta.KeyWrite:
		s := st.Descriptor.KeyWrite
		g.Hash, g.Slots, g.SlotSize, g.ValueSize, g.MaxRedundancy = s.Hash.String(), s.Slots, s.SlotSize(), s.ValueSize, s.MaxRedundancy
	case dta.KeyIncrement:
		s := st.Descriptor.KeyIncrement
		g.Hash, g.Slots, g.SlotSize, g.Redundancy = s.Hash.String(), s.Slots, keyincrement.CounterSize, s.Redundancy
	case dta.Postcard:
		s := st.Descriptor.Postcard
		g.Hash, g.Chunks, g.Hops, g.Redundancy = s.Hash.String(), s.Chunks, s.Hops, s.Redundancy
		g.MinValue, g.MaxValue = &s.MinValue, &s.MaxValue
	case dta.Append:
		s := st.Descriptor.Append
		g.Lists, g.Capacity, g.EntrySize, g.Batch = s.Lists, s.Capacity, s.EntrySize, s.Batch
	case dta.SketchMerge:
		s := st.Descriptor.SketchMerge
		g.Rows, g.Columns, g.Epochs, g.Kind = s.Rows, s.Columns, s.Epochs, s.Kind.String()
	case dta.TeaTable:
		s := st.Descriptor.TeaTable
		g.Hash, g.Buckets, g.Cells, g.KeySize, g.ValueSize, g.Scratchpad = s.Hash.String(), s.Buckets, s.Cells, s.KeySize, s.ValueSize, s.Scratchpad
	}
	return info
}

type storesResponse struct {
	Stores []storeInfo `json:"stores"`
}

func (s *Server) listStores(w http.ResponseWriter, r *http.Request, _ *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	cat := s.catalog(r)
	resp := storesResponse{Stores: make([]storeInfo, 0, len(cat.Stores()))}
	for _, st := range cat.Stores() {
		resp.Stores = append(resp.Stores, describe(st))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) getStore(w http.ResponseWriter, r *http.Request, st *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, describe(st))
	return nil
}
