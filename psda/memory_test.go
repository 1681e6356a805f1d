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
