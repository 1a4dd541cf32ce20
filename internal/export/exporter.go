package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dta-go/dta/internal/store"
)

// Stream is one of the exported streams.
type Stream int

// The streams, indexing Stats' arrays.
const (
	StreamAppend Stream = iota
	StreamPaths
	StreamChanges
	NumStreams
)

// String names the stream as the metrics do.
func (s Stream) String() string {
	return [...]string{"append", "paths", "changes"}[s]
}

// DropReason is why something was not exported.
type DropReason int

// The drop reasons, indexing Stats.Dropped.
const (
	// DropQueueFull: a path arrived with the path queue full.
	DropQueueFull DropReason = iota
	// DropLapped: Append entries overwritten in their ring before the
	// exporter could read them (the brokers were too slow or gone for
	// longer than the ring holds).
	DropLapped
	// DropShutdown: records still unacknowledged when the shutdown timeout
	// ran out.
	DropShutdown
	// DropRefused: a path the brokers refused with an error that sending
	// again cannot fix (a non-retriable Kafka error such as
	// TOPIC_AUTHORIZATION_FAILED or MESSAGE_TOO_LARGE). Paths that fail
	// otherwise are queued again.
	DropRefused
	NumDropReasons
)

// String names the reason as the metrics do.
func (r DropReason) String() string {
	return [...]string{"queue_full", "lapped", "shutdown", "refused"}[r]
}

// Stats counts what the exporter did. Fields are updated atomically.
type Stats struct {
	Records [NumStreams]atomic.Uint64 // records the brokers acknowledged
	Bytes   [NumStreams]atomic.Uint64 // their value bytes
	Errors  [NumStreams]atomic.Uint64 // records that failed (Append and changes are sent again, paths queued again unless refused)
	Dropped [NumStreams][NumDropReasons]atomic.Uint64
	// BrokerErrors counts failed attempts to connect to a broker, by
	// reason (BrokerConnect, BrokerTLS, BrokerAuth), and requests whose
	// connection broke (BrokerRequest).
	BrokerErrors [NumBrokerErrors]atomic.Uint64
	// AppendLag is the Append entries published in the stores and not yet
	// acknowledged, summed over the lists (updated every poll).
	AppendLag atomic.Uint64
	// PendingBlocks is the changed store blocks not yet compared and sent.
	PendingBlocks atomic.Uint64
	// PathQueue is the paths waiting in the queue.
	PathQueue atomic.Int64
	// InFlight is the records handed to the client, not yet acknowledged.
	InFlight atomic.Int64
	// LastAck is when the brokers last acknowledged a record, Unix ns.
	LastAck atomic.Int64
	// Intervals counts the changes intervals run.
	Intervals atomic.Uint64
	// CursorResets counts the times an Append list's numbering started
	// over as the exporter saw it, each beginning a new generation: a reset
	// seen while running (read again from the oldest entry), a restart whose
	// restored head is below the saved cursor (resumed at the head), or a
	// cursor file of another geometry (once for the store).
	CursorResets atomic.Uint64
}

// Exporter sends the stores' new data to Kafka. Create it with New, hand
// PathObserver to the translator, run it with Run.
type Exporter struct {
	cfg    Config
	logger *slog.Logger
	cl     *kgo.Client
	stats  Stats

	tails   []*appendTail  // one per exported Append store
	changes []*changeStore // one per exported Key-Write / Key-Increment store
	paths   chan pathItem
	names   atomic.Pointer[[]string] // the translator's store names by index

	closing atomic.Bool
	wake    chan struct{} // a record was acknowledged: room in flight
	lastLog [NumStreams]atomic.Int64
	hdr     [NumStreams][]kgo.RecordHeader
	runOnce sync.Once
	brokers brokerWatch
	// changesInFlight is the changed slots handed to the client and not
	// yet acknowledged: a changes interval waits for them.
	changesInFlight atomic.Int64
}

// New builds an exporter over cat's stores (nil: paths only, as for a
// translator without a collector of its own). It creates the Kafka client,
// which connects in the background; an unreachable broker is not an error
// here (ingest goes on, the exporter retries and counts).
func New(cfg Config, cat *store.Catalog, logger *slog.Logger) (*Exporter, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("export.%w", err)
	}
	e := &Exporter{cfg: cfg, logger: logger.With("component", "export"), wake: make(chan struct{}, 1)}
	for s := range NumStreams {
		e.hdr[s] = e.makeHeaders(s)
	}
	if cfg.Topics.Paths != "" {
		e.paths = make(chan pathItem, cfg.PathQueue)
	}
	if cat != nil {
		if err := e.bindStores(cat); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	e.brokers.init(&e.stats, e.logger)
	opts, err := cfg.clientOptions(e.brokers.watchSASL)
	if err != nil {
		e.stop()
		return nil, fmt.Errorf("export.%w", err)
	}
	opts = append(opts, kgo.WithLogger(&kgoLogger{l: e.logger}), kgo.WithHooks(&e.brokers))
	if e.cl, err = kgo.NewClient(opts...); err != nil {
		e.stop()
		return nil, fmt.Errorf("export: kafka client: %w", err)
	}
	return e, nil
}

