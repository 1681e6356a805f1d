//go:build !noasm

#include "textflag.h"

// Both kernels keep two accumulators, lanes k mod 8 in 0..3 and in 4..7, add
// them lane-wise at the end and store the four lane sums, with separate
// multiply and add (no FMA): sqDiffGeneric then rounds exactly as they do.

// ARGS loads the arguments (SI = x, DI = y, CX = n/8 blocks, DX = s) and
// zeroes the accumulators Y0 and Y4.
#define ARGS \
	MOVQ x+0(FP), SI; \
	MOVQ y+8(FP), DI; \
	MOVQ n+16(FP), CX; \
	MOVQ s+24(FP), DX; \
	VXORPD Y0, Y0, Y0; \
	VXORPD Y4, Y4, Y4; \
	SHRQ $3, CX

// STORE adds the accumulators lane-wise, stores the four sums at s and returns.
#define STORE \
	VADDPD Y4, Y0, Y0; \
	VMOVUPD Y0, (DX); \
	VZEROUPPER; \
	RET

// func sqDiff64(x, y *float64, n int, s *[4]float64)
// s[l] = sum over k < n, k mod 4 = l of (x[k]-y[k])^2, summed per k mod 8; n % 8 == 0, n >= 8.
TEXT ·sqDiff64(SB), NOSPLIT, $0-32
	ARGS

loop64:
	VMOVUPD (SI), Y1
	VMOVUPD 32(SI), Y5
	VSUBPD (DI), Y1, Y1
	VSUBPD 32(DI), Y5, Y5
	VMULPD Y1, Y1, Y1
	VMULPD Y5, Y5, Y5
	VADDPD Y1, Y0, Y0
	VADDPD Y5, Y4, Y4
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop64

	STORE

// func sqDiff32(x, y *float32, n int, s *[4]float64)
// sqDiff64 on float32 inputs, each converted to float64 first.
TEXT ·sqDiff32(SB), NOSPLIT, $0-32
	ARGS

loop32:
	VCVTPS2PD (SI), Y1
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD (DI), Y2
	VCVTPS2PD 16(DI), Y6
	VSUBPD Y2, Y1, Y1
	VSUBPD Y6, Y5, Y5
	VMULPD Y1, Y1, Y1
	VMULPD Y5, Y5, Y5
	VADDPD Y1, Y0, Y0
	VADDPD Y5, Y4, Y4
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop32

	STORE
