package query

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/dta-go/dta/internal/store"
)

// notificationJSON is one line of the notification stream.
type notificationJSON struct {
	Store  string `json:"store"`
	Offset uint64 `json:"offset"`
	Imm    uint32 `json:"imm"`
}

// notifications streams write-with-immediate notifications as NDJSON until
// the client goes away.
func (s *Server) notifications(w http.ResponseWriter, r *http.Request, _ *store.Store) *apiError {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	if r.Method == http.MethodHead { // the headers a GET would start with; no stream to hold open
		h := w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	ch, cancel := s.cat.Subscribe(s.cfg.NotifyBuffer)
	defer cancel()
	s.stats.Streams.Add(1)
	defer s.stats.Streams.Add(-1)

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives any WriteTimeout
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return nil
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return nil
		case n := <-ch:
			if enc.Encode(notificationJSON{Store: n.Store, Offset: n.Offset, Imm: n.Imm}) != nil {
				return nil
			}
			s.stats.Notifications.Add(1)
			// Write what else is queued (a bounded amount) before flushing once.
			for more, i := true, 0; more && i < 256; i++ {
				select {
				case n := <-ch:
					if enc.Encode(notificationJSON{Store: n.Store, Offset: n.Offset, Imm: n.Imm}) != nil {
						return nil
					}
					s.stats.Notifications.Add(1)
				default:
					more = false
				}
			}
			if rc.Flush() != nil {
				return nil
			}
		}
	}
}
