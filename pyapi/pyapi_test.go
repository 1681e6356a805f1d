package pyapi

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/psda-dev/psda/psda"
)

// addr returns the address of s's first element as Python would pass it.
func addr[T any](s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

func features(n, d int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return x
}

// TestMatchingAndSchedule checks the bound objects against the core they
// wrap: the pairs Copy writes are psda.Match's, and the batches a Schedule
// built from the Go-held matching fills are psda.NewSchedule's.
func TestMatchingAndSchedule(t *testing.T) {
	const ns, nt, d, k = 23, 17, 4, 4
	src, tgt := features(ns, d, 1), features(nt, d, 2)
	m := NewMatching(k, 2, psda.MMD, psda.RBF, 0, 0, true, psda.Auto)
	if msg := m.Validate(ns, nt); msg != "" {
		t.Fatalf("Validate: %s", msg)
	}
	if st := m.Compute(addr(src), ns, addr(tgt), nt, d, false); st != StatusOK {
		t.Fatalf("Compute: status %d: %s", st, m.Err())
	}
	want, err := psda.Match(psda.Matrix{N: ns, D: d, F64: src}, psda.Matrix{N: nt, D: d, F64: tgt},
		psda.Config{BatchSize: k, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.RBF})
	if err != nil {
		t.Fatal(err)
	}
	pairs := make([]int64, 2*m.NumPairs())
	quads := make([]int64, 2*m.NumQuads())
	singles := make([]int64, m.NumSingles())
	if msg := m.Copy(addr(pairs), addr(quads), addr(singles)); msg != "" {
		t.Fatal(msg)
	}
	if len(pairs) != 2*len(want.Pairs) || len(quads) != 2*len(want.Quads) || len(singles) != len(want.Singles) {
		t.Fatalf("sizes %d %d %d, want %d %d %d", len(pairs)/2, len(quads)/2, len(singles), len(want.Pairs), len(want.Quads), len(want.Singles))
	}
	for r, p := range want.Pairs {
		if pairs[2*r] != int64(p.S) || pairs[2*r+1] != int64(p.T) {
			t.Fatalf("pair %d = (%d, %d), want %v", r, pairs[2*r], pairs[2*r+1], p)
		}
	}
	if m.Objective(0) != want.Stage1Cost || m.Objective(2) != want.Stage2Bound {
		t.Errorf("objectives %v %v, want %v %v", m.Objective(0), m.Objective(2), want.Stage1Cost, want.Stage2Bound)
	}

	cfg := psda.ScheduleConfig{BatchSize: k, Seed: 9, DropLast: false, NumReplicas: 2}
	s := m.NewSchedule(cfg.BatchSize, cfg.Seed, cfg.DropLast, cfg.NumReplicas)
	ref, err := psda.NewSchedule(want, cfg)
	if s.Err() != "" || err != nil {
		t.Fatal(s.Err(), err)
	}
	for rank := range 2 {
		lens := make([]int64, s.NumBatches())
		if msg := s.BatchLens(rank, addr(lens), len(lens)); msg != "" {
			t.Fatal(msg)
		}
		n := 0
		for _, l := range lens {
			n += 2 * int(l)
		}
		got, exp := make([]int64, n), make([]int64, n)
		if msg := s.Fill(5, rank, 0, addr(got), n); msg != "" {
			t.Fatal(msg)
		}
		if _, err := ref.Fill(5, rank, 0, exp); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, exp) {
			t.Errorf("rank %d: batches differ from psda.Schedule's", rank)
		}
	}

	// The arrays copied out rebuild an equal matching, checked in Go.
	back := MatchingFromArrays(addr(pairs), len(pairs)/2, addr(quads), len(quads)/2, addr(singles), len(singles), ns, nt)
	if back.Err() != "" || back.NumPairs() != len(want.Pairs) {
		t.Fatalf("MatchingFromArrays: %q, %d pairs", back.Err(), back.NumPairs())
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		got  func() string
		want string
	}{
		{"odd batch", func() string { return NewMatching(5, 2, "mmd", "rbf", 0, 0, true, "auto").Validate(0, 0) }, "use 4 or 6"},
		{"unknown solver", func() string { return NewMatching(4, 2, "mmd", "rbf", 0, 0, true, "lu").Validate(0, 0) }, "solver = 'lu'"},
		{"batch too large", func() string { return NewMatching(8, 2, "mmd", "rbf", 0, 0, true, "auto").Validate(5, 3) }, "max(5, 3)"},
		{"empty gammas", func() string { return NewMatching(4, 2, "mmd", "rbf", 0, 0, false, "auto").Validate(0, 0) }, "gammas is empty"},
		{"few batches", func() string { return CheckSchedule(12, 4, 4, true, 2, "mmd") }, "batch_size <= 2"},
		{"pair out of range", func() string {
			p := []int64{0, 0, 5, 1}
			return MatchingFromArrays(addr(p), 2, 0, 0, addr([]int64{0, 1}), 2, 2, 2).Err()
		}, "do not index"},
		{"pair in two units", func() string {
			p := []int64{0, 0, 1, 1}
			return MatchingFromArrays(addr(p), 2, 0, 0, addr([]int64{0, 0}), 2, 2, 2).Err()
		}, "more than one unit"},
		{"null address", func() string { return MatchingFromArrays(0, 2, 0, 0, 0, 0, 2, 2).Err() }, "NULL"},
		{"schedule of nothing", func() string {
			return NewMatching(4, 2, "mmd", "rbf", 0, 0, true, "auto").NewSchedule(4, 0, true, 1).Err()
		}, "no matching"},
	}
	for _, tc := range tests {
		if got := tc.got(); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q does not mention %q", tc.name, got, tc.want)
		}
	}
}

// TestCancel checks that a cancel made while no Compute runs stops the next
// one, and that the Matching computes again afterwards.
func TestCancel(t *testing.T) {
	x := features(30, 3, 4)
	m := NewMatching(2, 1, "mmd", "linear", 0, 0, true, "auto")
	m.Cancel()
	if st := m.Compute(addr(x), 30, addr(x), 30, 3, false); st != StatusCancelled {
		t.Fatalf("status %d after Cancel, want %d", st, StatusCancelled)
	}
	if st := m.Compute(addr(x), 30, addr(x), 30, 3, false); st != StatusOK {
		t.Fatalf("status %d after a cancelled Compute: %s", st, m.Err())
	}
	a := m.ProgressView()
	v := *(**[3]int64)(unsafe.Pointer(&a)) // as Python reads it: an address, not a Go pointer
	if v[0] != psda.ProgressTotal || v[1] != psda.ProgressTotal || v[2] != psda.PhaseDone {
		t.Errorf("progress view %v after Compute", *v)
	}
}

func TestBatchCounts(t *testing.T) {
	for _, c := range []struct {
		p, k, r, total, rank int
		drop                 bool
	}{
		{22, 4, 2, 6, 3, false}, {22, 4, 2, 5, 2, true}, {8, 4, 3, 2, 1, false}, {8, 4, 3, 2, 0, true},
	} {
		if got, gotRank := EpochBatches(c.p, c.k, c.r, c.drop), RankBatches(c.p, c.k, c.r, c.drop); got != c.total || gotRank != c.rank {
			t.Errorf("%+v: %d, %d", c, got, gotRank)
		}
	}
}
