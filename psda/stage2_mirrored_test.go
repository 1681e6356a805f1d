package psda

import (
	"fmt"
	"math"
	"testing"
)

// TestStage2DenseMirrored checks the precondition of the dense Stage 2's
// solver (assign.MinWeightPerfectMatchingMirrored, which compares only one
// pair per row): every Stage 2 matrix psda builds is exactly symmetric, bit
// for bit, with a zero diagonal, for each discrepancy's model (the RBF
// mixture, its factored form on an imbalanced Stage 1's pairs, the linear
// MMD, CORAL), with and without the dummy node, written over a buffer of
// NaN as Stage 1's leftover matrix would be (an entry left unwritten shows).
func TestStage2DenseMirrored(t *testing.T) {
	rbf := Config{BatchSize: 8, Stages: 1, Discrepancy: MMD, Kernel: RBF}
	lin, coral := rbf, rbf
	lin.Kernel, coral.Discrepancy = Linear, CORAL
	for _, tc := range []struct {
		name   string
		cfg    Config
		ns, nt int
	}{
		{"rbf", rbf, 150, 150}, {"rbf", rbf, 151, 151},
		{"rbf-factored", rbf, 151, 30}, {"rbf-factored", rbf, 30, 160},
		{"linear", lin, 150, 150}, {"linear", lin, 151, 40},
		{"coral", coral, 150, 150}, {"coral", coral, 151, 151},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d", tc.name, tc.ns, tc.nt), func(t *testing.T) {
			src, tgt := floorFeatures("clustered", tc.ns, tc.nt, 12, 5)
			m1, err := defaultPlan().match(src, tgt, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := len(m1.Pairs)
			n := p + p%2
			buf := make([]float64, n*n)
			for i := range buf {
				buf[i] = math.NaN()
			}
			c, m, _ := stage2Dense(src, tgt, tc.cfg, m1.Pairs, nil, buf)
			if m != n {
				t.Fatalf("%d pairs: a matrix of %d nodes, want %d", p, m, n)
			}
			for i := 0; i < m; i++ {
				if math.Float64bits(c[i*m+i]) != 0 {
					t.Fatalf("diagonal entry %d is %v, want +0", i, c[i*m+i])
				}
				for j := i + 1; j < m; j++ {
					x, y := c[i*m+j], c[j*m+i]
					if math.Float64bits(x) != math.Float64bits(y) || x-x != 0 {
						t.Fatalf("c[%d][%d] = %v but c[%d][%d] = %v: want the same finite bits", i, j, x, j, i, y)
					}
				}
			}
		})
	}
}
