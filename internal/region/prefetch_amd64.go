package region

import "unsafe"

// prefetch issues a prefetch of base+off for every off of offs below size.
//
//go:noescape
func prefetch(base unsafe.Pointer, size uint64, offs []uint64)
