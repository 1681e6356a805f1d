package diverse

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// Every search reports each finished pass (or draw) and stops at the first
// poll after Stop turns true, as psda's matchings do for Ctrl-C.

func TestExchangeReportsPassesAndStopsMidPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, g := 256, 16
	mk := func() *Problem { return randomProblem(rng, m, 2, g, 1) }
	var seen []float64
	h, err := Exchange(mk(), Options{Sign: 1, Passes: 30, Seed: 1, OnPass: func(pass int, f float64) {
		if pass != len(seen)+1 {
			t.Fatalf("pass %d reported after %d", pass, len(seen))
		}
		seen = append(seen, f)
	}})
	if err != nil || len(seen) != len(h)-1 || len(seen) < 2 {
		t.Fatalf("err %v, %d reports for history %v", err, len(seen), h)
	}
	for i, f := range seen {
		if f != h[i+1] {
			t.Fatalf("report %d = %g, history %g", i+1, f, h[i+1])
		}
	}
	// Stop turns true at the 3rd poll: polls come every 64 visits, so the
	// search stops inside the first pass (256 visits), with no pass reported.
	polls, reports := 0, 0
	_, err = Exchange(mk(), Options{Sign: 1, Passes: 30, Seed: 1, Stop: func() bool { polls++; return polls >= 3 },
		OnPass: func(int, float64) { reports++ }})
	if !errors.Is(err, ErrCancelled) || polls != 3 || reports != 0 {
		t.Fatalf("err %v after %d polls and %d reports: want ErrCancelled at poll 3, none reported", err, polls, reports)
	}
}

func TestSampleKDPPReportsDrawsAndStops(t *testing.T) {
	lam := []float64{0.5, 1, 2, 3}
	v := []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}
	out := make([]int64, 2*10)
	var done []int
	if err := SampleKDPP(lam, v, 4, 2, 10, 1, out, nil, func(r int) { done = append(done, r) }); err != nil {
		t.Fatal(err)
	}
	if len(done) == 0 || done[len(done)-1] != 10 {
		t.Fatalf("draws reported %v: want the last report to be 10", done)
	}
	polls := 0
	err := SampleKDPP(lam, v, 4, 2, 10, 1, out, func() bool { polls++; return polls > 4 }, nil)
	if !errors.Is(err, ErrCancelled) || polls != 5 {
		t.Fatalf("err %v after %d polls: want ErrCancelled at the 5th (one poll per draw)", err, polls)
	}
}
