package psda

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// denseBytes returns the peak bytes of the dense path's cost matrices:
// Stage 1's n_s×n_t float64 matrix (twice while it is transposed, when
// n_t > n_s), then Stage 2's m×m matrix over the pairs (Stage 1's is released
// before Stage 2 allocates).
func denseBytes(ns, nt, stages int) int64 {
	s1, s2 := stageBytes(ns, nt)
	if stages == 1 {
		return s1
	}
	return max(s1, s2)
}

// stageBytes returns the bytes of the dense cost matrices of Stage 1 and
// Stage 2 (see denseBytes).
func stageBytes(ns, nt int) (s1, s2 int64) {
	s1 = 8 * int64(ns) * int64(nt)
	if nt > ns {
		s1 *= 2
	}
	m := int64(max(ns, nt))
	m += m % 2
	return s1, 8 * m * m
}

// availableBytes reports the memory the kernel says a new allocation can
// use (MemAvailable), or 0 where it cannot tell. A variable so tests can
// pose as a smaller machine.
var availableBytes = func() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// checkMemory refuses a matching whose dense cost matrices cannot fit, so
// that the user gets an error instead of the process being killed by the
// kernel's out-of-memory handler part-way through.
func checkMemory(ns, nt int, cfg Config) error {
	s1, s2 := stageBytes(ns, nt)
	sparse1, sparse2 := sparseStages(ns, nt, cfg)
	need := int64(0)
	if !sparse1 {
		need = s1
	}
	if cfg.Stages == 2 && !sparse2 {
		need = max(need, s2)
	}
	avail := availableBytes()
	if avail <= 0 || need+need/8 <= avail {
		return nil
	}
	return fmt.Errorf("psda: matching %d source and %d target rows with stages = %d needs about %.1f GB for its dense cost matrices, "+
		"but only %.1f GB of memory is available: match a random subset of the larger domain, use stages = 1 if Stage 2 is the larger need, "+
		"use solver = \"sparse\", or run on a machine with more memory",
		ns, nt, cfg.Stages, float64(need)/1e9, float64(avail)/1e9)
}
