package assign

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// This file runs the solver on dumped Stage 2 costs of real features:
// benchmarks/refresh_drift.py's Fashion-MNIST MLP at step 468 (n_s = 5000,
// n_t = 500, d = 128), whose dense P×P Stage 2 matrices (MMD and CORAL,
// P = 5000) are what a real refresh solves (docs/performance.md, "What a
// refresh costs on real features"). The dumps are not in the tree: set
// PSDA_STAGE2_DUMPS to the directory holding c2_mmd.bin and c2_coral.bin
// (raw little-endian float64, row-major). Without it these tests skip;
// stage2Clustered is the stand-in in the tree.

// realStage2Names are the dumped matrices.
var realStage2Names = []string{"c2_mmd.bin", "c2_coral.bin"}

// realStage2 loads the dumped Stage 2 cost in file name of
// $PSDA_STAGE2_DUMPS and returns it with its order n, or skips when the
// variable is unset.
func realStage2(tb testing.TB, name string) ([]float64, int) {
	tb.Helper()
	dir := os.Getenv("PSDA_STAGE2_DUMPS")
	if dir == "" {
		tb.Skip("PSDA_STAGE2_DUMPS unset: set it to the directory of the dumped Stage 2 matrices")
	}
	c := loadDump(tb, filepath.Join(dir, name))
	n := int(math.Sqrt(float64(len(c))))
	if n*n != len(c) {
		tb.Fatalf("%s: %d bytes, not a square matrix of float64", name, 8*len(c))
	}
	return c, n
}

// TestRealStage2 solves the dumped matrices' matchings and checks their
// certificates: the relaxation's potentials (Certify) and the matching's
// duals (CertifyMatching), and that the matching costs no less than the
// relaxation, which bounds it from below.
func TestRealStage2(t *testing.T) {
	for _, name := range realStage2Names {
		t.Run(name, func(t *testing.T) {
			c, n := realStage2(t, name)
			r := forbidDiagonal(c, n)
			s, err := solveLSAP(r, n, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			sol := s.solution()
			if err := Certify(r, n, n, sol, tolFor(r)); err != nil {
				t.Fatalf("relaxation: %v", err)
			}
			pm, err := MinWeightPerfectMatching(c, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := CertifyMatching(c, n, &ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}, tolFor(r)); err != nil {
				t.Fatalf("matching: %v", err)
			}
			if pm.Cost < sol.Cost/2-tolFor(r) {
				t.Errorf("matching cost %v below half the relaxation's %v", pm.Cost, sol.Cost)
			}
			t.Logf("relaxation %.12g (bids %d, cold rows %d), matching %.12g, %d odd-cycle vertices", sol.Cost, s.bids, s.coldRows, pm.Cost, pm.OddVertices)
		})
	}
}

// BenchmarkRealStage2 times the relaxation (the matrix with its diagonal
// forbidden, solved as MinWeightPerfectMatching solves it) and the whole
// matching on the dumped matrices.
// Run: PSDA_STAGE2_DUMPS=dir go test -run XXX -bench RealStage2
// -benchtime 3x ./psda/assign
func BenchmarkRealStage2(b *testing.B) {
	for _, name := range realStage2Names {
		c, n := realStage2(b, name)
		r := forbidDiagonal(c, n)
		b.Run(name[3:len(name)-4]+"/relaxation", func(b *testing.B) {
			defer reportCPU(b, cpuNow())
			bids := 0
			for range b.N {
				s := newLSAP(r, n, n)
				s.sym = true // as MinWeightPerfectMatching solves it
				s, err := s.solve(nil)
				if err != nil {
					b.Fatal(err)
				}
				bids += s.bids
			}
			b.ReportMetric(float64(bids)/float64(b.N), "bids/op")
		})
		b.Run(name[3:len(name)-4]+"/matching", func(b *testing.B) {
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := MinWeightPerfectMatching(c, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
