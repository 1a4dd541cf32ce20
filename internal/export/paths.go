package export

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

// pathItem is a path copied out of the translator's cache: a value, so
// queueing it allocates nothing.
type pathItem struct {
	t       int64
	store   uint16
	keyLen  uint8
	present uint8
	pathLen uint8
	cause   postcard.Cause
	key     [dta.MaxKeyLen]byte
	vals    [hashing.MaxHops]uint32
}

// PathObserver returns the function to give the translator's postcard cache
// (postcard.Cache.SetObserver): it queues every path written out, naming
// stores by names (the translator's store table, by index). It never blocks
// and never allocates; a full queue drops the path and counts it. Nil when
// the paths stream is off.
func (e *Exporter) PathObserver(names []string) func(postcard.Path) {
	if e.paths == nil {
		return nil
	}
	n := append([]string(nil), names...)
	e.names.Store(&n)
	return func(p postcard.Path) {
		it := pathItem{t: time.Now().UnixNano(), store: p.Store, keyLen: uint8(len(p.Key)), present: p.Present,
			pathLen: p.PathLen, cause: p.Cause, vals: *p.Values}
		copy(it.key[:], p.Key)
		select {
		case e.paths <- it:
			e.stats.PathQueue.Add(1)
		default:
			e.stats.Dropped[StreamPaths][DropQueueFull].Add(1)
		}
	}
}

// drainPaths sends queued paths until ctx ends.
func (e *Exporter) drainPaths(ctx context.Context) {
	for {
		if e.room() <= 0 {
			e.waitRoom(50 * time.Millisecond)
			if ctx.Err() != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case it := <-e.paths:
			e.stats.PathQueue.Add(-1)
			e.sendPath(&it)
		}
	}
}

// takePaths sends what is queued, as far as there is room; it reports
// whether paths are left.
func (e *Exporter) takePaths() bool {
	for e.room() > 0 {
		select {
		case it := <-e.paths:
			e.stats.PathQueue.Add(-1)
			e.sendPath(&it)
		default:
			return false
		}
	}
	return len(e.paths) > 0
}

func (e *Exporter) sendPath(it *pathItem) {
	name := "?"
	if names := e.names.Load(); names != nil && int(it.store) < len(*names) {
		name = (*names)[it.store]
	}
	key := it.key[:it.keyLen]
	rec := PostcardPath{Collector: e.cfg.Collector, Store: name, Key: key, PathLength: uint32(it.pathLen),
		Cause: int32(it.cause), TimeUnixNano: uint64(it.t)}
	for h := range hashing.MaxHops {
		if it.present&(1<<h) != 0 {
			rec.Hops = append(rec.Hops, Hop{Hop: uint32(h + 1), Value: it.vals[h]})
		}
	}
	rkey := make([]byte, 0, len(name)+1+2*len(key))
	rkey = append(append(rkey, name...), '/')
	rkey = hex.AppendEncode(rkey, key)
	item := *it
	e.produce(StreamPaths, e.cfg.Topics.Paths, rkey, e.encode(&rec), e.headers(StreamPaths), func(err error) {
		if err != nil && !e.closing.Load() {
			e.retryPath(&item, err)
		}
	})
}

// retryPath queues a path the brokers did not take again, behind the new
// ones, unless their error is final (counted refused) or the queue is full
// (counted queue_full): the path queue bounds the resends too.
func (e *Exporter) retryPath(it *pathItem, err error) {
	if refusedForGood(err) {
		e.stats.Dropped[StreamPaths][DropRefused].Add(1)
		return
	}
	select {
	case e.paths <- *it:
		e.stats.PathQueue.Add(1)
	default:
		e.stats.Dropped[StreamPaths][DropQueueFull].Add(1)
	}
}
