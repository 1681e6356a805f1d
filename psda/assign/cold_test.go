package assign

import (
	"fmt"
	"testing"
)

// TestColdPhaseLeavesEarly checks that solveLSAP's cold phase stops as soon
// as its paths settle more extra columns than its probe allows, before the
// probe's row, rather than at the probe or when its budget (coldScans·n)
// runs out: on stage2Clustered's matrices the paths are long from the first
// rows (n = 2000: 389 columns beyond one a row after the probe's 125 rows),
// as on the Stage 2 costs of real features (MMD, n = 5000: 39,500 after
// 312 rows, the whole budget).
func TestColdPhaseLeavesEarly(t *testing.T) {
	for _, n := range []int{1000, 2000} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			c := forbidDiagonal(stage2Clustered(n, 2), n)
			s, err := solveLSAP(c, n, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := Certify(c, n, n, s.solution(), tolFor(c)); err != nil {
				t.Fatal(err)
			}
			probe := max(n/16, coldProbe)
			if s.coldRows >= probe {
				t.Errorf("cold phase augmented %d rows (%d columns settled), want it to leave before its probe at %d rows", s.coldRows, s.coldSettled, probe)
			}
			t.Logf("cold phase: %d rows, %d columns settled", s.coldRows, s.coldSettled)
		})
	}
}
