package assign

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestNormaliseAnyThreads checks Normalise, which sorts its rows on all
// cores, against a brute-force reference (per row: the columns in
// increasing order, each with the value first added for it) for
// GOMAXPROCS 1, 2 and 8 and a thread setting below them, on 5000 rows
// (many of par.Rows' chunks) of which some repeat columns with other
// values and some are already in order.
func TestNormaliseAnyThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 9))
	const n, cols = 5000, 30
	in := make(Edges, n)
	for a := range in {
		for range rng.IntN(40) {
			in.Add(a, rng.IntN(cols), rng.Float64())
		}
		if a%7 == 0 { // in order already: one scan, left as it is
			slices.SortFunc(in[a], func(p, q Edge) int { return int(p.B) - int(q.B) })
			in[a] = slices.CompactFunc(in[a], func(p, q Edge) bool { return p.B == q.B })
		}
	}
	want, total := make(Edges, n), 0
	for a, row := range in {
		for b := int32(0); b < cols; b++ {
			if k := slices.IndexFunc(row, func(e Edge) bool { return e.B == b }); k >= 0 {
				want[a] = append(want[a], row[k])
				total++
			}
		}
	}
	testref.EachSetting(t, testref.Settings, func(run testref.Setting) {
		e := make(Edges, n)
		for a, row := range in {
			e[a] = slices.Clone(row)
		}
		if got := e.Normalise(); got != total {
			t.Fatalf("GOMAXPROCS %d, threads %d: Normalise returned %d edges, want %d", run.Procs, run.Workers, got, total)
		}
		for a := range e {
			if !slices.Equal(e[a], want[a]) { // Edge's X compares bit for bit (no NaN here)
				t.Fatalf("GOMAXPROCS %d, threads %d: row %d = %v, want %v", run.Procs, run.Workers, a, e[a], want[a])
			}
		}
	})
}

// TestEdgesSizedAhead checks NewEdges and Grow, which psda's sparse Stage 1
// and the pricing loop's checks use so that building and growing the
// candidate edges leaves no garbage: NewEdges makes at most two
// allocations (the edges and the rows, not one per row), each row holds its room and a row that outgrows it
// moves without touching its neighbours, and a row grown by n moves to
// exactly len + n (append would double it), keeping its edges.
func TestEdgesSizedAhead(t *testing.T) {
	room := []int{3, 0, 5, 1}
	var sink Edges
	if n := testing.AllocsPerRun(10, func() { sink = NewEdges(room) }); n > 2 {
		t.Errorf("NewEdges made %v allocations, want at most 2 (the edges, the rows)", n)
	}
	_ = sink
	e := NewEdges(room)
	if got, want := e.Bytes(), int64(24*len(room)+16*(3+0+5+1)); got != want {
		t.Errorf("Bytes %d, want %d (a row header and 16 bytes an edge of room)", got, want)
	}
	for a, r := range room {
		if len(e[a]) != 0 || cap(e[a]) != r {
			t.Fatalf("row %d: len %d, cap %d, want 0 and %d", a, len(e[a]), cap(e[a]), r)
		}
		for k := range r {
			e.Add(a, 10*a+k, float64(k))
		}
	}
	e.Add(0, 9, 9) // past its room: must not overwrite row 2
	if e[2][0] != (Edge{20, 0}) || len(e[0]) != 4 || e[0][3] != (Edge{9, 9}) {
		t.Fatalf("row 0 outgrew its room: row 0 %v, row 2 %v", e[0], e[2])
	}
	e.Grow(2, 4)
	if len(e[2]) != 5 || cap(e[2]) != 9 {
		t.Fatalf("row 2 grown by 4: len %d, cap %d, want 5 and 9", len(e[2]), cap(e[2]))
	}
	for k := range 5 {
		if e[2][k] != (Edge{int32(20 + k), float64(k)}) {
			t.Fatalf("row 2 grown: edge %d is %v", k, e[2][k])
		}
	}
	moved := &e[2][0]
	e.Grow(2, 4) // room enough: it stays
	if &e[2][0] != moved {
		t.Error("Grow moved a row that had room")
	}
	if e[3][0] != (Edge{30, 0}) {
		t.Errorf("row 3 changed to %v when row 2 grew", e[3][0])
	}
}
