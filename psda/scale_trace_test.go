package psda

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// classFeatures returns benchmarks/scale.py's "classes" data in Go: n points
// in R^d drawn around 65 class centres (N(0, 1) each coordinate) with
// N(0, 0.5²) noise, the target shifted by one N(0, 0.3²) vector, all scaled
// by 1/sqrt(d), in float32. The same distribution, not the same numbers as
// NumPy's generator.
func classFeatures(n, d int, target bool, seed uint64) Matrix {
	rng := rand.New(rand.NewPCG(seed, 7))
	centres := make([]float64, 65*d)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	shift := make([]float64, d)
	for i := range shift {
		shift[i] = 0.3 * rng.NormFloat64()
	}
	rng = rand.New(rand.NewPCG(seed, map[bool]uint64{false: 11, true: 13}[target]))
	s := 1 / math.Sqrt(float64(d))
	m := Matrix{N: n, D: d, F32: make([]float32, n*d)}
	for i := 0; i < n; i++ {
		c := rng.IntN(65)
		for j := 0; j < d; j++ {
			x := centres[c*d+j] + 0.5*rng.NormFloat64()
			if target {
				x += shift[j]
			}
			m.F32[i*d+j] = float32(x * s)
		}
	}
	return m
}

// TestScaleTrace runs one large sparse Match with the sparse path's trace,
// each line stamped with the wall and CPU seconds since the start, to see
// where a scale case spends its time. It runs only when PSDA_SCALE is set,
// as DATA:N[:D[:K]] with DATA gauss or classes, e.g.
//
//	PSDA_SCALE=classes:50000 go test -run TestScaleTrace -v -timeout 0 ./psda
//
// (benchmarks/scale.py's "classes" case at d = 512, k = 32, MMD-RBF,
// Double-paired).
func TestScaleTrace(t *testing.T) {
	spec := os.Getenv("PSDA_SCALE")
	if spec == "" {
		t.Skip("set PSDA_SCALE=classes:50000 (DATA:N[:D[:K]]) to run")
	}
	f := strings.Split(spec, ":")
	num := func(i, def int) int {
		if i >= len(f) {
			return def
		}
		v, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatalf("PSDA_SCALE=%q: field %d is not an integer", spec, i)
		}
		return v
	}
	n, d, k := num(1, 50000), num(2, 512), num(3, 32)
	var src, tgt Matrix
	switch f[0] {
	case "classes":
		src, tgt = classFeatures(n, d, false, 1), classFeatures(n, d, true, 1)
	case "gauss":
		src, tgt = gaussFeatures(n, d, 1), gaussFeatures(n, d, 2)
		for i := range src.F64 {
			src.F64[i] /= math.Sqrt(float64(d))
			tgt.F64[i] = (tgt.F64[i] + 0.2) / math.Sqrt(float64(d))
		}
	default:
		t.Fatalf("PSDA_SCALE=%q: DATA is gauss or classes", spec)
	}
	w0, c0 := time.Now(), testref.CPUTime()
	pl := defaultPlan()
	pl.trace = func(format string, args ...any) {
		fmt.Printf("%8.1f %8.1f  %s\n", time.Since(w0).Seconds(), (testref.CPUTime() - c0).Seconds(), fmt.Sprintf(format, args...))
	}
	m, err := pl.match(src, tgt, Config{BatchSize: k, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%8.1f %8.1f  done: stage 1 cost %.10g, stage 2 cost %.10g, bound %.10g\n",
		time.Since(w0).Seconds(), (testref.CPUTime() - c0).Seconds(), m.Stage1Cost, m.Stage2Cost, m.Stage2Bound)
}

