//go:build !amd64

package hashing

// crc32cUpdate continues the CRC-32C crc (init and xor-out 0xFFFFFFFF, as
// crc32.Update) over p, with the portable slicing-by-8 loop.
func crc32cUpdate(crc uint32, p []byte) uint32 { return castagnoliTable.update(crc, p) }
