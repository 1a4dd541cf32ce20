#include "textflag.h"

// func cpuidECX1() uint32
TEXT ·cpuidECX1(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET

// func crc32cSSE42(crc uint32, p []byte) uint32
//
// Eight bytes per CRC32Q, then 4, 2 and 1 for the tail. Loads are unaligned:
// keys are short, so aligning first would cost more than it saves.
TEXT ·crc32cSSE42(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

loop8:
	CMPQ CX, $8
	JB   tail
	CRC32Q (SI), AX
	ADDQ $8, SI
	SUBQ $8, CX
	JMP  loop8

tail:
	BTQ $2, CX
	JNC tail2
	CRC32L (SI), AX
	ADDQ $4, SI

tail2:
	BTQ $1, CX
	JNC tail1
	CRC32W (SI), AX
	ADDQ $2, SI

tail1:
	BTQ $0, CX
	JNC done
	CRC32B (SI), AX

done:
	MOVL AX, ret+32(FP)
	RET
