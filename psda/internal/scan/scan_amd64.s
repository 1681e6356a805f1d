//go:build !noasm

#include "textflag.h"

// Each scan visits n entries (n a multiple of 8), eight per round in two
// YMM registers, and returns the index of the first round's start at
// which a lane fails the bound, or n. The arithmetic is the scalar
// expression's, lane by lane (VADDPD, VSUBPD: IEEE double, round to
// nearest, no fusing); the compare predicates are unordered, so NaN lanes
// fail: NGE_UQ (0x19) is !(h >= t), NGT_UQ (0x1A) !(h > t).

// func sumBelowAVX2(row, p *float64, n int, t float64) int
TEXT ·sumBelowAVX2(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD t+24(FP), Y15
	XORQ AX, AX
sumloop:
	CMPQ AX, CX
	JGE  sumdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VADDPD  (DI)(AX*8), Y0, Y0   // row + p
	VADDPD  32(DI)(AX*8), Y1, Y1
	VCMPPD  $0x19, Y15, Y0, Y0   // !(h >= t)
	VCMPPD  $0x19, Y15, Y1, Y1
	VORPD   Y1, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     sumdone
	ADDQ    $8, AX
	JMP     sumloop
sumdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func sumAtMostAVX2(row, p *float64, n int, t float64) int
TEXT ·sumAtMostAVX2(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD t+24(FP), Y15
	XORQ AX, AX
amloop:
	CMPQ AX, CX
	JGE  amdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VADDPD  (DI)(AX*8), Y0, Y0   // row + p
	VADDPD  32(DI)(AX*8), Y1, Y1
	VCMPPD  $0x1A, Y15, Y0, Y0   // !(h > t)
	VCMPPD  $0x1A, Y15, Y1, Y1
	VORPD   Y1, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     amdone
	ADDQ    $8, AX
	JMP     amloop
amdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func diffBelowAVX2(row, p *float64, n int, a, t float64) int
// (row − a) − p against !(h >= t).
TEXT ·diffBelowAVX2(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Y14
	VBROADCASTSD t+32(FP), Y15
	XORQ AX, AX
belowloop:
	CMPQ AX, CX
	JGE  belowdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VSUBPD  Y14, Y0, Y0          // row − a
	VSUBPD  Y14, Y1, Y1
	VSUBPD  (DI)(AX*8), Y0, Y0   // − p
	VSUBPD  32(DI)(AX*8), Y1, Y1
	VCMPPD  $0x19, Y15, Y0, Y0
	VCMPPD  $0x19, Y15, Y1, Y1
	VORPD   Y1, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     belowdone
	ADDQ    $8, AX
	JMP     belowloop
belowdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func diffAtMostAVX2(row, p *float64, n int, a, t float64) int
// (row − a) − p against !(h > t).
TEXT ·diffAtMostAVX2(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ p+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Y14
	VBROADCASTSD t+32(FP), Y15
	XORQ AX, AX
atmostloop:
	CMPQ AX, CX
	JGE  atmostdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VSUBPD  Y14, Y0, Y0          // row − a
	VSUBPD  Y14, Y1, Y1
	VSUBPD  (DI)(AX*8), Y0, Y0   // − p
	VSUBPD  32(DI)(AX*8), Y1, Y1
	VCMPPD  $0x1A, Y15, Y0, Y0
	VCMPPD  $0x1A, Y15, Y1, Y1
	VORPD   Y1, Y0, Y0
	VPTEST  Y0, Y0
	JNZ     atmostdone
	ADDQ    $8, AX
	JMP     atmostloop
atmostdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $8

// func extremeAVX2(row, lo *float64, n int, m float64) int
// A lane fails when x − x != 0 or is NaN (NEQ_UQ, 0x04: x not finite),
// when |x| > m (GT_OQ, 0x1E) or when x < lo (LT_OQ, 0x11).
TEXT ·extremeAVX2(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ lo+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD m+24(FP), Y15
	VBROADCASTSD absmask<>(SB), Y13
	VXORPD Y12, Y12, Y12
	XORQ AX, AX
extloop:
	CMPQ AX, CX
	JGE  extdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VSUBPD  Y0, Y0, Y2           // x − x
	VSUBPD  Y1, Y1, Y3
	VCMPPD  $0x04, Y12, Y2, Y2   // not finite
	VCMPPD  $0x04, Y12, Y3, Y3
	VANDPD  Y13, Y0, Y4          // |x|
	VANDPD  Y13, Y1, Y5
	VCMPPD  $0x1E, Y15, Y4, Y4   // |x| > m
	VCMPPD  $0x1E, Y15, Y5, Y5
	VORPD   Y4, Y2, Y2
	VORPD   Y5, Y3, Y3
	VCMPPD  $0x11, (DI)(AX*8), Y0, Y4   // x < lo
	VCMPPD  $0x11, 32(DI)(AX*8), Y1, Y5
	VORPD   Y4, Y2, Y2
	VORPD   Y5, Y3, Y3
	VORPD   Y3, Y2, Y2
	VPTEST  Y2, Y2
	JNZ     extdone
	ADDQ    $8, AX
	JMP     extloop
extdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
