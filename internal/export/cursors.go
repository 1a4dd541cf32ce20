package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The cursor file keeps, per exported Append store and list, the index below
// which every entry was acknowledged by the brokers and the generation that
// names the list's numbering, so that a restarted exporter (with the stores
// restored from their checkpoints) resumes instead of sending everything
// again or skipping what it never sent, and never gives one name (generation,
// index) to two entries. Format (docs/INTEGRATIONS.md), version 2:
//
//	{"version": 2, "clean": false, "stores": {"<name>": {
//	  "cursors":     [acknowledged cursor of list 0, list 1, ...],
//	  "generations": [generation of list 0, ...],
//	  "starts":      [first index of that generation, ...],       (absent: all 0)
//	  "previous":    [generation of the indices below start, ...], (absent: all 0)
//	  "sent":        [every index below was handed to Kafka, ...]  (only when clean)
//	}}}
//
// clean is true only in the file written at a stop, after the last send:
// then sent bounds every index that may have reached Kafka. Version 1
// ({"version": 1, "stores": {"<name>": [cursor, ...]}}) is read as
// generation 0, not clean.

// cursorFileVersion is the cursor file's format version.
const cursorFileVersion = 2

// maxCursorFile bounds the cursor file a reader accepts (2^20 lists of
// five 20-digit numbers fit).
const maxCursorFile = 256 << 20

// maxCursorLists bounds the lists of one store in the file (the Append
// primitive's own limit is lower).
const maxCursorLists = 1 << 24

// listCursor is what the file keeps of one list.
type listCursor struct {
	acked uint64 // every index below was acknowledged
	gen   uint64 // the generation of the indices from start on
	start uint64
	prev  uint64 // the generation of the indices below start
	sent  uint64 // clean files: every index handed to Kafka is below
}

// storeCursors is one store's entry in a version 2 file.
type storeCursors struct {
	Cursors     []uint64 `json:"cursors"`
	Generations []uint64 `json:"generations"`
	Starts      []uint64 `json:"starts,omitempty"`
	Previous    []uint64 `json:"previous,omitempty"`
	Sent        []uint64 `json:"sent,omitempty"`
}

type cursorFile struct {
	Version int                        `json:"version"`
	Clean   bool                       `json:"clean,omitempty"`
	Stores  map[string]json.RawMessage `json:"stores"`
}

// savedCursors is a parsed cursor file.
type savedCursors struct {
	clean  bool
	stores map[string][]listCursor
}

// parseCursors decodes a cursor file, bounding everything.
func parseCursors(b []byte) (savedCursors, error) {
	if len(b) > maxCursorFile {
		return savedCursors{}, fmt.Errorf("%d bytes, more than the %d a cursor file may have", len(b), maxCursorFile)
	}
	var f cursorFile
	if err := decodeStrict(b, &f); err != nil {
		return savedCursors{}, fmt.Errorf("not a cursor file: %w", err)
	}
	if f.Version != 1 && f.Version != cursorFileVersion {
		return savedCursors{}, fmt.Errorf("version %d (this build reads 1 and %d)", f.Version, cursorFileVersion)
	}
	out := savedCursors{clean: f.Clean && f.Version == cursorFileVersion, stores: make(map[string][]listCursor, len(f.Stores))}
	for name, raw := range f.Stores {
		if name == "" || len(name) > 255 {
			return savedCursors{}, fmt.Errorf("store name of %d bytes", len(name))
		}
		var sc storeCursors
		if f.Version == 1 {
			if err := decodeStrict(raw, &sc.Cursors); err != nil {
				return savedCursors{}, fmt.Errorf("store %s: %w", name, err)
			}
		} else if err := decodeStrict(raw, &sc); err != nil {
			return savedCursors{}, fmt.Errorf("store %s: %w", name, err)
		}
		n := len(sc.Cursors)
		if n > maxCursorLists {
			return savedCursors{}, fmt.Errorf("store %s: %d lists, more than %d", name, n, maxCursorLists)
		}
		if f.Version == cursorFileVersion {
			for _, a := range []struct {
				key string
				v   []uint64
				opt bool
			}{{"generations", sc.Generations, false}, {"starts", sc.Starts, true}, {"previous", sc.Previous, true}, {"sent", sc.Sent, !f.Clean}} {
				if len(a.v) != n && !(a.opt && a.v == nil) {
					return savedCursors{}, fmt.Errorf("store %s: %d %s for %d cursors", name, len(a.v), a.key, n)
				}
			}
		}
		lists := make([]listCursor, n)
		for l := range lists {
			c := &lists[l]
			c.acked = sc.Cursors[l]
			if sc.Generations != nil {
				c.gen = sc.Generations[l]
			}
			if sc.Starts != nil {
				c.start = sc.Starts[l]
			}
			if sc.Previous != nil {
				c.prev = sc.Previous[l]
			}
			if sc.Sent != nil {
				c.sent = sc.Sent[l]
			}
			if out.clean && c.sent < c.acked {
				return savedCursors{}, fmt.Errorf("store %s list %d: sent %d below the cursor %d", name, l, c.sent, c.acked)
			}
		}
		out.stores[name] = lists
	}
	return out, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after it.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// readCursorFile reads path ("" or missing: no cursors). A damaged file is
// an error naming it: the operator decides (delete it to start over).
func readCursorFile(path string) (savedCursors, error) {
	if path == "" {
		return savedCursors{}, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedCursors{}, nil
	}
	if err != nil {
		return savedCursors{}, fmt.Errorf("cursor file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCursorFile+1))
	if err != nil {
		return savedCursors{}, fmt.Errorf("cursor file %s: %w", path, err)
	}
	m, err := parseCursors(b)
	if err != nil {
		return savedCursors{}, fmt.Errorf("cursor file %s: %w (remove it to export every list from its oldest entry)", path, err)
	}
	return m, nil
}

// encodeCursors is the file's content for the lists' current state; clean
// (at a stop, after the last send) adds what was sent.
func (e *Exporter) encodeCursors(clean bool) ([]byte, error) {
	f := cursorFile{Version: cursorFileVersion, Clean: clean, Stores: make(map[string]json.RawMessage, len(e.tails))}
	for _, t := range e.tails {
		n := len(t.lists)
		sc := storeCursors{Cursors: make([]uint64, n), Generations: make([]uint64, n), Starts: make([]uint64, n), Previous: make([]uint64, n)}
		if clean {
			sc.Sent = make([]uint64, n)
		}
		starts, prevs := false, false
		for l := range t.lists {
			sg := t.lists[l].seg.Load()
			sc.Cursors[l], sc.Generations[l], sc.Starts[l], sc.Previous[l] = sg.acked.Load(), sg.gen, sg.start, sg.prev
			starts, prevs = starts || sg.start != 0, prevs || sg.prev != 0
			if clean {
				sc.Sent[l] = max(sg.sent.Load(), sc.Cursors[l])
			}
		}
		if !starts {
			sc.Starts = nil
		}
		if !prevs {
			sc.Previous = nil
		}
		raw, err := json.Marshal(sc)
		if err != nil {
			return nil, err
		}
		f.Stores[t.s.Name] = raw
	}
	b, err := json.Marshal(f)
	return append(b, '\n'), err
}

// saveCursors writes the lists' state atomically (temporary file, fsync,
// rename, fsync of the directory). clean: this is the stop's last save.
func (e *Exporter) saveCursors(clean bool) error {
	path := e.cfg.CursorFile
	b, err := e.encodeCursors(clean)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cursor file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("cursor file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cursor file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cursor file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cursor file: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
