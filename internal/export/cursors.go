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

// The cursor file keeps, per exported Append store, the index below which
// every entry of each list was acknowledged by the brokers, so that a
// restarted exporter (with the stores restored from their checkpoints)
// resumes instead of sending everything again or skipping what it never
// sent. Format (docs/INTEGRATIONS.md): JSON {"version": 1, "stores":
// {"<name>": [cursor of list 0, list 1, ...]}}.

// cursorFileVersion is the cursor file's format version.
const cursorFileVersion = 1

// maxCursorFile bounds the cursor file a reader accepts (2^20 lists of
// 20-digit cursors fit easily).
const maxCursorFile = 64 << 20

// maxCursorLists bounds the lists of one store in the file (the Append
// primitive's own limit is lower).
const maxCursorLists = 1 << 24

type cursorFile struct {
	Version int                 `json:"version"`
	Stores  map[string][]uint64 `json:"stores"`
}

// parseCursors decodes a cursor file, bounding everything.
func parseCursors(b []byte) (map[string][]uint64, error) {
	if len(b) > maxCursorFile {
		return nil, fmt.Errorf("%d bytes, more than the %d a cursor file may have", len(b), maxCursorFile)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f cursorFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a cursor file: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a cursor file: data after the JSON object")
	}
	if f.Version != cursorFileVersion {
		return nil, fmt.Errorf("version %d (this build reads %d)", f.Version, cursorFileVersion)
	}
	for name, c := range f.Stores {
		if name == "" || len(name) > 255 {
			return nil, fmt.Errorf("store name of %d bytes", len(name))
		}
		if len(c) > maxCursorLists {
			return nil, fmt.Errorf("store %s: %d lists, more than %d", name, len(c), maxCursorLists)
		}
	}
	if f.Stores == nil {
		f.Stores = map[string][]uint64{}
	}
	return f.Stores, nil
}

// readCursorFile reads path ("" or missing: no cursors). A damaged file is
// an error naming it: the operator decides (delete it to start over).
func readCursorFile(path string) (map[string][]uint64, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cursor file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCursorFile+1))
	if err != nil {
		return nil, fmt.Errorf("cursor file %s: %w", path, err)
	}
	m, err := parseCursors(b)
	if err != nil {
		return nil, fmt.Errorf("cursor file %s: %w (remove it to export every list from its oldest entry)", path, err)
	}
	return m, nil
}

// saveCursors writes the acknowledged cursors atomically (temporary file,
// fsync, rename, fsync of the directory).
func (e *Exporter) saveCursors() error {
	path := e.cfg.CursorFile
	b, err := json.Marshal(cursorFile{Version: cursorFileVersion, Stores: e.cursors()})
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cursor file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
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
