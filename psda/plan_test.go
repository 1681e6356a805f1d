package psda

import (
	"strings"
	"testing"
)

func TestDenseBytes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ns, nt, stages int
		want           int64
	}{
		{"balanced stage 1", 1000, 1000, 1, 8e6},
		{"transposed stage 1", 10, 1000, 1, 2 * 8 * 10 * 1000},
		{"stage 2 dominates", 15000, 2000, 2, 8 * 15000 * 15000},
		{"odd pairs get a dummy", 7, 3, 2, 8 * 8 * 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := denseBytes(tc.ns, tc.nt, tc.stages); got != tc.want {
				t.Fatalf("denseBytes(%d, %d, %d) = %d, want %d", tc.ns, tc.nt, tc.stages, got, tc.want)
			}
		})
	}
}

func TestMatchRefusesWhatCannotFit(t *testing.T) {
	if availableBytes() <= 0 {
		t.Skip("this system does not report available memory")
	}
	saved := availableBytes
	defer func() { availableBytes = saved }()
	availableBytes = func() int64 { return 1 << 30 } // pose as a machine with 1 GiB free
	big := Matrix{N: 20000, D: 1, F32: make([]float32, 20000)}
	small := Matrix{N: 100, D: 1, F32: make([]float32, 100)}
	_, err := Match(big, big, Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "3.2 GB for its dense cost matrices") {
		t.Fatalf("20000×20000 on 1 GiB: got %v, want an out-of-memory refusal", err)
	}
	if _, err := Match(small, small, Config{BatchSize: 2, Stages: 2, Discrepancy: MMD, Kernel: Linear}); err != nil {
		t.Fatalf("100×100 refused: %v", err)
	}
}

// Issue 17 case 2: CORAL's d×d covariances count, so that wide features are
// refused instead of aborting the process; with fewer rows than features
// there are none (covForm), and n = 8, d = 16,000 runs in little memory.
func TestMatchRefusesCoralCovariancesThatCannotFit(t *testing.T) {
	saved := availableBytes
	defer func() { availableBytes = saved }()
	availableBytes = func() int64 { return 150e6 }
	const n, d = 3000, 2000 // n_s+n_t > d: the dense form, 4·8·d² = 128 MB
	x := Matrix{N: n, D: d, F32: make([]float32, n*d)}
	_, err := Match(x, x, Config{BatchSize: 2, Stages: 1, Discrepancy: CORAL, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "2000×2000 covariances") || !strings.Contains(err.Error(), "feature dimension") {
		t.Fatalf("CORAL at n = %d, d = %d on 150 MB: got %v, want a refusal naming the covariances", n, d, err)
	}
	availableBytes = func() int64 { return 6 << 30 } // the 6 GB limit
	const wn, wd = 8, 16000
	w := Matrix{N: wn, D: wd, F32: make([]float32, wn*wd)}
	for i := range w.F32 {
		w.F32[i] = float32(i%13) - 6
	}
	m, err := Match(w, w, Config{BatchSize: 2, Stages: 2, Discrepancy: CORAL, Kernel: Linear})
	if err != nil || len(m.Pairs) != wn {
		t.Fatalf("CORAL at n = %d, d = %d: %v", wn, wd, err)
	}
}
