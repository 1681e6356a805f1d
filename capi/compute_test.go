package capi

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/psda-dev/psda/internal/binding"
	"github.com/psda-dev/psda/psda"
	"github.com/psda-dev/psda/pyapi"
)

// TestBindingsAgree computes the same matchings through the C ABI's context
// (the body of psda_compute_f32/_f64) and through pyapi's Matching.Compute,
// the gopy binding's, and checks that both give identical results, and
// identical failures (status kinds and messages), on the same inputs: the
// two bindings run one code path, binding.Compute (issue 25).
func TestBindingsAgree(t *testing.T) {
	const d = 5
	feats := func(n int, seed uint64) []float64 {
		r := rand.New(rand.NewPCG(seed, 7))
		x := make([]float64, n*d)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return x
	}
	src, tgt := feats(37, 1), feats(29, 2)
	nan := append([]float64(nil), src...)
	nan[11] = math.NaN()
	rbf := psda.Config{BatchSize: 4, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.RBF, Solver: psda.Auto}
	with := func(f func(*psda.Config)) psda.Config { c := rbf; f(&c); return c }
	for _, tc := range []struct {
		name       string
		cfg        psda.Config
		src, tgt   []float64
		ns, nt, dm int
		f32        bool
		fails      bool
	}{
		{"rbf, two stages", rbf, src, tgt, 37, 29, d, false, false},
		{"rbf, float32", rbf, src, tgt, 37, 29, d, true, false},
		{"linear, one stage, n_t > n_s", with(func(c *psda.Config) { c.Kernel, c.Stages, c.BatchSize = psda.Linear, 1, 3 }), tgt, src, 29, 37, d, false, false},
		{"coral, sparse", with(func(c *psda.Config) { c.Discrepancy, c.Solver = psda.CORAL, psda.Sparse }), src, tgt, 37, 29, d, false, false},
		{"NaN source", rbf, nan, tgt, 37, 29, d, false, true},
		{"odd batch", with(func(c *psda.Config) { c.BatchSize = 5 }), src, tgt, 37, 29, d, false, true},
		{"NULL target", rbf, src, nil, 37, 29, d, false, true},
		{"n_source 0", rbf, src, tgt, 0, 29, d, false, true},
		{"dim -1", rbf, src, tgt, 37, 29, -1, false, true},
		{"n_target*dim overflows", rbf, src, tgt, 37, 1 << 62, 4, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, g := buffer(tc.src, tc.f32), buffer(tc.tgt, tc.f32)
			c := &context{cfg: tc.cfg}
			c.view.Store(new([3]int64))
			f := c.compute(binding.Buffers{Source: s, Target: g, NSource: int64(tc.ns), NTarget: int64(tc.nt), Dim: int64(tc.dm), F32: tc.f32})

			p := pyapi.NewMatching(tc.cfg.BatchSize, tc.cfg.Stages, tc.cfg.Discrepancy, tc.cfg.Kernel, 0, 0, true, tc.cfg.Solver)
			st := p.Compute(uintptr(s), tc.ns, uintptr(g), tc.nt, tc.dm, tc.f32)

			if tc.fails {
				if f == nil || st == pyapi.StatusOK {
					t.Fatalf("capi failure %v, pyapi status %d: want both to fail", f, st)
				}
				if f.msg != p.Err() {
					t.Errorf("messages differ:\ncapi:  %s\npyapi: %s", f.msg, p.Err())
				}
				if want := map[C_int]int{errInvalid: pyapi.StatusInvalid, errNull: pyapi.StatusInvalid, errSize: pyapi.StatusInvalid}[C_int(f.status)]; st != want {
					t.Errorf("capi status %d, pyapi status %d: want %d", f.status, st, want)
				}
				return
			}
			if f != nil || st != pyapi.StatusOK {
				t.Fatalf("capi: %v; pyapi: status %d, %s", f, st, p.Err())
			}
			pairs, quads, singles := make([]int64, 2*p.NumPairs()), make([]int64, 2*p.NumQuads()), make([]int64, p.NumSingles())
			if msg := p.Copy(addr(pairs), addr(quads), addr(singles)); msg != "" {
				t.Fatal(msg)
			}
			m := c.res
			if !reflect.DeepEqual(pairs, flatPairs(m.Pairs)) || !reflect.DeepEqual(quads, flatQuads(m.Quads)) || !reflect.DeepEqual(singles, ints(m.Singles)) {
				t.Errorf("the bindings' matchings differ")
			}
			if p.Objective(0) != m.Stage1Cost || p.Objective(1) != m.Stage2Cost || p.Objective(2) != m.Stage2Bound {
				t.Errorf("objectives: pyapi %v %v %v, capi %v %v %v", p.Objective(0), p.Objective(1), p.Objective(2), m.Stage1Cost, m.Stage2Cost, m.Stage2Bound)
			}
			if v := c.view.Load(); v[0] != psda.ProgressTotal || v[2] != psda.PhaseDone {
				t.Errorf("capi progress view %v after the compute", *v)
			}
		})
	}
}

// C_int is the type of a failure's status, named without cgo (test files
// cannot use it).
type C_int = int32

// buffer returns x's values as a buffer the bindings view: the float64s
// themselves, or their float32 copy when f32; nil for nil.
func buffer(x []float64, f32 bool) unsafe.Pointer {
	if len(x) == 0 {
		return nil
	}
	if !f32 {
		return unsafe.Pointer(&x[0])
	}
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return unsafe.Pointer(&y[0])
}

func addr(s []int64) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

func flatPairs(ps []psda.Pair) []int64 {
	out := make([]int64, 0, 2*len(ps))
	for _, p := range ps {
		out = append(out, int64(p.S), int64(p.T))
	}
	return out
}

func flatQuads(qs [][2]int) []int64 {
	out := make([]int64, 0, 2*len(qs))
	for _, q := range qs {
		out = append(out, int64(q[0]), int64(q[1]))
	}
	return out
}

func ints(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}
