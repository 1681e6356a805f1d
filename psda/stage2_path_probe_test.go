package psda

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// readF32 reads features written by benchmarks/fashion_features.py: int32
// n, int32 d, then n·d float32, little-endian.
func readF32(t *testing.T, path string) Matrix {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 {
		t.Fatalf("%s: %d bytes, want an 8-byte header", path, len(b))
	}
	n, d := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	if len(b) != 8+4*n*d {
		t.Fatalf("%s: %d bytes, want 8 + 4·%d·%d", path, len(b), n, d)
	}
	m := Matrix{N: n, D: d, F32: make([]float32, n*d)}
	for i := range m.F32 {
		m.F32[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return m
}

// TestStage2PathProbe times a whole Double-paired MMD-RBF matching (k =
// 32) with Stage 2 dense (Auto's path where the matrix fits) and sparse
// (Stage 1 dense: BenchmarkStage2Factored's "split"), alternately in one
// process, and prints each one's CPU and wall seconds, its phases' CPU
// seconds, and for the sparse one the first screen of its relaxation (how
// many rows the candidate lists could not clear), which is what decides
// its cost (docs/performance.md, "Stage 2's path at the imbalanced sizes").
// It runs only when PSDA_PROBE is set, as KIND:NS:NT:D with KIND gauss,
// relu or clustered (floorFeatures), as cl:NS:NT:D:C:SIGMA
// (clusterFeatures), or as file:SRC:TGT (readF32); PSDA_PROBE_REPS
// repeats the pair, and PSDA_PROBE_K sets the candidates per row
// (plan.sparseK):
//
//	PSDA_PROBE=cl:12000:480:256:65:1 go test -run TestStage2PathProbe -v ./psda
func TestStage2PathProbe(t *testing.T) {
	spec := os.Getenv("PSDA_PROBE")
	if spec == "" {
		t.Skip("set PSDA_PROBE=KIND:NS:NT:D, cl:NS:NT:D:C:SIGMA or file:SRC:TGT to run")
	}
	f := strings.Split(spec, ":")
	num := func(i int) float64 {
		if i >= len(f) {
			t.Fatalf("PSDA_PROBE=%q: field %d missing", spec, i)
		}
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			t.Fatalf("PSDA_PROBE=%q: field %d is not a number", spec, i)
		}
		return v
	}
	var src, tgt Matrix
	switch f[0] {
	case "file":
		if len(f) != 3 {
			t.Fatalf("PSDA_PROBE=%q: want file:SRC:TGT", spec)
		}
		src, tgt = readF32(t, f[1]), readF32(t, f[2])
	case "gauss", "relu", "clustered":
		src, tgt = floorFeatures(f[0], int(num(1)), int(num(2)), int(num(3)), 1)
	case "cl":
		src, tgt = clusterFeatures("clustered", int(num(1)), int(num(2)), int(num(3)), int(num(4)), num(5), 1)
	default:
		t.Fatalf("PSDA_PROBE=%q: KIND is gauss, relu, clustered, cl or file", spec)
	}
	reps := 1
	if r := os.Getenv("PSDA_PROBE_REPS"); r != "" {
		var err error
		if reps, err = strconv.Atoi(r); err != nil {
			t.Fatalf("PSDA_PROBE_REPS=%q is not an integer", r)
		}
	}
	for rep := 0; rep < reps; rep++ {
		for _, sparse := range []bool{false, true} {
			var phases [PhaseDone + 1][2]time.Duration
			cfg := Config{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF, Monitor: &Monitor{}}
			pl := defaultPlan()
			screen := ""
			if k := os.Getenv("PSDA_PROBE_K"); k != "" {
				pl.sparseK, _ = strconv.Atoi(k)
			}
			if sparse {
				_, s2 := stageBytes(src.N, tgt.N)
				pl.denseLimit = s2 - 1
				pl.trace = func(format string, args ...any) {
					if screen == "" && strings.HasPrefix(format, "screen: ") {
						screen = fmt.Sprintf(format, args...)
					}
				}
			}
			stop := clockPhases(cfg.Monitor, &phases)
			w0, c0 := time.Now(), testref.CPUTime()
			m, err := pl.match(src, tgt, cfg)
			w, c := time.Since(w0).Seconds(), (testref.CPUTime() - c0).Seconds()
			stop()
			if err != nil {
				t.Fatal(err)
			}
			cpu := func(ph int) float64 { return phases[ph][1].Seconds() }
			fmt.Printf("%s %s: whole cpu %.2f wall %.2f | stage 1 %.2f + %.2f, stage 2 %.2f + %.2f | cost %.10g | %s\n",
				spec, map[bool]string{false: "dense", true: "sparse"}[sparse], c, w,
				cpu(PhaseStage1Costs), cpu(PhaseStage1Assign), cpu(PhaseStage2Costs), cpu(PhaseStage2Match),
				m.Stage2Cost, screen)
		}
	}
}
