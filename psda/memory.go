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

// availableBytes reports the memory a new allocation can use, or 0 where it
// cannot tell: the smaller of what the kernel says is available
// (MemAvailable) and what the address-space limit (RLIMIT_AS, `ulimit -v`,
// common on clusters) leaves above the process's current size (VmSize).
// Past either, the Go runtime cannot map memory and aborts the process.
// A variable so tests can pose as a smaller machine.
var availableBytes = func() int64 {
	avail := procKB("/proc/meminfo", "MemAvailable:") << 10
	if room, ok := addressSpaceRoom(); ok && (avail <= 0 || room < avail) {
		// room may be <= 0: the process is already at its limit.
		avail = max(room, 1)
	}
	return avail
}

// procKB returns the value in kB of the line starting with key in a /proc
// file, or 0.
func procKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb
		}
	}
	return 0
}

// coralBytes returns the peak bytes of CORAL's d×d matrices for n_s+n_t = n
// rows: two covariances and their weighted difference are live at once, and
// the Gram routine packs the difference once more while it is applied. With
// fewer rows than features CORAL uses no d×d matrix (covForm) and needs
// O(n·(n + d)) instead, which the cost matrices' bound covers.
func coralBytes(n, d int) int64 {
	if coralLowRank(n, d) {
		return 0
	}
	return 4 * 8 * int64(d) * int64(d)
}

// checkMemory refuses a matching whose dense cost matrices (and, for CORAL,
// d×d covariances of the d = dim features) cannot fit, so that the user
// gets an error instead of the process being killed by the kernel's
// out-of-memory handler, or aborted by the Go runtime at an address-space
// limit, part-way through.
func checkMemory(ns, nt, dim int, cfg Config) error {
	s1, s2 := stageBytes(ns, nt)
	sparse1, sparse2 := sparseStages(ns, nt, cfg)
	need := int64(0)
	if !sparse1 {
		need = s1
	}
	if cfg.Stages == 2 && !sparse2 {
		need = max(need, s2)
	}
	what := "its dense cost matrices"
	cb := int64(0)
	if cfg.Discrepancy == CORAL {
		cb = coralBytes(ns+nt, dim)
	}
	if cb > 0 {
		// The covariances are live while a stage's costs are computed.
		need += cb
		what = fmt.Sprintf("its dense cost matrices and CORAL's %d×%d covariances", dim, dim)
	}
	avail := availableBytes()
	if avail <= 0 || need+need/8 <= avail {
		return nil
	}
	hint := "match a random subset of the larger domain, use stages = 1 if Stage 2 is the larger need, " +
		"use solver = \"sparse\", or run on a machine with more memory"
	if cb > need/2 {
		hint = "reduce the feature dimension (e.g. project the features to a few hundred dimensions), " +
			"use discrepancy = \"mmd\", or run on a machine with more memory"
	}
	src := "memory is available"
	if room, ok := addressSpaceRoom(); ok && room <= avail {
		src = "address space is left under the process's limit (ulimit -v / RLIMIT_AS)"
		hint = strings.Replace(hint, "run on a machine with more memory", "raise the limit (ulimit -v)", 1)
	}
	return fmt.Errorf("psda: matching %d source and %d target rows with stages = %d needs about %.1f GB for %s, "+
		"but only %.1f GB of %s: %s",
		ns, nt, cfg.Stages, float64(need)/1e9, what, float64(avail)/1e9, src, hint)
}
