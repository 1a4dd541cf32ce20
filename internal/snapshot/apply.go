package snapshot

import (
	"errors"
	"fmt"
	"io"

	"github.com/dta-go/dta/internal/store"
)

// apply writes the chain's files, base first, into cat's regions (which no
// tracker watches yet, or which belong to an epoch opened for queries). On
// a file that cannot be read it returns that file's path with the error; an
// error with an empty path is not the file's fault (the configuration).
func (d *Durable) apply(cat *store.Catalog, chain []Epoch) (bad string, err error) {
	for _, e := range chain {
		if err := applyFile(cat, e.path); err != nil {
			if errors.Is(err, ErrCorrupt) {
				return e.path, err
			}
			return "", err
		}
	}
	return "", nil
}

// applyFile writes one checkpoint file's extents into cat.
func applyFile(cat *store.Catalog, path string) error {
	rd, f, err := readHeader(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkGeometry(rd.Header.Stores, cat, path); err != nil {
		return err
	}
	targets := make([]*store.Store, len(rd.Header.Stores))
	for i, h := range rd.Header.Stores {
		targets[i] = cat.ByName(h.Name)
	}
	for {
		s, off, data, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := targets[s].Region.Write(off, data); err != nil {
			// Bounds were checked against the same geometry: a bug.
			return fmt.Errorf("snapshot: %s: store %s offset %d: %w", path, targets[s].Name, off, err)
		}
	}
}
