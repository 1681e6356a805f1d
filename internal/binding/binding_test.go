package binding

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/psda-dev/psda/psda"
)

// TestComputeKinds checks the kind and message of each failure Compute
// reports, and that a cancel is consumed: the Monitor has none pending
// afterwards, so the next Compute runs.
func TestComputeKinds(t *testing.T) {
	x := make([]float64, 6*2)
	for i := range x {
		x[i] = float64(i*i%7) - 3
	}
	p := unsafe.Pointer(&x[0])
	cfg := psda.Config{BatchSize: 2, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.Linear}
	for _, tc := range []struct {
		name string
		b    Buffers
		cfg  psda.Config
		kind Kind
		want string
	}{
		{"NULL source", Buffers{Target: p, NSource: 6, NTarget: 6, Dim: 2}, cfg, Null, "source is NULL"},
		{"no rows", Buffers{Source: p, Target: p, NSource: 6, NTarget: 0, Dim: 2}, cfg, Size, "n_target = 0"},
		{"no columns", Buffers{Source: p, Target: p, NSource: 6, NTarget: 6, Dim: 0}, cfg, Size, "dim = 0"},
		{"bytes overflow", Buffers{Source: p, Target: p, NSource: 1 << 44, NTarget: 6, Dim: 1 << 2}, cfg, Size, "n_source*dim"},
		{"float32 bytes overflow", Buffers{Source: p, Target: p, NSource: 6, NTarget: 1 << 46, Dim: 1, F32: true}, cfg, Size, "n_target*dim"},
		{"odd batch", Buffers{Source: p, Target: p, NSource: 6, NTarget: 6, Dim: 2}, psda.Config{BatchSize: 3, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.Linear}, Invalid, "batch_size"},
	} {
		var mon psda.Monitor
		m, e := Compute(tc.b, tc.cfg, &mon, new([3]int64))
		if m != nil || e == nil || e.Kind != tc.kind || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%s: got %v, %+v; want kind %d mentioning %q", tc.name, m, e, tc.kind, tc.want)
		}
	}

	var mon psda.Monitor
	view := new([3]int64)
	b := Buffers{Source: p, Target: p, NSource: 6, NTarget: 6, Dim: 2}
	mon.Cancel()
	if _, e := Compute(b, cfg, &mon, view); e == nil || e.Kind != Cancelled {
		t.Fatalf("after Cancel: %v, want kind Cancelled", e)
	}
	if mon.Cancelled() {
		t.Fatal("a cancel is still pending after the cancelled Compute")
	}
	m, e := Compute(b, cfg, &mon, view)
	if e != nil || len(m.Pairs) != 6 {
		t.Fatalf("Compute after a cancelled one: %v", e)
	}
	if view[0] != psda.ProgressTotal || view[1] != psda.ProgressTotal || view[2] != psda.PhaseDone {
		t.Errorf("progress view %v after Compute", *view)
	}
}
