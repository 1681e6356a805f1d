package assign

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// scipyPython returns the first interpreter that imports scipy among
// $PSDA_PYTHON, python and python3 on PATH (an activated venv comes first
// there), or skips the test naming the candidates when none does. The search
// runs once per test binary.
func scipyPython(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		var cands []string
		if p := os.Getenv("PSDA_PYTHON"); p != "" {
			cands = append(cands, p)
		}
		cands = append(cands, "python", "python3")
		for _, c := range cands {
			path, err := exec.LookPath(c)
			if err != nil {
				pythonWhy = append(pythonWhy, fmt.Sprintf("%s: %v", c, err))
				continue
			}
			if out, err := exec.Command(path, "-c", "import scipy.optimize").CombinedOutput(); err != nil {
				lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
				pythonWhy = append(pythonWhy, fmt.Sprintf("%s: %v: %s", path, err, lines[len(lines)-1]))
				continue
			}
			pythonPath = path
			return
		}
	})
	if pythonPath == "" {
		t.Skipf("no Python with SciPy (set PSDA_PYTHON or put a venv with scipy on PATH): %s", strings.Join(pythonWhy, "; "))
	}
	return pythonPath
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonWhy  []string
)

// scipyCost returns the optimum of scipy.optimize.linear_sum_assignment on
// the nr×nc matrix c (SciPy transposes wide/tall itself), or skips the test
// when SciPy is not available.
func scipyCost(t *testing.T, c []float64, nr, nc int) float64 {
	return runSciPy(t, c, nr, nc, "c")
}

// scipyImbalancedCost returns the optimum of the imbalanced problem (nr > nc)
// computed by SciPy on docs/method.md's square model of the imbalanced constraints: q+1 copies of each
// column and nc−r dummy rows allowed (cost 0) only on the extra copy, the
// required copies forbidden (inf) for them.
func scipyImbalancedCost(t *testing.T, c []float64, nr, nc int) float64 {
	return runSciPy(t, c, nr, nc, fmt.Sprintf(`np.vstack([np.repeat(c, %[1]d + 1, axis=1),
    np.tile(np.r_[np.full(%[1]d, np.inf), 0.0], (%[2]d, %[3]d))])`, nr/nc, nc-nr%nc, nc))
}

// runSciPy solves the matrix given by the NumPy expression expr (in terms of
// the nr×nc matrix c) with linear_sum_assignment and returns the sum of the
// entries of c's rows, or skips the test when SciPy is not available.
func runSciPy(t *testing.T, c []float64, nr, nc int, expr string) float64 {
	return runPython(t, c, nr, nc, fmt.Sprintf(`from scipy.optimize import linear_sum_assignment
m = %s
r, k = linear_sum_assignment(m)
keep = r < %d
print(repr(float(m[r[keep], k[keep]].sum())))`, expr, nr))
}

// runPython runs the Python program body with scipyPython's interpreter and
// the nr×nc matrix c loaded as the NumPy array c, and returns the float it
// prints; it skips the test when no interpreter has SciPy or the program
// needs a module the interpreter lacks, and fails it on any other error.
func runPython(t *testing.T, c []float64, nr, nc int, body string) float64 {
	t.Helper()
	python := scipyPython(t)
	f := filepath.Join(t.TempDir(), "c.f64")
	buf := make([]byte, 8*len(c))
	for k, x := range c {
		binary.LittleEndian.PutUint64(buf[8*k:], math.Float64bits(x))
	}
	if err := os.WriteFile(f, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	prog := fmt.Sprintf("import numpy as np\nc = np.fromfile(%q, dtype='<f8').reshape(%d, %d)\n%s", f, nr, nc, body)
	out, err := exec.Command(python, "-c", prog).CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("ModuleNotFoundError")) {
		t.Skipf("Python reference needs a module %s lacks: %s", python, out)
	}
	if err != nil {
		t.Fatalf("Python reference failed: %v: %s", err, out)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("Python reference printed %q", out)
	}
	return v
}

// TestRectangularAgainstSciPy compares optimal costs with SciPy's
// independent implementation on mid-sized problems.
func TestRectangularAgainstSciPy(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cases := []struct {
		name   string
		nr, nc int
		c      []float64
	}{
		{"uniform300", 300, 300, fill(300*300, rng.Float64)},
		{"int300x450", 300, 450, fill(300*450, func() float64 { return float64(rng.IntN(20)) })},
		{"stage2Rank2_400", 400, 400, stage2Cost(400, 5)},
		{"sqdist512_300", 300, 300, stage1Cost(300, 300, 512, 6)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Rectangular(tc.c, tc.nr, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			want := scipyCost(t, tc.c, tc.nr, tc.nc)
			if math.Abs(s.Cost-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("cost %v, SciPy %v", s.Cost, want)
			}
		})
	}
}

// TestImbalancedAgainstSciPy compares Imbalanced with SciPy on the explicit
// copy model; the column-major copy layout (copies of a column adjacent)
// matches np.repeat.
func TestImbalancedAgainstSciPy(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	cases := []struct {
		name   string
		nr, nc int
		c      []float64
	}{
		{"uniform500x130", 500, 130, fill(500*130, rng.Float64)},
		{"int400x100", 400, 100, fill(400*100, func() float64 { return float64(rng.IntN(6)) })},
		{"sqdist2d700x300", 700, 300, stage1Cost(700, 300, 2, 7)},
		{"sqdist512_450x400", 450, 400, stage1Cost(450, 400, 512, 8)},
		// Forced and near-forced: one column is a copy (forcedColumn); a few
		// columns have more than scanCopies copies each (copyHeap), with
		// ties among and within them.
		{"oneColumn900x1", 900, 1, fill(900, rng.Float64)},
		{"int600x3", 600, 3, fill(600*3, func() float64 { return float64(rng.IntN(3)) })},
		{"constant301x2", 301, 2, fill(301*2, func() float64 { return 1.5 })},
		{"uniform1000x7", 1000, 7, fill(1000*7, rng.Float64)},
		{"sqdist2d1200x23", 1200, 23, stage1Cost(1200, 23, 2, 9)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Imbalanced(tc.c, tc.nr, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			want := scipyImbalancedCost(t, tc.c, tc.nr, tc.nc)
			if math.Abs(s.Cost-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("cost %v, SciPy %v", s.Cost, want)
			}
		})
	}
}
