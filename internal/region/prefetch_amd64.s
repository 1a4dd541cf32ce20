#include "textflag.h"

// func prefetch(base unsafe.Pointer, size uint64, offs []uint64)
//
// PREFETCHT0 of base+off for every off below size. A prefetch retires at
// once, so unlike a load it does not hold the core back while the line comes.
TEXT ·prefetch(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), AX
	MOVQ size+8(FP), BX
	MOVQ offs_base+16(FP), SI
	MOVQ offs_len+24(FP), CX
	TESTQ CX, CX
	JZ   done

loop:
	MOVQ (SI), DX
	CMPQ DX, BX
	JAE  skip
	PREFETCHT0 (AX)(DX*1)

skip:
	ADDQ $8, SI
	DECQ CX
	JNZ  loop

done:
	RET
