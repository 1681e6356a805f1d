package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestMirroredSameResult checks that MinWeightPerfectMatchingMirrored
// returns MinWeightPerfectMatchingWith's matching, duals and bounds bit for
// bit on symmetric costs (2-D Stage 2 costs, whose relaxation has odd
// cycles and is solved cold; costs of many ties; clustered costs, on which
// the relaxation's warm start reads the row pass's minima and holds, and
// shifted ones, on which it reads them and gives up for the auction), with
// any number of workers, and that its row pass finds symmetryPass's scale
// and the columns' minima.
func TestMirroredSameResult(t *testing.T) {
	for _, tc := range []struct {
		n    int
		ties bool
		cost func(n int) []float64 // nil: stage2Cost
	}{{6, false, nil}, {300, false, nil}, {1030, false, nil}, {1030, true, nil},
		{600, false, func(n int) []float64 { return stage2Clustered(n, 9) }},
		{1000, false, func(n int) []float64 { return stage2Shifted(n, 4, 3) }}} {
		n := tc.n
		c := stage2Cost(n, uint64(n))
		if tc.cost != nil {
			c = tc.cost(n)
		}
		if tc.ties {
			rng := rand.New(rand.NewPCG(uint64(n), 4))
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					x := float64(rng.IntN(5))
					c[i*n+j], c[j*n+i] = x, x
				}
			}
		}
		want, err := MinWeightPerfectMatchingWith(slices.Clone(c), n, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantScale, _ := symmetryPass(c, n)
		wantMin := make([]float64, n) // each column's off-diagonal minimum
		for j := range wantMin {
			wantMin[j] = inf
			for i := 0; i < n; i++ {
				if i != j {
					wantMin[j] = min(wantMin[j], c[i*n+j])
				}
			}
		}
		forWorkers(t, func(w int) {
			scale, colMin := rowPass(c, n)
			if scale != wantScale || !slices.Equal(colMin, wantMin) {
				t.Fatalf("n=%d %d workers: rowPass scale %v (want symmetryPass's %v) or its column minima differ from the brute-force ones", n, w, scale, wantScale)
			}
			got, err := MinWeightPerfectMatchingMirrored(slices.Clone(c), n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Mate, want.Mate) || math.Float64bits(got.Cost) != math.Float64bits(want.Cost) ||
				math.Float64bits(got.Bound) != math.Float64bits(want.Bound) || !reflect.DeepEqual(got.Duals, want.Duals) {
				t.Fatalf("n=%d ties=%v %d workers: mirrored cost %v bound %v, checked %v %v (or other mates or duals)",
					n, tc.ties, w, got.Cost, got.Bound, want.Cost, want.Bound)
			}
		})
	}
}

// TestMirroredErrors checks MinWeightPerfectMatchingMirrored's input
// errors: a non-finite entry named as MinWeightPerfectMatching names it, and
// a c that is not mirrored caught at a sampled pair.
func TestMirroredErrors(t *testing.T) {
	const n = 300
	c := stage2Cost(n, 1)
	c[7*n+7] = math.NaN() // the diagonal: ignored
	if _, err := MinWeightPerfectMatchingMirrored(slices.Clone(c), n, nil); err != nil {
		t.Fatalf("NaN on the diagonal: %v, want no error", err)
	}
	bad := slices.Clone(c)
	bad[200*n+20], bad[250*n+3] = math.Inf(1), math.NaN()
	_, err := MinWeightPerfectMatchingMirrored(bad, n, nil)
	if err == nil || !strings.Contains(err.Error(), "c[200][20] = +Inf") {
		t.Fatalf("non-finite entries: %v, want c[200][20] named", err)
	}
	// Row 5's sampled partner is (5 + 7919) mod n.
	j := (5 + 7919) % n
	bad = slices.Clone(c)
	bad[5*n+j] += 1
	_, err = MinWeightPerfectMatchingMirrored(bad, n, nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("c[5][%d]", j)) {
		t.Fatalf("asymmetric pair (5, %d): %v, want it named", j, err)
	}
	if _, err := MinWeightPerfectMatchingMirrored(c[:n*n-1], n, nil); err == nil || !strings.Contains(err.Error(), "len(c)") {
		t.Fatalf("short c: %v, want the length named", err)
	}
}

// TestCandidatesFromRowPassMinima checks that the relaxation's warm start
// finds the same candidates from the column minima of the mirrored input
// check (rowPass) as from its own pass over c, on Stage 2 costs (some with
// entries not exactly symmetric) and on costs with many ties, with any
// number of workers.
func TestCandidatesFromRowPassMinima(t *testing.T) {
	for _, tc := range []struct {
		n    int
		ties bool
	}{{300, false}, {1030, false}, {1030, true}} {
		c := stage2Cost(tc.n, 7)
		n := tc.n
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				switch {
				case tc.ties:
					x := float64(rng.IntN(5))
					c[i*n+j], c[j*n+i] = x, x
				case rng.IntN(7) == 0: // an asymmetry within the check's tolerance
					c[j*n+i] = c[i*n+j] * (1 + 1e-12)
				}
			}
		}
		_, colMin := rowPass(c, n)
		for i := 0; i < n; i++ {
			c[i*n+i] = inf // as MinWeightPerfectMatching hands c to the relaxation
		}
		want := denseCandidates(c, n, warmK(n), true, nil)
		forWorkers(t, func(w int) {
			if _, colMin2 := rowPass(c, n); !slices.Equal(colMin2, colMin) {
				t.Fatalf("n=%d %d workers: column minima changed with the workers (or the diagonal)", n, w)
			}
			got := denseCandidates(c, n, warmK(n), true, colMin)
			for i := range want {
				if !slices.Equal(want[i], got[i]) {
					t.Fatalf("n=%d ties=%v %d workers row %d: candidates from the checked minima %v, from c %v", n, tc.ties, w, i, got[i], want[i])
				}
			}
		})
	}
}
