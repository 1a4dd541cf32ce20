//go:build !amd64

package region

import "unsafe"

// prefetch does nothing where the package has no prefetch instruction.
func prefetch(unsafe.Pointer, uint64, []uint64) {}
