package hashing

// hasSSE42 reports whether the CPU has the SSE4.2 CRC32 instruction, which
// computes CRC-32C (Castagnoli) eight bytes per instruction.
var hasSSE42 = cpuidECX1()&(1<<20) != 0

// cpuidECX1 returns ECX of CPUID leaf 1 (feature bits).
func cpuidECX1() uint32

// crc32cSSE42 continues the raw (not inverted) CRC-32C state crc over p with
// the CRC32 instruction. Unlike hash/crc32's dispatch through a function
// variable, it is declared noescape, so hashing a key held on the stack does
// not move the key to the heap.
//
//go:noescape
func crc32cSSE42(crc uint32, p []byte) uint32

// crc32cUpdate continues the CRC-32C crc (init and xor-out 0xFFFFFFFF, as
// crc32.Update) over p.
func crc32cUpdate(crc uint32, p []byte) uint32 {
	if hasSSE42 {
		return ^crc32cSSE42(^crc, p)
	}
	return castagnoliTable.update(crc, p)
}
