//go:build !noasm

#include "textflag.h"

// Constants for expNegAVX2, each repeated four times for YMM operands.
DATA expc<>+0(SB)/8, $0x3ff71547652b82fe // log2e
DATA expc<>+8(SB)/8, $0x3ff71547652b82fe // log2e
DATA expc<>+16(SB)/8, $0x3ff71547652b82fe // log2e
DATA expc<>+24(SB)/8, $0x3ff71547652b82fe // log2e
DATA expc<>+32(SB)/8, $0x4338000000000000 // shift
DATA expc<>+40(SB)/8, $0x4338000000000000 // shift
DATA expc<>+48(SB)/8, $0x4338000000000000 // shift
DATA expc<>+56(SB)/8, $0x4338000000000000 // shift
DATA expc<>+64(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA expc<>+72(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA expc<>+80(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA expc<>+88(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA expc<>+96(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA expc<>+104(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA expc<>+112(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA expc<>+120(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA expc<>+128(SB)/8, $0x4085900000000000 // limit
DATA expc<>+136(SB)/8, $0x4085900000000000 // limit
DATA expc<>+144(SB)/8, $0x4085900000000000 // limit
DATA expc<>+152(SB)/8, $0x4085900000000000 // limit
DATA expc<>+160(SB)/8, $0xbde6124613a86d09 // c13
DATA expc<>+168(SB)/8, $0xbde6124613a86d09 // c13
DATA expc<>+176(SB)/8, $0xbde6124613a86d09 // c13
DATA expc<>+184(SB)/8, $0xbde6124613a86d09 // c13
DATA expc<>+192(SB)/8, $0x3e21eed8eff8d898 // c12
DATA expc<>+200(SB)/8, $0x3e21eed8eff8d898 // c12
DATA expc<>+208(SB)/8, $0x3e21eed8eff8d898 // c12
DATA expc<>+216(SB)/8, $0x3e21eed8eff8d898 // c12
DATA expc<>+224(SB)/8, $0xbe5ae64567f544e4 // c11
DATA expc<>+232(SB)/8, $0xbe5ae64567f544e4 // c11
DATA expc<>+240(SB)/8, $0xbe5ae64567f544e4 // c11
DATA expc<>+248(SB)/8, $0xbe5ae64567f544e4 // c11
DATA expc<>+256(SB)/8, $0x3e927e4fb7789f5c // c10
DATA expc<>+264(SB)/8, $0x3e927e4fb7789f5c // c10
DATA expc<>+272(SB)/8, $0x3e927e4fb7789f5c // c10
DATA expc<>+280(SB)/8, $0x3e927e4fb7789f5c // c10
DATA expc<>+288(SB)/8, $0xbec71de3a556c734 // c9
DATA expc<>+296(SB)/8, $0xbec71de3a556c734 // c9
DATA expc<>+304(SB)/8, $0xbec71de3a556c734 // c9
DATA expc<>+312(SB)/8, $0xbec71de3a556c734 // c9
DATA expc<>+320(SB)/8, $0x3efa01a01a01a01a // c8
DATA expc<>+328(SB)/8, $0x3efa01a01a01a01a // c8
DATA expc<>+336(SB)/8, $0x3efa01a01a01a01a // c8
DATA expc<>+344(SB)/8, $0x3efa01a01a01a01a // c8
DATA expc<>+352(SB)/8, $0xbf2a01a01a01a01a // c7
DATA expc<>+360(SB)/8, $0xbf2a01a01a01a01a // c7
DATA expc<>+368(SB)/8, $0xbf2a01a01a01a01a // c7
DATA expc<>+376(SB)/8, $0xbf2a01a01a01a01a // c7
DATA expc<>+384(SB)/8, $0x3f56c16c16c16c17 // c6
DATA expc<>+392(SB)/8, $0x3f56c16c16c16c17 // c6
DATA expc<>+400(SB)/8, $0x3f56c16c16c16c17 // c6
DATA expc<>+408(SB)/8, $0x3f56c16c16c16c17 // c6
DATA expc<>+416(SB)/8, $0xbf81111111111111 // c5
DATA expc<>+424(SB)/8, $0xbf81111111111111 // c5
DATA expc<>+432(SB)/8, $0xbf81111111111111 // c5
DATA expc<>+440(SB)/8, $0xbf81111111111111 // c5
DATA expc<>+448(SB)/8, $0x3fa5555555555555 // c4
DATA expc<>+456(SB)/8, $0x3fa5555555555555 // c4
DATA expc<>+464(SB)/8, $0x3fa5555555555555 // c4
DATA expc<>+472(SB)/8, $0x3fa5555555555555 // c4
DATA expc<>+480(SB)/8, $0xbfc5555555555555 // c3
DATA expc<>+488(SB)/8, $0xbfc5555555555555 // c3
DATA expc<>+496(SB)/8, $0xbfc5555555555555 // c3
DATA expc<>+504(SB)/8, $0xbfc5555555555555 // c3
DATA expc<>+512(SB)/8, $0x3fe0000000000000 // c2
DATA expc<>+520(SB)/8, $0x3fe0000000000000 // c2
DATA expc<>+528(SB)/8, $0x3fe0000000000000 // c2
DATA expc<>+536(SB)/8, $0x3fe0000000000000 // c2
DATA expc<>+544(SB)/8, $0xbff0000000000000 // c1
DATA expc<>+552(SB)/8, $0xbff0000000000000 // c1
DATA expc<>+560(SB)/8, $0xbff0000000000000 // c1
DATA expc<>+568(SB)/8, $0xbff0000000000000 // c1
DATA expc<>+576(SB)/8, $0x3ff0000000000000 // c0
DATA expc<>+584(SB)/8, $0x3ff0000000000000 // c0
DATA expc<>+592(SB)/8, $0x3ff0000000000000 // c0
DATA expc<>+600(SB)/8, $0x3ff0000000000000 // c0
DATA expc<>+608(SB)/8, $0x43380000000003ff // 1023 + bits(shift)
DATA expc<>+616(SB)/8, $0x43380000000003ff // 1023 + bits(shift)
DATA expc<>+624(SB)/8, $0x43380000000003ff // 1023 + bits(shift)
DATA expc<>+632(SB)/8, $0x43380000000003ff // 1023 + bits(shift)
GLOBL expc<>(SB), RODATA|NOPTR, $640

// func expNegAVX2(dst, src *float64, n int, gamma float64, acc bool)
// dst[i] = exp(-gamma*src[i]) (dst[i] += … with acc) for i < n (n a multiple
// of 4, src >= 0), with 0 for the exp where gamma*src[i] > 690. exp(-x) = 2^-m · e^-r with m = round(x·log2 e),
// r = x − m·ln2 (two-part ln2, |r| <= ln2/2), e^-r by its degree-13 Taylor
// polynomial (truncation < 5e-18 relative), 2^-m built in the exponent bits.
TEXT ·expNegAVX2(SB), NOSPLIT, $0-33
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD gamma+24(FP), Y15
	MOVBQZX acc+32(FP), R9
	SHRQ $2, CX
	JZ   done
	LEAQ expc<>(SB), R8
loop:
	VMULPD   (SI), Y15, Y0            // x = gamma*src
	VCMPPD   $0x1E, 128(R8), Y0, Y1  // mask: x > limit
	VMINPD   128(R8), Y0, Y0
	VMOVUPD  32(R8), Y2
	VFMADD231PD 0(R8), Y0, Y2  // v = shift + x*log2e (rounds m)
	VSUBPD   32(R8), Y2, Y3     // m = v - shift
	VFNMADD231PD 64(R8), Y3, Y0 // r = x - m*ln2hi
	VFNMADD231PD 96(R8), Y3, Y0 // r -= m*ln2lo
	VMOVUPD  160(R8), Y4
	VFMADD213PD 192(R8), Y0, Y4 // p = p*r + c12
	VFMADD213PD 224(R8), Y0, Y4 // p = p*r + c11
	VFMADD213PD 256(R8), Y0, Y4 // p = p*r + c10
	VFMADD213PD 288(R8), Y0, Y4 // p = p*r + c9
	VFMADD213PD 320(R8), Y0, Y4 // p = p*r + c8
	VFMADD213PD 352(R8), Y0, Y4 // p = p*r + c7
	VFMADD213PD 384(R8), Y0, Y4 // p = p*r + c6
	VFMADD213PD 416(R8), Y0, Y4 // p = p*r + c5
	VFMADD213PD 448(R8), Y0, Y4 // p = p*r + c4
	VFMADD213PD 480(R8), Y0, Y4 // p = p*r + c3
	VFMADD213PD 512(R8), Y0, Y4 // p = p*r + c2
	VFMADD213PD 544(R8), Y0, Y4 // p = p*r + c1
	VFMADD213PD 576(R8), Y0, Y4 // p = p*r + c0
	VMOVUPD  608(R8), Y5
	VPSUBQ   Y2, Y5, Y5               // 1023 - m
	VPSLLQ   $52, Y5, Y5              // 2^-m
	VMULPD   Y5, Y4, Y4
	VANDNPD  Y4, Y1, Y4               // 0 past the limit
	TESTQ    R9, R9
	JZ       store
	VADDPD   (DI), Y4, Y4
store:
	VMOVUPD  Y4, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      loop
done:
	VZEROUPPER
	RET

// func powNegAVX2(dst, e, src *float64, n int, gamma float64, m int)
// e[i] = e[i]^m, then dst[i] += e[i], for i < n (n a multiple of 4), with 0
// where gamma*src[i] > 690; m >= 1 by binary powering, in the order of
// powInt (so the result is bit-identical to powNegGeneric's). Masked lanes
// are powered from 1, never from a value whose powers could be subnormal
// (slow on x86).
TEXT ·powNegAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ e+8(FP), BX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSD gamma+32(FP), Y15
	MOVQ m+40(FP), R9
	SHRQ $2, CX
	JZ   pdone
	LEAQ expc<>(SB), R8
	VMOVUPD 576(R8), Y14            // 1.0 (c0)
ploop:
	VMULPD   (SI), Y15, Y0          // x = gamma*src
	VCMPPD   $0x1E, 128(R8), Y0, Y1 // mask: x > limit
	VMOVUPD  (BX), Y2               // p = e
	VBLENDVPD Y1, Y14, Y2, Y2       // p = 1 where masked
	VMOVAPD  Y14, Y3                // r = 1
	MOVQ     R9, R10
pbit:
	TESTQ    $1, R10
	JZ       psq
	VMULPD   Y2, Y3, Y3             // r *= p
psq:
	SHRQ     $1, R10
	JZ       pend
	VMULPD   Y2, Y2, Y2             // p *= p
	JMP      pbit
pend:
	VANDNPD  Y3, Y1, Y3             // 0 past the limit
	VMOVUPD  Y3, (BX)
	VADDPD   (DI), Y3, Y3
	VMOVUPD  Y3, (DI)
	ADDQ     $32, SI
	ADDQ     $32, BX
	ADDQ     $32, DI
	DECQ     CX
	JNZ      ploop
pdone:
	VZEROUPPER
	RET

// The AVX-512 routines below are expNegAVX2 and powNegAVX2 on eight lanes
// (ZMM), with the same constants (broadcast from expc<>), the same
// operations in the same order and the same FMAs, so that every lane is
// bit-identical to the AVX2 result (docs/design.md, "Determinism"). The
// lanes past the last multiple of 8 are done under an opmask (the masked
// lanes load 0 and store nothing), and the lanes past the underflow limit
// are zeroed by a zeroing-masked multiply instead of an AND: +0 either way.
// Only AVX-512F instructions (KMOVW, not KMOVB; masks, not VANDNPD).

// EXP8 sets p = exp(−Z11·x) on the eight lanes of x (overwritten), 0 where
// Z11·x > limit, as one iteration of expNegAVX2; v, mm, t are scratch and k
// receives the lanes kept (not past the limit: NGT_UQ, the complement of
// expNegAVX2's GT_OQ, so a NaN is kept as there). Constants: Z16 log2e,
// Z17 shift, Z18 ln2hi, Z19 ln2lo, Z20 limit, Z21..Z31 c13..c3, Z12 c2,
// Z13 c1, Z14 c0, Z15 1023 + bits(shift).
#define EXP8(x, v, mm, p, t, k) \
	VMULPD       x, Z11, x; \
	VCMPPD       $0x1A, Z20, x, k; \
	VMINPD       Z20, x, x; \
	VMOVAPD      Z17, v; \
	VFMADD231PD  Z16, x, v; \
	VSUBPD       Z17, v, mm; \
	VFNMADD231PD Z18, mm, x; \
	VFNMADD231PD Z19, mm, x; \
	VMOVAPD      Z21, p; \
	VFMADD213PD  Z22, x, p; \
	VFMADD213PD  Z23, x, p; \
	VFMADD213PD  Z24, x, p; \
	VFMADD213PD  Z25, x, p; \
	VFMADD213PD  Z26, x, p; \
	VFMADD213PD  Z27, x, p; \
	VFMADD213PD  Z28, x, p; \
	VFMADD213PD  Z29, x, p; \
	VFMADD213PD  Z30, x, p; \
	VFMADD213PD  Z31, x, p; \
	VFMADD213PD  Z12, x, p; \
	VFMADD213PD  Z13, x, p; \
	VFMADD213PD  Z14, x, p; \
	VPSUBQ       v, Z15, t; \
	VPSLLQ       $52, t, t; \
	VMULPD.Z     t, p, k, p

// TAILMASK sets K1 to the low DX lanes (0 < DX < 8); clobbers AX, CX.
#define TAILMASK \
	MOVQ  $1, AX; \
	MOVQ  DX, CX; \
	SHLQ  CX, AX; \
	DECQ  AX; \
	KMOVW AX, K1

// func expNeg512(dst, src *float64, n int, gamma float64, acc bool)
// expNegAVX2 on eight lanes, for any n >= 0 (the tail under an opmask).
TEXT ·expNeg512(SB), NOSPLIT, $0-33
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD gamma+24(FP), Z11
	MOVBQZX acc+32(FP), R9
	LEAQ expc<>(SB), R8
	VBROADCASTSD 0(R8), Z16
	VBROADCASTSD 32(R8), Z17
	VBROADCASTSD 64(R8), Z18
	VBROADCASTSD 96(R8), Z19
	VBROADCASTSD 128(R8), Z20
	VBROADCASTSD 160(R8), Z21
	VBROADCASTSD 192(R8), Z22
	VBROADCASTSD 224(R8), Z23
	VBROADCASTSD 256(R8), Z24
	VBROADCASTSD 288(R8), Z25
	VBROADCASTSD 320(R8), Z26
	VBROADCASTSD 352(R8), Z27
	VBROADCASTSD 384(R8), Z28
	VBROADCASTSD 416(R8), Z29
	VBROADCASTSD 448(R8), Z30
	VBROADCASTSD 480(R8), Z31
	VBROADCASTSD 512(R8), Z12
	VBROADCASTSD 544(R8), Z13
	VBROADCASTSD 576(R8), Z14
	VBROADCASTSD 608(R8), Z15
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   ztail
zloop:
	VMOVUPD (SI), Z0
	EXP8(Z0, Z1, Z2, Z3, Z4, K2)
	TESTQ   R9, R9
	JZ      zstore
	VADDPD  (DI), Z3, Z3
zstore:
	VMOVUPD Z3, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     zloop
ztail:
	TESTQ DX, DX
	JZ    zdone
	TAILMASK
	VMOVUPD.Z (SI), K1, Z0
	EXP8(Z0, Z1, Z2, Z3, Z4, K2)
	TESTQ     R9, R9
	JZ        ztstore
	VMOVUPD.Z (DI), K1, Z5
	VADDPD    Z5, Z3, Z3
ztstore:
	VMOVUPD Z3, K1, (DI)
zdone:
	VZEROUPPER
	RET

// func powNeg512(dst, e, src *float64, n int, gamma float64, m int)
// powNegAVX2 on eight lanes, for any n >= 0 (the tail under an opmask: its
// masked lanes power e = 0, never a subnormal). Pairs of vectors share a
// pass over the bits of m (qpair: half the loop's branches per lane, which
// bound it otherwise: 0.36-0.48 against 0.53-0.59 ns per entry for m = 10,
// BenchmarkMixturePaths); the last odd vector and the tail share one
// body, which stores under K1 when CX (full vectors left) is 0.
TEXT ·powNeg512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ e+8(FP), BX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSD gamma+32(FP), Z15
	MOVQ m+40(FP), R9
	LEAQ expc<>(SB), R8
	VBROADCASTSD 576(R8), Z14       // 1.0 (c0)
	VBROADCASTSD 128(R8), Z13       // limit
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	MOVQ CX, R11
	SHRQ $1, R11                    // pairs of vectors
	ANDQ $1, CX                     // and at most one more
	TESTQ R11, R11
	JZ   qloop
qpair:                                  // two vectors per pass of the bits
	VMULPD   (SI), Z15, Z0
	VMULPD   64(SI), Z15, Z6
	VCMPPD   $0x1A, Z13, Z0, K2
	VCMPPD   $0x1A, Z13, Z6, K3
	VMOVAPD  Z14, Z2
	VMOVAPD  Z14, Z8
	VMOVUPD  (BX), K2, Z2
	VMOVUPD  64(BX), K3, Z8
	VMOVAPD  Z14, Z3
	VMOVAPD  Z14, Z9
	MOVQ     R9, R10
qpbit:
	TESTQ    $1, R10
	JZ       qpsq
	VMULPD   Z2, Z3, Z3
	VMULPD   Z8, Z9, Z9
qpsq:
	SHRQ     $1, R10
	JZ       qpend
	VMULPD   Z2, Z2, Z2
	VMULPD   Z8, Z8, Z8
	JMP      qpbit
qpend:
	VMOVAPD.Z Z3, K2, Z3
	VMOVAPD.Z Z9, K3, Z9
	VMOVUPD  Z3, (BX)
	VMOVUPD  Z9, 64(BX)
	VADDPD   (DI), Z3, Z3
	VADDPD   64(DI), Z9, Z9
	VMOVUPD  Z3, (DI)
	VMOVUPD  Z9, 64(DI)
	ADDQ     $128, SI
	ADDQ     $128, BX
	ADDQ     $128, DI
	DECQ     R11
	JNZ      qpair
qloop:
	TESTQ   CX, CX
	JZ      qtail
	VMOVUPD (SI), Z0
	VMOVUPD (BX), Z1
	VMOVUPD (DI), Z4
	JMP     qbody
qtail:
	TESTQ DX, DX
	JZ    qdone
	TAILMASK
	XORQ  CX, CX                   // TAILMASK used CX: 0 marks the tail
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD.Z (BX), K1, Z1
	VMOVUPD.Z (DI), K1, Z4
qbody:
	VMULPD   Z0, Z15, Z0            // x = gamma*src
	VCMPPD   $0x1A, Z13, Z0, K2     // kept: not x > limit
	VMOVAPD  Z14, Z2
	VMOVAPD  Z1, K2, Z2             // p = e, 1 where masked
	VMOVAPD  Z14, Z3                // r = 1
	MOVQ     R9, R10
qbit:
	TESTQ    $1, R10
	JZ       qsq
	VMULPD   Z2, Z3, Z3             // r *= p
qsq:
	SHRQ     $1, R10
	JZ       qend
	VMULPD   Z2, Z2, Z2             // p *= p
	JMP      qbit
qend:
	VMOVAPD.Z Z3, K2, Z3            // 0 past the limit
	VADDPD   Z4, Z3, Z5             // r + dst
	TESTQ    CX, CX
	JZ       qtstore
	VMOVUPD  Z3, (BX)
	VMOVUPD  Z5, (DI)
	ADDQ     $64, SI
	ADDQ     $64, BX
	ADDQ     $64, DI
	DECQ     CX
	JMP      qloop
qtstore:
	VMOVUPD  Z3, K1, (BX)
	VMOVUPD  Z5, K1, (DI)
qdone:
	VZEROUPPER
	RET
