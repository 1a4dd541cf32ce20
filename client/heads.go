package client

import (
	"context"
	"net/http"
	"strconv"
)

// ListHead is the head of one Append list: the entries published to it so
// far.
type ListHead struct {
	List uint32 `json:"list"`
	Head uint64 `json:"head"`
}

// headsPage is one answer of GET /v1/stores/{store}/append.
type headsPage struct {
	Lists uint32     `json:"lists"`
	Heads []ListHead `json:"heads"`
	Next  *uint32    `json:"next"`
}

// AppendHeads returns the head of every list of an Append store, in list
// order, reading the server's pages of up to 10000 lists.
func (c *Client) AppendHeads(ctx context.Context, store string) ([]ListHead, error) {
	var heads []ListHead
	first := uint32(0)
	for {
		var page headsPage
		u := c.storePath(store, "/append") + "?limit=10000&first=" + strconv.FormatUint(uint64(first), 10)
		if err := c.do(ctx, http.MethodGet, u, nil, &page); err != nil {
			return nil, err
		}
		heads = append(heads, page.Heads...)
		if page.Next == nil || *page.Next <= first {
			return heads, nil
		}
		first = *page.Next
	}
}