// bindStores picks the exported stores and prepares their readers.
func (e *Exporter) bindStores(cat *store.Catalog) error {
	want := func(name string) bool { return len(e.cfg.Stores) == 0 || slices.Contains(e.cfg.Stores, name) }
	for _, name := range e.cfg.Stores {
		s := cat.ByName(name)
		if s == nil {
			return fmt.Errorf("stores: %q is not a configured store", name)
		}
		if s.SketchMerge != nil {
			return fmt.Errorf("stores: %q is a Sketch-Merge store, which no export stream carries (name Append, Key-Write, Key-Increment or Postcarding stores)", name)
		}
	}
	saved, err := readCursorFile(e.cfg.CursorFile)
	if err != nil {
		return err
	}
	now := time.Now()
	var shadow uint64
	for _, s := range cat.Stores() {
		if !want(s.Name) {
			continue
		}
		switch {
		case s.Append != nil && e.cfg.Topics.Append != "":
			e.tails = append(e.tails, newAppendTail(s, saved.stores[s.Name], saved.clean, e.cfg.StartLatest, &e.stats, now))
		case (s.KeyWrite != nil || s.KeyIncrement != nil) && e.cfg.Topics.Changes != "":
			shadow += s.Region.Size()
			if shadow > e.cfg.MaxShadowBytes {
				return fmt.Errorf("changes: the Key-Write and Key-Increment stores up to %s need %d bytes of shadow copy, more than max_shadow_bytes %d (name fewer stores in export.stores or raise the bound)", s.Name, shadow, e.cfg.MaxShadowBytes)
			}
			c, err := newChangeStore(s)
			if err != nil {
				return err
			}
			e.changes = append(e.changes, c)
		}
	}
	return nil
}

// stop releases the change trackers (New failed or Run ended).
func (e *Exporter) stop() {
	for _, c := range e.changes {
		c.tracker.Stop()
	}
}

// Stats returns the exporter's counters.
func (e *Exporter) Stats() *Stats { return &e.stats }

// Config returns the configuration in effect (defaults filled in).
func (e *Exporter) Config() Config { return e.cfg }

// Run exports until ctx ends, then sends what is left (Append entries up to
// the heads, queued paths, changed slots) within ShutdownTimeout, saves the
// cursors and closes the client. Stop every writer (translator) before
// ctx ends so that the final send holds everything. Run may be called once.
func (e *Exporter) Run(ctx context.Context) error {
	ran := false
	e.runOnce.Do(func() { ran = true })
	if !ran {
		return errors.New("export: Run called twice")
	}
	defer e.stop()
	var wg sync.WaitGroup
	if len(e.tails) > 0 {
		if e.cfg.CursorFile != "" {
			// Before anything is sent: a crash from here on must not find a
			// file that says the last stop was clean.
			if err := e.saveCursors(false); err != nil {
				e.logger.Error("saving the export cursors failed; a crash before the next save may reuse Append generations", "err", err)
			}
			wg.Go(func() {
				e.every(ctx, time.Second, func() {
					if err := e.saveCursors(false); err != nil {
						e.logger.Warn("saving the export cursors failed", "err", err)
					}
				})
			})
		}
		wg.Go(func() { e.every(ctx, e.cfg.PollInterval, func() { e.pollAppend() }) })
	}
	wg.Go(func() { e.probe(ctx) })
	if e.paths != nil {
		wg.Go(func() { e.drainPaths(ctx) })
	}
	if len(e.changes) > 0 {
		wg.Go(func() { e.every(ctx, e.cfg.ChangesInterval, e.exportChanges) })
	}
	<-ctx.Done()
	wg.Wait()
	return e.finish()
}

// every runs fn each interval until ctx ends.
func (e *Exporter) every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// finish sends what is left and closes the client.
func (e *Exporter) finish() error {
	deadline := time.Now().Add(e.cfg.ShutdownTimeout)
	for {
		more := false
		if len(e.tails) > 0 {
			more = e.pollAppend() || more
		}
		if e.paths != nil {
			more = e.takePaths() || more
		}
		if len(e.changes) > 0 {
			e.exportChanges()
			more = e.stats.PendingBlocks.Load() > 0 || more
		}
		if !more || time.Now().After(deadline) {
			break
		}
		e.waitRoom(time.Until(deadline))
	}
	fctx, cancel := context.WithDeadline(context.Background(), deadline)
	err := e.cl.Flush(fctx)
	cancel()
	e.closing.Store(true)
	left := e.stats.InFlight.Load()
	e.cl.Close() // fails what is still buffered: counted as dropped (shutdown)
	if e.cfg.CursorFile != "" && len(e.tails) > 0 {
		if serr := e.saveCursors(true); serr != nil {
			e.logger.Error("saving the export cursors failed", "err", serr)
		}
	}
	if err != nil {
		e.logger.Warn("export stopped with records unsent", "records", left, "err", err)
	}
	return nil
}

