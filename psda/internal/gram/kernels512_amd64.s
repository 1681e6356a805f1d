//go:build !noasm

#include "textflag.h"

// The AVX-512 micro-kernels have the AVX2 ones' structure at twice the
// width: twelve ZMM accumulators Z0..Z11 (row i in Z(2i), Z(2i+1)), one B
// row in Z12, Z13 per step, the six A values broadcast through Z14, Z15.
#define ARGS512 \
	MOVQ k+0(FP), CX; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DI; \
	MOVQ c+24(FP), DX; \
	MOVQ ldc+32(FP), R8; \
	SHLQ $3, R8; \
	VPXORQ Z0, Z0, Z0; \
	VPXORQ Z1, Z1, Z1; \
	VPXORQ Z2, Z2, Z2; \
	VPXORQ Z3, Z3, Z3; \
	VPXORQ Z4, Z4, Z4; \
	VPXORQ Z5, Z5, Z5; \
	VPXORQ Z6, Z6, Z6; \
	VPXORQ Z7, Z7, Z7; \
	VPXORQ Z8, Z8, Z8; \
	VPXORQ Z9, Z9, Z9; \
	VPXORQ Z10, Z10, Z10; \
	VPXORQ Z11, Z11, Z11

#define TWOROWS512(BCAST, FMA, oa, ob, r0, r1, r2, r3) \
	BCAST oa(SI), Z14; \
	BCAST ob(SI), Z15; \
	FMA   Z12, Z14, r0; \
	FMA   Z13, Z14, r1; \
	FMA   Z12, Z15, r2; \
	FMA   Z13, Z15, r3

#define STEP512(LOAD, BCAST, FMA, o1, o2, o3, o4, o5, sa) \
	LOAD (DI), Z12; \
	LOAD 64(DI), Z13; \
	TWOROWS512(BCAST, FMA, 0, o1, Z0, Z1, Z2, Z3); \
	TWOROWS512(BCAST, FMA, o2, o3, Z4, Z5, Z6, Z7); \
	TWOROWS512(BCAST, FMA, o4, o5, Z8, Z9, Z10, Z11); \
	ADDQ $sa, SI; \
	ADDQ $128, DI; \
	DECQ CX

// ADD8 adds the eight float64 of Z register r to c at byte offset off of DX.
#define ADD8(r, off) \
	VADDPD  off(DX), r, r; \
	VMOVUPD r, off(DX)

// func kern6x16z(k int, a, b, c *float64, ldc int)
// c[i*ldc+j] += sum_p a[p*6+i] * b[p*16+j], i < 6, j < 16, p < k.
TEXT ·kern6x16z(SB), NOSPLIT, $0-40
	ARGS512

loop:
	STEP512(VMOVUPD, VBROADCASTSD, VFMADD231PD, 8, 16, 24, 32, 40, 48)
	JNZ loop

#define ROW16Z(r0, r1) \
	ADD8(r0, 0); \
	ADD8(r1, 64); \
	ADDQ R8, DX

	ROW16Z(Z0, Z1)
	ROW16Z(Z2, Z3)
	ROW16Z(Z4, Z5)
	ROW16Z(Z6, Z7)
	ROW16Z(Z8, Z9)
	ROW16Z(Z10, Z11)
	VZEROUPPER
	RET

// func kern6x32z(k int, a, b *float32, c *float64, ldc int)
// c[i*ldc+j] += float64(sum_p a[p*6+i] * b[p*32+j]), i < 6, j < 32, p < k,
// the sum in float32.
TEXT ·kern6x32z(SB), NOSPLIT, $0-40
	ARGS512

loop:
	STEP512(VMOVUPS, VBROADCASTSS, VFMADD231PS, 4, 8, 12, 16, 20, 24)
	JNZ loop

// WIDEN16 adds the sixteen float32 of Z register r (Y register y) to c at
// byte offset off of DX, as float64.
#define WIDEN16(y, r, off) \
	VEXTRACTF64X4 $1, r, Y13; \
	VCVTPS2PD     y, Z12; \
	VCVTPS2PD     Y13, Z13; \
	ADD8(Z12, off); \
	ADD8(Z13, off+64)

#define ROW32Z(y0, r0, y1, r1) \
	WIDEN16(y0, r0, 0); \
	WIDEN16(y1, r1, 128); \
	ADDQ R8, DX

	ROW32Z(Y0, Z0, Y1, Z1)
	ROW32Z(Y2, Z2, Y3, Z3)
	ROW32Z(Y4, Z4, Y5, Z5)
	ROW32Z(Y6, Z6, Y7, Z7)
	ROW32Z(Y8, Z8, Y9, Z9)
	ROW32Z(Y10, Z10, Y11, Z11)
	VZEROUPPER
	RET
