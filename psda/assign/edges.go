package assign

import (
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds the candidate edge set that the pricing loop
// (pricing.go) grows and builds its sparse problems from.

// Edge is a candidate edge to column B whose cost has the cross part X
// (see PricedModel: the part the pricing passes compute).
type Edge struct {
	B int32
	X float64
}

// Edges is a candidate edge set by row: Edges[a] holds row a's edges.
type Edges [][]Edge

// NewEdges returns an empty edge set of len(room) rows whose row a holds
// room[a] edges before Add must grow it, all in one allocation: a caller
// that counts its edges first builds the set without the garbage of
// growing rows (a row that outgrows its room moves out, as append does).
func NewEdges(room []int) Edges {
	m := 0
	for _, r := range room {
		m += r
	}
	flat := make([]Edge, m)
	e := make(Edges, len(room))
	m = 0
	for a, r := range room {
		e[a] = flat[m : m : m+r]
		m += r
	}
	return e
}

// Bytes returns the memory of e's edges (16 bytes each, counted at their
// capacity) and row headers.
func (e Edges) Bytes() int64 {
	b := 24 * int64(len(e))
	for _, row := range e {
		b += 16 * int64(cap(row))
	}
	return b
}

// Add appends edge (a, b) with cross part x; Normalise restores the order.
func (e Edges) Add(a, b int, x float64) { e[a] = append(e[a], Edge{int32(b), x}) }

// Grow makes room in row a for n more edges: where it has less, the row
// moves to an allocation of its exact new size (append would double it).
func (e Edges) Grow(a, n int) {
	if row := e[a]; cap(row)-len(row) < n {
		e[a] = append(make([]Edge, 0, len(row)+n), row...)
	}
}

// Normalise sorts every row by column and drops repeated columns, keeping
// the first added, so that Has may search and a graph built from e lists
// each edge once; it returns the number of edges. Time O(m·log m), the rows
// on all cores: each row's result depends on that row alone, so it is the
// same for every thread count, and the sparse Stage 2's first call (40000
// rows of ~94 edges at 40000 × 2000) ran on one core while the other
// idled (docs/performance.md, "Serial sections around the sparse costs").
func (e Edges) Normalise() int {
	par.Rows(len(e), func(a0, a1 int) {
		for a, row := range e[a0:a1] {
			// Rows already in order (the loop adds few edges between two
			// calls) cost one scan.
			if !increasing(row) {
				slices.SortStableFunc(row, func(p, q Edge) int { return int(p.B) - int(q.B) })
				e[a0+a] = slices.CompactFunc(row, func(p, q Edge) bool { return p.B == q.B })
			}
		}
	})
	n := 0
	for _, row := range e {
		n += len(row)
	}
	return n
}

// Has reports whether the normalised row a holds column b, in O(log m).
// The pricing sinks ask it of every edge that enters a kept list, so the
// search is written out rather than passed a comparison function.
func (e Edges) Has(a, b int) bool {
	row, t := e[a], int32(b)
	lo, hi := 0, len(row)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); row[m].B < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(row) && row[lo].B == t
}

// Graph returns the sparse problem on e, one row per row of e: edge (a, b)
// with cross part x costs cost(a, b, x). The pricing models whose graph is
// e itself build it so (the dense warm start, psda's Stage 2).
func (e Edges) Graph(cost func(a, b int, x float64) float64) *Graph {
	n, m := len(e), 0
	for _, row := range e {
		m += len(row)
	}
	g := &Graph{N: n, Lo: make([]int, n), Hi: make([]int, n), Col: make([]int32, 0, m), Cost: make([]float64, 0, m)}
	for a, row := range e {
		g.Lo[a] = len(g.Col)
		for _, ed := range row {
			g.Col = append(g.Col, ed.B)
			g.Cost = append(g.Cost, cost(a, int(ed.B), ed.X))
		}
		g.Hi[a] = len(g.Col)
	}
	return g
}

// increasing reports whether row's columns strictly increase.
func increasing(row []Edge) bool {
	for k := 1; k < len(row); k++ {
		if row[k].B <= row[k-1].B {
			return false
		}
	}
	return true
}
