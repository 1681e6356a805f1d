package testref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
)

// This file holds the inputs and timers shared by the tests and benchmarks
// of psda and internal/cost.

// RandMatrix returns an n×d Matrix of N(0,1) values, stored as float32
// (rounded) when f32 and as float64 otherwise.
func RandMatrix(rng *rand.Rand, n, d int, f32 bool) feat.Matrix {
	m := feat.Matrix{N: n, D: d}
	if f32 {
		m.F32 = make([]float32, n*d)
		for i := range m.F32 {
			m.F32[i] = float32(rng.NormFloat64())
		}
	} else {
		m.F64 = make([]float64, n*d)
		for i := range m.F64 {
			m.F64[i] = rng.NormFloat64()
		}
	}
	return m
}

// CoveringPairs returns max(ns, nt) pairs that use every source and every
// target at least once, as Stage 1 does, in a random order.
func CoveringPairs(rng *rand.Rand, ns, nt int) []feat.Pair {
	ps, pt := rng.Perm(ns), rng.Perm(nt)
	pairs := make([]feat.Pair, max(ns, nt))
	for r := range pairs {
		pairs[r] = feat.Pair{S: ps[r%ns], T: pt[r%nt]}
	}
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

// BenchFeatures returns the benchmark inputs: n ReLU-like features
// max(0, N(0,1))/sqrt(d/2) of dimension d (so that E‖x‖² ≈ 1 at every d,
// as for normalised deep features) in float64.
func BenchFeatures(n, d int, seed uint64) feat.Matrix {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := feat.Matrix{N: n, D: d, F64: make([]float64, n*d)}
	s := 1 / math.Sqrt(float64(d)/2)
	for i := range m.F64 {
		m.F64[i] = max(0, rng.NormFloat64()) * s
	}
	return m
}

// BenchSizes calls f with the inputs of the cost and matching benchmarks:
// BenchFeatures of n = 1000 and 4000 rows per domain in d = 2 and 512
// dimensions, named "n=…/d=…".
func BenchSizes(f func(name string, src, tgt feat.Matrix)) {
	for _, n := range []int{1000, 4000} {
		for _, d := range []int{2, 512} {
			f(fmt.Sprintf("n=%d/d=%d", n, d), BenchFeatures(n, d, 1), BenchFeatures(n, d, 2))
		}
	}
}

// LoopCPU runs f like b.Loop and also reports CPU seconds per op, which
// stays meaningful when other processes share the machine (wall time does
// not).
func LoopCPU(b *testing.B, f func()) {
	c0 := CPUTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(CPUTime()-c0)/float64(b.N)/1e9, "cpu-s/op")
}
