//go:build !linux

package region

import (
	"errors"
	"log/slog"
)

var errUnsupported = errors.New("memory regions are only implemented on Linux")

func mapMemory(uint64, HugePages, *slog.Logger) ([]byte, string, error) {
	return nil, "", errUnsupported
}

func unmap([]byte) error { return nil }

func prefault([]byte) error { return nil }
