package psda

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
)

// TestDumpAssignCosts writes the dense cost matrices that the assignments of
// BenchmarkFloor's matchings solve, so that psda/assign's BenchmarkDumped
// can time and profile the solvers alone (the cost phases take as long
// again): for each data kind of floorFeatures, Stage 1's matrix with the
// larger side as rows (s1_<kind>_<nr>x<nc>.bin) and Stage 2's P×P matrix
// (s2_<kind>_<P>.bin), raw little-endian float64, row-major, as
// psda/assign's realStage2 reads them. It runs only with PSDA_DUMP_COSTS
// set to the output directory; PSDA_DUMP_SHAPES picks the shapes
// ("4000x4000:512", "20000x1000:256"; default the first) and
// PSDA_DUMP_KINDS the data kinds (comma-separated; default all three);
// PSDA_DUMP_STAGE1=1 writes Stage 1's matrices only (Stage 2's of 40000 ×
// 2000 would be 12.8 GB).
//
//	PSDA_DUMP_COSTS=/tmp/dumps go test -run DumpAssignCosts -timeout 1h ./psda/
func TestDumpAssignCosts(t *testing.T) {
	dir := os.Getenv("PSDA_DUMP_COSTS")
	if dir == "" {
		t.Skip("PSDA_DUMP_COSTS unset: set it to the directory the cost matrices go to")
	}
	shapes := os.Getenv("PSDA_DUMP_SHAPES")
	if shapes == "" {
		shapes = "4000x4000:512"
	}
	var ns, nt, d int
	if _, err := fmt.Sscanf(shapes, "%dx%d:%d", &ns, &nt, &d); err != nil {
		t.Fatalf("PSDA_DUMP_SHAPES = %q: want NSxNT:D, e.g. 20000x1000:256 (%v)", shapes, err)
	}
	cfg := Config{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF}
	kinds := []string{"gauss", "relu", "clustered"}
	if k := os.Getenv("PSDA_DUMP_KINDS"); k != "" {
		kinds = strings.Split(k, ",")
	}
	for _, kind := range kinds {
		src, tgt := floorFeatures(kind, ns, nt, d, 1)
		md := newStage1Model(src, tgt, cfg, false)
		c, nr, nc := md.Dense(), ns, nt
		if nt > ns { // the larger side's rows first, as stage1 writes it
			c, nr, nc = md.DenseT(), nt, ns
		}
		writeDump(t, filepath.Join(dir, fmt.Sprintf("s1_%s_%dx%d.bin", kind, nr, nc)), c)
		if os.Getenv("PSDA_DUMP_STAGE1") == "1" {
			continue
		}
		sol, err := assign.Imbalanced(c, nr, nc)
		if err != nil {
			t.Fatal(err)
		}
		pairs := make([]Pair, nr)
		for r, col := range sol.Col4Row {
			pairs[r] = Pair{S: r, T: col}
			if nt > ns {
				pairs[r] = Pair{S: col, T: r}
			}
		}
		c2, m, _ := stage2Dense(src, tgt, cfg, pairs, nil, nil)
		writeDump(t, filepath.Join(dir, fmt.Sprintf("s2_%s_%d.bin", kind, m)), c2)
	}
}

// writeDump writes c to path as raw little-endian float64.
func writeDump(t *testing.T, path string, c []float64) {
	t.Helper()
	raw := make([]byte, 8*len(c))
	for k, x := range c {
		binary.LittleEndian.PutUint64(raw[8*k:], math.Float64bits(x))
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
