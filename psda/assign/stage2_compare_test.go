package assign

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStage2DenseCompare times the dense Stage 2 before (relaxation, odd-
// cycle repair and 2-opt polish, as MinWeightPerfectMatching was) and after
// (relaxation and blossom algorithm) on the matrices that psda's
// TestStage2Compare wrote to $PSDA_STAGE2_COMPARE, alternately in one
// process, and the certificate's pass. The solvers are single-threaded, so
// the process's CPU time is theirs (the machine may be shared).
func TestStage2DenseCompare(t *testing.T) {
	dir := os.Getenv("PSDA_STAGE2_COMPARE")
	if dir == "" {
		t.Skip("set PSDA_STAGE2_COMPARE=DIR (after psda's TestStage2Compare) to run the measurement")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.f64"))
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".f64")
		n, _ := strconv.Atoi(base[strings.LastIndex(base, "_")+1:])
		buf, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := make([]float64, n*n)
		for k := range c {
			c[k] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*k:]))
		}
		buf = nil
		for rep := 0; rep < 5; rep++ {
			t0 := cpuNow()
			if _, err := checkMatching(c, n); err != nil {
				t.Fatal(err)
			}
			mate, half, odd, err := matchRelaxed(c, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(odd) > 0 {
				if err := polish(denseCost(c, n), mate, odd, -1, nil); err != nil {
					t.Fatal(err)
				}
			}
			old := cpuNow() - t0
			cost := 0.0
			for r, q := range mate {
				if r < q {
					cost += c[r*n+q]
				}
			}
			t0 = cpuNow()
			pm, err := MinWeightPerfectMatching(c, n)
			if err != nil {
				t.Fatal(err)
			}
			neu := cpuNow() - t0
			scale := 0.0
			for _, x := range c {
				scale = math.Max(scale, math.Abs(x))
			}
			t0 = cpuNow()
			if err := CertifyMatching(c, n, &ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}, 1e-9*scale); err != nil {
				t.Fatal(err)
			}
			cert := cpuNow() - t0
			t.Logf("%s (CPU time): old %.3f s (cost %.12g, bound %.12g, %d odd vertices), new %.3f s (cost %.12g, bound %.12g), certificate %.3f s",
				base, old.Seconds(), cost, half, len(odd), neu.Seconds(), pm.Cost, pm.Bound, cert.Seconds())
		}
	}
}
