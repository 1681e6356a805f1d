package psda

import (
	"math"
	"strings"
	"testing"
)

func TestMatchErrors(t *testing.T) {
	ok := Matrix{N: 4, D: 2, F64: []float64{0, 1, 2, 3, 4, 5, 6, 7}}
	f32 := Matrix{N: 4, D: 2, F32: []float32{0, 1, 2, 3, 4, 5, 6, 7}}
	nan := Matrix{N: 4, D: 2, F64: []float64{0, 1, 2, math.NaN(), 4, 5, 6, 7}}
	inf := Matrix{N: 4, D: 2, F32: []float32{0, 1, 2, 3, 4, float32(math.Inf(1)), 6, 7}}
	d3 := Matrix{N: 2, D: 3, F64: []float64{0, 1, 2, 3, 4, 5}}
	cfg := Config{BatchSize: 2, Stages: 2, Discrepancy: MMD, Kernel: RBF}
	with := func(f func(*Config)) Config { c := cfg; f(&c); return c }
	for _, tc := range []struct {
		name     string
		src, tgt Matrix
		cfg      Config
		want     string // a fragment the message must contain
	}{
		{"nan source", nan, ok, cfg, "source[1, 1] = nan"},
		{"inf target", ok, inf, cfg, "target[2, 1] = inf"},
		{"d mismatch", ok, d3, cfg, "2 features per row but target has 3"},
		{"empty source", Matrix{D: 2, F64: []float64{}}, ok, cfg, "source has shape (0, 2)"},
		{"no data", Matrix{N: 1, D: 1}, ok, cfg, "exactly one of float32 or float64"},
		{"short data", Matrix{N: 3, D: 2, F64: []float64{1}}, ok, cfg, "has 1 values"},
		{"k zero", ok, ok, with(func(c *Config) { c.BatchSize = 0 }), "batch_size = 0"},
		{"coral k one", ok, ok, with(func(c *Config) { c.Discrepancy, c.Stages, c.BatchSize = CORAL, 1, 1 }), "discrepancy = 'coral'"},
		{"odd k stage 2", ok, ok, with(func(c *Config) { c.BatchSize = 3 }), "even batch_size"},
		{"k too large", ok, f32, with(func(c *Config) { c.BatchSize = 6 }), "only 4 pairs"},
		{"unknown kernel", ok, ok, with(func(c *Config) { c.Kernel = "poly" }), `kernel = 'poly'`},
		{"unknown discrepancy", ok, ok, with(func(c *Config) { c.Discrepancy = "wasserstein" }), `discrepancy = 'wasserstein'`},
		{"stages 3", ok, ok, with(func(c *Config) { c.Stages = 3 }), "stages = 3"},
		{"bad gamma", ok, ok, with(func(c *Config) { c.Gammas = []float64{1, -1} }), "gammas contains -1"},
		{"empty gammas", ok, ok, with(func(c *Config) { c.Gammas = []float64{} }), "gammas is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Match(tc.src, tc.tgt, tc.cfg)
			if err == nil {
				t.Fatalf("no error, got %+v", m)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}
