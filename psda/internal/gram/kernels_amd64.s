//go:build !noasm

#include "textflag.h"

// Both micro-kernels keep a 6-row block of C in twelve YMM accumulators
// Y0..Y11 (row i in Y(2i), Y(2i+1)); per step p they load one row of the B
// panel into Y12, Y13 and broadcast the six values of the A panel through
// Y14, Y15 into twelve FMAs. Arguments: CX = k, SI = a, DI = b, DX = c,
// R8 = ldc in bytes.
#define ARGS \
	MOVQ k+0(FP), CX; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DI; \
	MOVQ c+24(FP), DX; \
	MOVQ ldc+32(FP), R8; \
	SHLQ $3, R8; \
	VXORPD Y0, Y0, Y0; \
	VXORPD Y1, Y1, Y1; \
	VXORPD Y2, Y2, Y2; \
	VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; \
	VXORPD Y5, Y5, Y5; \
	VXORPD Y6, Y6, Y6; \
	VXORPD Y7, Y7, Y7; \
	VXORPD Y8, Y8, Y8; \
	VXORPD Y9, Y9, Y9; \
	VXORPD Y10, Y10, Y10; \
	VXORPD Y11, Y11, Y11

// TWOROWS multiplies rows i, i+1 of A (at byte offsets oa, ob of SI) into
// their accumulators r0, r1 and r2, r3.
#define TWOROWS(BCAST, FMA, oa, ob, r0, r1, r2, r3) \
	BCAST oa(SI), Y14; \
	BCAST ob(SI), Y15; \
	FMA   Y12, Y14, r0; \
	FMA   Y13, Y14, r1; \
	FMA   Y12, Y15, r2; \
	FMA   Y13, Y15, r3

// STEP is one step p: B row, six A values at offsets 0, o1, ..., o5, twelve
// FMAs; then it advances SI by sa bytes and DI by one B row, and counts down
// CX (the flags for the loop's JNZ).
#define STEP(LOAD, BCAST, FMA, o1, o2, o3, o4, o5, sa) \
	LOAD (DI), Y12; \
	LOAD 32(DI), Y13; \
	TWOROWS(BCAST, FMA, 0, o1, Y0, Y1, Y2, Y3); \
	TWOROWS(BCAST, FMA, o2, o3, Y4, Y5, Y6, Y7); \
	TWOROWS(BCAST, FMA, o4, o5, Y8, Y9, Y10, Y11); \
	ADDQ $sa, SI; \
	ADDQ $64, DI; \
	DECQ CX

// ADD4 adds the four float64 of Y register r to c at byte offset off of DX.
#define ADD4(r, off) \
	VADDPD  off(DX), r, r; \
	VMOVUPD r, off(DX)

// func kern6x8(k int, a, b, c *float64, ldc int)
// c[i*ldc+j] += sum_p a[p*6+i] * b[p*8+j], i < 6, j < 8, p < k.
TEXT ·kern6x8(SB), NOSPLIT, $0-40
	ARGS

loop:
	STEP(VMOVUPD, VBROADCASTSD, VFMADD231PD, 8, 16, 24, 32, 40, 48)
	JNZ loop

#define ROW8(r0, r1) \
	ADD4(r0, 0); \
	ADD4(r1, 32); \
	ADDQ R8, DX

	ROW8(Y0, Y1)
	ROW8(Y2, Y3)
	ROW8(Y4, Y5)
	ROW8(Y6, Y7)
	ROW8(Y8, Y9)
	ROW8(Y10, Y11)
	VZEROUPPER
	RET

// func kern6x16(k int, a, b *float32, c *float64, ldc int)
// c[i*ldc+j] += float64(sum_p a[p*6+i] * b[p*16+j]), i < 6, j < 16, p < k,
// the sum in float32.
TEXT ·kern6x16(SB), NOSPLIT, $0-40
	ARGS

loop:
	STEP(VMOVUPS, VBROADCASTSS, VFMADD231PS, 4, 8, 12, 16, 20, 24)
	JNZ loop

// WIDEN8 adds the eight float32 of Y register r (X register x) to c at byte
// offset off of DX, as float64.
#define WIDEN8(x, r, off) \
	VEXTRACTF128 $1, r, X13; \
	VCVTPS2PD    x, Y12; \
	VCVTPS2PD    X13, Y13; \
	ADD4(Y12, off); \
	ADD4(Y13, off+32)

#define ROW16(x0, r0, x1, r1) \
	WIDEN8(x0, r0, 0); \
	WIDEN8(x1, r1, 64); \
	ADDQ R8, DX

	ROW16(X0, Y0, X1, Y1)
	ROW16(X2, Y2, X3, Y3)
	ROW16(X4, Y4, X5, Y5)
	ROW16(X6, Y6, X7, Y7)
	ROW16(X8, Y8, X9, Y9)
	ROW16(X10, Y10, X11, Y11)
	VZEROUPPER
	RET

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

