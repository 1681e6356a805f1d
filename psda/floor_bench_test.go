package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkFloor times whole Double-paired MMD-RBF matchings (k = 32) at
// the sizes of benchmarks/floor.py's default case, 4000 × 4000, d = 512,
// and at 1000 × 1000, d = 2 (the direct path, no GEMM), on its three data
// kinds (floorFeatures), and reports each phase's wall
// and CPU seconds as BenchmarkStage2Factored does: "cross", as Match runs,
// with Stage 2 reading Stage 1's cross kernel (plan.keepCross), and
// "nocross", computing it again, in one process. Profile the cost phases
// with
//
//	go test -run XXX -bench Floor/.*/relu/cross -benchtime 2x -cpuprofile cpu.out ./psda/
func BenchmarkFloor(b *testing.B) {
	for _, sh := range [][2]int{{4000, 512}, {1000, 2}} {
		for _, kind := range []string{"gauss", "relu", "clustered"} {
			src, tgt := floorFeatures(kind, sh[0], sh[0], sh[1], 1)
			for _, noCross := range []bool{false, true} {
				name := map[bool]string{false: "cross", true: "nocross"}[noCross]
				b.Run(fmt.Sprintf("%dx%d/d=%d/%s/%s", sh[0], sh[0], sh[1], kind, name), func(b *testing.B) {
					cfg := Config{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF, Monitor: &Monitor{}}
					pl := defaultPlan()
					pl.noCross = noCross
					benchPhases(b, pl, src, tgt, cfg)
				})
			}
		}
	}
}

// floorFeatures returns float32 source and target features of one of
// benchmarks/floor.py's data kinds, scaled by 1/sqrt(d): "gauss" N(0, I)
// and N(0.2, I); "relu" max(0, g) with g ~ N(0, I) and N(0.3, I);
// "clustered" 65 class centres with within-class noise 0.5 and a domain
// shift of 0.3·N(0, I).
func floorFeatures(kind string, ns, nt, d int, seed uint64) (Matrix, Matrix) {
	return clusterFeatures(kind, ns, nt, d, 65, 0.5, seed)
}

// clusterFeatures is floorFeatures with c class centres and within-class
// noise sigma for the "clustered" kind, so that a probe can move between
// clustered and Gaussian-like features (floorFeatures is c = 65, sigma =
// 0.5: the same draws in the same order).
func clusterFeatures(kind string, ns, nt, d, c int, sigma float64, seed uint64) (Matrix, Matrix) {
	rng := rand.New(rand.NewPCG(seed, 7))
	centres := make([]float64, c*d)
	shift := make([]float64, d)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	for i := range shift {
		shift[i] = 0.3 * rng.NormFloat64()
	}
	scale := 1 / math.Sqrt(float64(d))
	gen := func(n int, target bool) Matrix {
		m := Matrix{N: n, D: d, F32: make([]float32, n*d)}
		for i := 0; i < n; i++ {
			cl := rng.IntN(c)
			for k := 0; k < d; k++ {
				g := rng.NormFloat64()
				var v float64
				switch kind {
				case "gauss":
					v = g
					if target {
						v += 0.2
					}
				case "relu":
					if target {
						g += 0.3
					}
					v = max(0, g)
				default:
					v = centres[cl*d+k] + sigma*g
					if target {
						v += shift[k]
					}
				}
				m.F32[i*d+k] = float32(v * scale)
			}
		}
		return m
	}
	return gen(ns, false), gen(nt, true)
}