// room is how many more records may be handed to the client now.
func (e *Exporter) room() int {
	return e.cfg.MaxInFlight - int(e.stats.InFlight.Load())
}

// waitRoom waits until an acknowledgement makes room, or at most d.
func (e *Exporter) waitRoom(d time.Duration) {
	if d > 50*time.Millisecond {
		d = 50 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.wake:
	case <-t.C:
	}
}

// kgoHeader is a record header.
type kgoHeader = kgo.RecordHeader

// headers returns the records' headers of stream s (shared, never modified).
func (e *Exporter) headers(s Stream) []kgo.RecordHeader { return e.hdr[s] }

// makeHeaders builds the headers of stream s for the configured format.
func (e *Exporter) makeHeaders(s Stream) []kgo.RecordHeader {
	ct := "application/x-protobuf"
	if e.cfg.Format == JSON {
		ct = "application/json"
	}
	schema := [...]string{SchemaAppendEntry, SchemaPostcardPath, SchemaSlotChange}[s]
	return []kgo.RecordHeader{{Key: "dta-schema", Value: []byte(schema)}, {Key: "content-type", Value: []byte(ct)}}
}

// produce hands one record to the client; done runs with its outcome (nil:
// acknowledged), on the client's goroutine.
func (e *Exporter) produce(s Stream, topic string, key, value []byte, hdr []kgo.RecordHeader, done func(error)) {
	e.stats.InFlight.Add(1)
	r := &kgo.Record{Topic: topic, Key: key, Value: value, Headers: hdr}
	e.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		e.stats.InFlight.Add(-1)
		switch {
		case err == nil:
			e.stats.Records[s].Add(1)
			e.stats.Bytes[s].Add(uint64(len(r.Value)))
			e.stats.LastAck.Store(time.Now().UnixNano())
		case e.closing.Load():
			e.stats.Dropped[s][DropShutdown].Add(1)
		default:
			e.stats.Errors[s].Add(1)
			e.logError(s, err)
		}
		if done != nil {
			done(err)
		}
		select {
		case e.wake <- struct{}{}:
		default:
		}
	})
}

// errorLogEvery limits the error log to one line per stream (and the
// broker log to one line per reason) this often.
var errorLogEvery = int64(10 * time.Second)

func (e *Exporter) logError(s Stream, err error) {
	// Failures come in bursts (a broker down fails every buffered record):
	// log one line per burst, the counters have the rest.
	now := time.Now().UnixNano()
	last := &e.lastLog[s]
	if prev := last.Load(); now-prev < errorLogEvery || !last.CompareAndSwap(prev, now) {
		return
	}
	var then string
	switch {
	case s == StreamAppend:
		then = "the Append entries are sent again, in order from the first that failed"
	case s == StreamChanges:
		then = "the slots are compared again at the next changes interval and sent if they still differ"
	case refusedForGood(err):
		then = `the paths are dropped, counted in dta_export_dropped_total{stream="paths",reason="refused"}`
	default:
		then = `the paths are queued again (those that find the path queue full are dropped, reason="queue_full")`
	}
	e.logger.Warn("kafka did not take records", "stream", s.String(), "err", err, "then", then)
}

// refusedForGood reports whether err is a Kafka error that sending the same
// record again cannot fix.
func refusedForGood(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && !ke.Retriable
}

// encode marshals a record in the configured format.
func (e *Exporter) encode(m interface{ AppendProto([]byte) []byte }) []byte {
	if e.cfg.Format == JSON {
		b, err := json.Marshal(m)
		if err != nil { // cannot happen: plain structs
			return nil
		}
		return b
	}
	return m.AppendProto(nil)
}

// kgoLogger sends the Kafka client's warnings and errors to slog, each
// message at most once per errorLogEvery (the client repeats them for every
// retry; the counters have the rest).
type kgoLogger struct {
	l    *slog.Logger
	mu   sync.Mutex
	last map[string]int64 // message: when last logged, Unix ns
}

func (k *kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k *kgoLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	now := time.Now().UnixNano()
	k.mu.Lock()
	if k.last == nil {
		k.last = map[string]int64{}
	}
	prev, seen := k.last[msg]
	if seen && now-prev < errorLogEvery {
		k.mu.Unlock()
		return
	}
	if len(k.last) > 1000 { // bounded: the client's messages are constants
		clear(k.last)
	}
	k.last[msg] = now
	k.mu.Unlock()
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	k.l.Log(context.Background(), lv, "kafka: "+msg, kv...)
}