// TestFloorTrace runs one Double-paired MMD-RBF matching (k = 32, Auto) of
// benchmarks/floor.py's data (floorFeatures: the same distributions, not
// NumPy's numbers) with the sparse path's trace and each phase's wall and
// CPU seconds, read from the Monitor as BenchmarkStage2Factored reads them.
// It runs only when PSDA_FLOOR is set, as KIND:NS:NT:D[:split|:mirror]
// with KIND relu, gauss or clustered; split runs Stage 1 dense and Stage 2
// sparse (as BenchmarkStage2Factored's split); mirror matches the data of
// KIND:NT:NS:D with source and target swapped (the same points: NS target
// rows as sources), e.g.
//
//	PSDA_FLOOR=relu:40000:2000:512 go test -run TestFloorTrace -v -timeout 0 ./psda
//	PSDA_FLOOR=relu:2000:40000:512:mirror go test -run TestFloorTrace -v -timeout 0 ./psda
//
// Its last lines give the result's hash (pairs, quadruplets, singles and
// the bits of the three costs) for comparing trees, and the matching's
// alone (pairs, quadruplets, singles) for comparing paths, whose costs
// agree only to rounding.
func TestFloorTrace(t *testing.T) {
	spec := os.Getenv("PSDA_FLOOR")
	if spec == "" {
		t.Skip("set PSDA_FLOOR=relu:40000:2000:512 (KIND:NS:NT:D[:split|:mirror]) to run")
	}
	f := strings.Split(spec, ":")
	if len(f) < 4 || len(f) > 5 || len(f) == 5 && f[4] != split && f[4] != "mirror" {
		t.Fatalf("PSDA_FLOOR=%q: want KIND:NS:NT:D[:split|:mirror]", spec)
	}
	var dims [3]int
	for i := range dims {
		v, err := strconv.Atoi(f[i+1])
		if err != nil || v < 1 {
			t.Fatalf("PSDA_FLOOR=%q: field %d is not a positive integer", spec, i+1)
		}
		dims[i] = v
	}
	ns, nt, d := dims[0], dims[1], dims[2]
	src, tgt := floorFeatures(f[0], ns, nt, d, 1)
	mirror := len(f) == 5 && f[4] == "mirror"
	if mirror {
		tgt, src = floorFeatures(f[0], nt, ns, d, 1)
	}
	w0, c0 := time.Now(), testref.CPUTime()
	pl := defaultPlan()
	if len(f) == 5 && !mirror {
		_, s2 := stageBytes(ns, nt)
		pl.denseLimit = s2 - 1
	}
	pl.trace = func(format string, args ...any) {
		fmt.Printf("%8.1f %8.1f  %s\n", time.Since(w0).Seconds(), (testref.CPUTime() - c0).Seconds(), fmt.Sprintf(format, args...))
	}
	mon := &Monitor{}
	var phases [PhaseDone + 1][2]time.Duration
	stop := clockPhases(mon, &phases)
	m, err := pl.match(src, tgt, Config{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Auto, Monitor: mon})
	stop()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%8.1f %8.1f  done: stage 1 cost %.10g, stage 2 cost %.10g, bound %.10g\n",
		time.Since(w0).Seconds(), (testref.CPUTime() - c0).Seconds(), m.Stage1Cost, m.Stage2Cost, m.Stage2Bound)
	names := []string{"stage 1 costs", "stage 1 assignment", "stage 2 costs", "stage 2 matching"}
	for k, name := range names {
		v := phases[PhaseStage1Costs+k]
		fmt.Printf("%-20s wall %6.2f s  cpu %6.2f s\n", name, v[0].Seconds(), v[1].Seconds())
	}
	h := sha256.New()
	put := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	for _, pr := range m.Pairs {
		put(uint64(pr.S))
		put(uint64(pr.T))
	}
	for _, q := range m.Quads {
		put(uint64(q[0]))
		put(uint64(q[1]))
	}
	for _, r := range m.Singles {
		put(uint64(r))
	}
	matching := h.Sum(nil)[:8] // the pairs, quadruplets and singles alone
	for _, v := range []float64{m.Stage1Cost, m.Stage2Cost, m.Stage2Bound} {
		put(math.Float64bits(v))
	}
	fmt.Printf("hash %x (matching %x, costs %016x %016x %016x)\n", h.Sum(nil)[:8], matching,
		math.Float64bits(m.Stage1Cost), math.Float64bits(m.Stage2Cost), math.Float64bits(m.Stage2Bound))
}
