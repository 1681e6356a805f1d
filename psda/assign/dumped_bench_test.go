package assign

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// This file times the solvers on the cost matrices of whole psda matchings,
// dumped by psda's TestDumpAssignCosts (benchmarks/floor.py's data kinds:
// Stage 1's s1_<kind>_<nr>x<nc>.bin, Stage 2's s2_<kind>_<P>.bin), with
// the certificate psda checks after each (stage1.go, stage2.go). The dumps
// are not in the tree: set PSDA_ASSIGN_DUMPS to their directory, else the
// benchmark skips.
//
//	PSDA_DUMP_COSTS=/tmp/dumps go test -run DumpAssignCosts ./psda/
//	PSDA_ASSIGN_DUMPS=/tmp/dumps go test -run XXX -bench Dumped -benchtime 2x ./psda/assign/

// BenchmarkDumped times Imbalanced + Certify on each dumped Stage 1 matrix
// and MinWeightPerfectMatchingMirrored + CertifyMatching on each Stage 2 one
// (as psda/stage1.go and stage2.go run them: Stage 2's tolerance found
// before the timer),
// reporting CPU seconds beside the wall time (their ratio is the cores the
// solver kept busy), the certificate's share and, for an imbalanced Stage
// 1, the auction's bids and full row scans per row.
func BenchmarkDumped(b *testing.B) {
	dir := os.Getenv("PSDA_ASSIGN_DUMPS")
	if dir == "" {
		b.Skip("PSDA_ASSIGN_DUMPS unset: set it to the directory of psda's TestDumpAssignCosts")
	}
	files, err := filepath.Glob(filepath.Join(dir, "s[12]_*.bin"))
	if err != nil || len(files) == 0 {
		b.Skipf("no s1_*.bin or s2_*.bin in %s", dir)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".bin")
		var nr, nc int
		shape := name[strings.LastIndex(name, "_")+1:]
		if strings.HasPrefix(name, "s1_") {
			if _, err := fmt.Sscanf(shape, "%dx%d", &nr, &nc); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
		} else {
			if _, err := fmt.Sscanf(shape, "%d", &nr); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			nc = nr
		}
		b.Run(name, func(b *testing.B) {
			c := loadDump(b, path)
			if len(c) != nr*nc {
				b.Fatalf("%s: %d entries, want %d×%d", name, len(c), nr, nc)
			}
			var certify time.Duration
			var bids, scans int // the copy model's auction's
			// psda's Stage 2 takes its tolerance from its cost phase
			// (Stage2.DenseMax), not from a pass of its own.
			tol := PriceTol(c)
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if name[1] == '1' {
					var sol *Solution
					var err error
					if nr > nc && nc > 1 {
						// imbalancedFrom is Imbalanced there, with
						// the auction's work counters (one column is
						// forcedColumn's: the auction's bids, whose
						// increment needs a second column, would be
						// +Inf).
						var st *copySAP
						sol, st, err = imbalancedFrom(c, nr, nc, nil, nil)
						if err == nil {
							bids += st.bids
							scans += st.scans
						}
					} else {
						sol, err = Imbalanced(c, nr, nc)
					}
					if err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					if err := Certify(c, nr, nc, sol, PriceTol(c)); err != nil {
						b.Fatal(err)
					}
					certify += time.Since(t0)
				} else {
					// psda's Stage 2 matrix is written by mirroring.
					pm, err := MinWeightPerfectMatchingMirrored(c, nr, nil)
					if err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					em := &ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}
					if err := CertifyMatching(c, nr, em, tol); err != nil {
						b.Fatal(err)
					}
					certify += time.Since(t0)
				}
			}
			b.ReportMetric(certify.Seconds()/float64(b.N), "certify-s/op")
			if bids > 0 {
				b.ReportMetric(float64(bids)/float64(b.N*nr), "bids/row")
				b.ReportMetric(float64(scans)/float64(b.N*nr), "scans/row")
			}
		})
	}
}
