package client

import (
	"encoding/hex"
	"fmt"
	"net/http"
)

// Hex is a byte string carried in JSON as lowercase hex without a prefix.
type Hex []byte

// MarshalText encodes h as hex.
func (h Hex) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, h), nil }

// UnmarshalText decodes hex.
func (h *Hex) UnmarshalText(b []byte) error {
	v, err := hex.AppendDecode(nil, b)
	if err != nil {
		return fmt.Errorf("hex value: %w", err)
	}
	*h = v
	return nil
}

// String returns the hex form.
func (h Hex) String() string { return hex.EncodeToString(h) }

// Store is one store of the collector.
type Store struct {
	Name        string   `json:"name"`
	ID          uint16   `json:"id"`
	Primitive   string   `json:"primitive"` // keywrite, keyincrement, postcard or append
	Default     bool     `json:"default"`   // receives compat reports and reports for store id 0
	Geometry    Geometry `json:"geometry"`
	RegionBytes uint64   `json:"region_bytes"` // memory the store occupies
	Backing     string   `json:"backing"`      // page backing: 4k, thp or hugetlb
}

// Geometry is a store's layout; only its primitive's fields are set.
type Geometry struct {
	Hash          string  `json:"hash,omitempty"`           // keywrite, keyincrement, postcard: crc32 or crc32c; teatable: crc64
	Slots         uint64  `json:"slots,omitempty"`          // keywrite, keyincrement
	SlotSize      uint64  `json:"slot_size,omitempty"`      // keywrite, keyincrement: bytes per slot
	ValueSize     int     `json:"value_size,omitempty"`     // keywrite, teatable
	MaxRedundancy int     `json:"max_redundancy,omitempty"` // keywrite: the largest N a report may use, the query default
	Chunks        uint64  `json:"chunks,omitempty"`         // postcard
	Hops          int     `json:"hops,omitempty"`           // postcard: the longest path
	Redundancy    int     `json:"redundancy,omitempty"`     // keyincrement: counters per key; postcard: chunks per path
	MinValue      *uint32 `json:"min_value,omitempty"`      // postcard: the hop value set is [MinValue, MaxValue]
	MaxValue      *uint32 `json:"max_value,omitempty"`      // postcard
	Lists         uint32  `json:"lists,omitempty"`          // append
	Capacity      uint64  `json:"capacity,omitempty"`       // append: entries per list's ring
	EntrySize     int     `json:"entry_size,omitempty"`     // append: bytes per entry
	Batch         int     `json:"batch,omitempty"`          // append: entries per translator write
	Rows          int     `json:"rows,omitempty"`           // sketchmerge: hash rows d
	Columns       uint64  `json:"columns,omitempty"`        // sketchmerge: counters per row w
	Epochs        int     `json:"epochs,omitempty"`         // sketchmerge: copies of the sketch
	Kind          string  `json:"kind,omitempty"`           // sketchmerge: countmin or countsketch
	Buckets       uint64  `json:"buckets,omitempty"`        // teatable: buckets (rows) of the table
	Cells         int     `json:"cells,omitempty"`          // teatable: cells per bucket
	KeySize       int     `json:"key_size,omitempty"`       // teatable: bytes per key
	Scratchpad    int     `json:"scratchpad,omitempty"`     // teatable: bytes of packet per row's scratchpad, 0 none
}

// Statuses of a Key-Write or Postcarding lookup.
const (
	StatusFound    = "found"    // a value (path) was found
	StatusEmpty    = "empty"    // nothing for this key, or too few votes
	StatusConflict = "conflict" // copies disagree
)

// KeyWriteOptions tune a Key-Write lookup.
type KeyWriteOptions struct {
	// N is the copies to read; 0 means the store's maximum redundancy.
	N int
	// Threshold is the votes a value needs; 0 means plain plurality.
	Threshold int
}

// KeyWriteResult is the answer to a Key-Write lookup.
type KeyWriteResult struct {
	Key      string  `json:"key"`    // the key in its canonical text form
	Status   string  `json:"status"` // StatusFound, StatusEmpty or StatusConflict
	Value    Hex     `json:"value,omitempty"`
	ValueU32 *uint32 `json:"value_u32,omitempty"` // the value as a big-endian number, for 4-byte values
	Votes    int     `json:"votes"`               // copies carrying the leading value
	Checks   int     `json:"checks"`              // copies whose checksum matched
	Copies   int     `json:"copies"`              // copies read (N)
}

// KeyIncrementResult is the answer to a Key-Increment lookup.
type KeyIncrementResult struct {
	Key    string `json:"key"`
	Count  uint64 `json:"count"`  // count-min estimate: never below the key's true sum
	Copies int    `json:"copies"` // counters read (n)
}

// Hop is one hop of a Postcarding path.
type Hop struct {
	Hop     int    `json:"hop"`   // 1-based
	Value   uint32 `json:"value"` // meaningful only when Present
	Present bool   `json:"present"`
}

// PostcardResult is the answer to a Postcarding lookup.
type PostcardResult struct {
	Key      string `json:"key"`
	Status   string `json:"status"`   // StatusFound, StatusEmpty or StatusConflict
	Hops     []Hop  `json:"hops"`     // up to PathLen, or to the last hop that reported when it is unknown
	PathLen  int    `json:"path_len"` // the path's length when the store shows it, else 0
	Complete bool   `json:"complete"` // the length is known and no hop is missing
	Valid    int    `json:"valid"`    // chunks that decoded as this flow's path
	Copies   int    `json:"copies"`   // chunks read (N)
}

// Entry is one Append entry.
type Entry struct {
	Index    uint64  `json:"index"` // absolute: entries appended to the list before it
	Value    Hex     `json:"value"`
	ValueU32 *uint32 `json:"value_u32,omitempty"` // the value as a big-endian number, for 4-byte entries
	// Lost is set by Follow: entries overwritten before they could be read,
	// just before this one.
	Lost uint64 `json:"-"`
}

// AppendResult is the answer to one Append poll.
type AppendResult struct {
	List       uint32  `json:"list"`
	Entries    []Entry `json:"entries"`
	NextCursor uint64  `json:"next_cursor"` // where to poll from next
	Lost       uint64  `json:"lost"`        // entries overwritten before they could be read
	Head       uint64  `json:"head"`        // entries published to the list so far
}

// Notification is one write with immediate the collector received.
type Notification struct {
	Store  string `json:"store"`
	Offset uint64 `json:"offset"` // where in the store the write landed
	Imm    uint32 `json:"imm"`    // the immediate (Key-Write: key checksum; Append: list id)
}

// Error is an error answered by the server.
type Error struct {
	StatusCode int     `json:"-"`
	Message    string  `json:"error"`
	Field      string  `json:"field,omitempty"` // the parameter at fault, when one is
	Head       *uint64 `json:"head,omitempty"`  // 409 on an Append poll: the list's head
}

// Error returns the status and the server's text.
func (e *Error) Error() string {
	return fmt.Sprintf("query API: %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}
