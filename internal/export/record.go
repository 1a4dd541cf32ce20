package export

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protowire"
)

// The schema's message names, sent in every record's "dta-schema" header.
const (
	SchemaAppendEntry  = "dta.export.v1.AppendEntry"
	SchemaPostcardPath = "dta.export.v1.PostcardPath"
	SchemaSlotChange   = "dta.export.v1.SlotChange"
)

// Primitive names in records (the schema's Primitive enum).
const (
	primitiveKeyWrite     = 1
	primitiveKeyIncrement = 2
)

var primitiveNames = map[int32]string{1: "PRIMITIVE_KEY_WRITE", 2: "PRIMITIVE_KEY_INCREMENT", 3: "PRIMITIVE_POSTCARD", 4: "PRIMITIVE_APPEND"}

var causeNames = map[int32]string{1: "PATH_CAUSE_COMPLETE", 2: "PATH_CAUSE_EVICTED", 3: "PATH_CAUSE_EXPIRED"}

// AppendEntry is one exported Append entry (the schema's AppendEntry).
type AppendEntry struct {
	Collector        string `json:"collector"`
	Store            string `json:"store"`
	List             uint32 `json:"list"`
	Index            uint64 `json:"index"`
	Data             []byte `json:"data"`
	ReadTimeUnixNano uint64 `json:"read_time_unix_nano"`
	LostBefore       uint64 `json:"lost_before,omitempty"`
	// Generation names the list's numbering the index belongs to: the
	// same (collector, store, list, generation, index) is always the same
	// entry (see appendtail.go and the schema).
	Generation uint64 `json:"generation"`
}

// Hop is one hop of a PostcardPath.
type Hop struct {
	Hop   uint32 `json:"hop"`
	Value uint32 `json:"value"`
}

// PostcardPath is one exported path (the schema's PostcardPath). Cause is
// the schema's PathCause number.
type PostcardPath struct {
	Collector    string `json:"collector"`
	Store        string `json:"store"`
	Key          []byte `json:"key"`
	Hops         []Hop  `json:"hops"`
	PathLength   uint32 `json:"path_length"`
	Cause        int32  `json:"-"`
	TimeUnixNano uint64 `json:"time_unix_nano"`
}

// SlotChange is one exported changed slot (the schema's SlotChange).
// Primitive is the schema's Primitive number.
type SlotChange struct {
	Collector    string `json:"collector"`
	Store        string `json:"store"`
	Primitive    int32  `json:"-"`
	Slot         uint64 `json:"slot"`
	Data         []byte `json:"data,omitempty"`
	Checksum     uint32 `json:"checksum,omitempty"`
	Value        []byte `json:"value,omitempty"`
	Counter      uint64 `json:"counter"`
	Previous     uint64 `json:"previous"`
	Interval     uint64 `json:"interval"`
	TimeUnixNano uint64 `json:"time_unix_nano"`
}

// MarshalJSON encodes the path with its cause by name, as proto3 JSON does.
func (p PostcardPath) MarshalJSON() ([]byte, error) {
	type plain PostcardPath
	return json.Marshal(struct {
		plain
		Cause string `json:"cause"`
	}{plain(p), causeNames[p.Cause]})
}

// MarshalJSON encodes the change with its primitive by name.
func (c SlotChange) MarshalJSON() ([]byte, error) {
	type plain SlotChange
	return json.Marshal(struct {
		plain
		Primitive string `json:"primitive"`
	}{plain(c), primitiveNames[c.Primitive]})
}

// AppendProto appends the record's protobuf encoding to dst.
func (r *AppendEntry) AppendProto(dst []byte) []byte {
	dst = appendString(dst, 1, r.Collector)
	dst = appendString(dst, 2, r.Store)
	dst = appendVarint(dst, 3, uint64(r.List))
	dst = appendVarint(dst, 4, r.Index)
	dst = appendBytes(dst, 5, r.Data)
	dst = appendVarint(dst, 6, r.ReadTimeUnixNano)
	dst = appendVarint(dst, 7, r.LostBefore)
	dst = appendVarint(dst, 8, r.Generation)
	return dst
}

// AppendProto appends the record's protobuf encoding to dst.
func (p *PostcardPath) AppendProto(dst []byte) []byte {
	dst = appendString(dst, 1, p.Collector)
	dst = appendString(dst, 2, p.Store)
	dst = appendBytes(dst, 3, p.Key)
	for _, h := range p.Hops {
		var hb [16]byte
		m := appendVarint(hb[:0], 1, uint64(h.Hop))
		m = appendVarint(m, 2, uint64(h.Value))
		dst = protowire.AppendTag(dst, 4, protowire.BytesType)
		dst = protowire.AppendBytes(dst, m)
	}
	dst = appendVarint(dst, 5, uint64(p.PathLength))
	dst = appendVarint(dst, 6, uint64(p.Cause))
	dst = appendVarint(dst, 7, p.TimeUnixNano)
	return dst
}

// AppendProto appends the record's protobuf encoding to dst.
func (c *SlotChange) AppendProto(dst []byte) []byte {
	dst = appendString(dst, 1, c.Collector)
	dst = appendString(dst, 2, c.Store)
	dst = appendVarint(dst, 3, uint64(c.Primitive))
	dst = appendVarint(dst, 4, c.Slot)
	dst = appendBytes(dst, 5, c.Data)
	dst = appendVarint(dst, 6, uint64(c.Checksum))
	dst = appendBytes(dst, 7, c.Value)
	dst = appendVarint(dst, 8, c.Counter)
	dst = appendVarint(dst, 9, c.Previous)
	dst = appendVarint(dst, 10, c.Interval)
	dst = appendVarint(dst, 11, c.TimeUnixNano)
	return dst
}

// proto3 leaves fields at their zero value out of the encoding.

func appendVarint(dst []byte, n protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, n, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

func appendBytes(dst []byte, n protowire.Number, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, n, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

func appendString(dst []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, n, protowire.BytesType)
	return protowire.AppendString(dst, s)
}
