package cost

import (
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/rbf"
)

// This file holds what the models' Gram passes share: their scope and the
// walks over a tile.

// Scope restricts a Gram pass of a cost model to some rows and columns
// and may run it in float32 (gram.Gram32), which packs half the bytes and
// runs the wider float32 micro-kernel (BenchmarkGram, engine32); its values
// are then within the model's Err32 bound of the float64 ones. Package
// psda's sparse path runs its pricing passes in float32; its candidate
// pass runs in float64 where it also yields the exact sums behind the
// terms, which a float32 pass never updates (Stage 1 of a balanced
// two-stage RBF matching defers them, Stage1.DeferSums, and runs it in
// float32).
type Scope struct {
	// Rows and Cols are the rows and columns of the pass; nil means all.
	Rows, Cols []int
	// F32 runs the pass in float32.
	F32 bool
	// trans runs a Stage 1 pass with the targets as the Gram product's
	// rows (Stage1.DenseT): emit(j, i0, x) then gets x[i] = X_{i0+i, j}.
	// The values are the same bits: the engine's dot products and squared
	// distances do not depend on which side is the rows (its tiles are
	// square, an entry's sum runs over the features in one order, and
	// IEEE products and sums commute), and the models form their row and
	// column sums per tile block in the same order either way.
	trans bool
}

// full reports whether the pass covers every entry in float64, so that it
// may update the sums behind the model's row and column terms.
func (sc Scope) full() bool { return sc.Rows == nil && sc.Cols == nil && !sc.F32 }

// kernelRow returns the RBF mixture's row evaluation in sc's precision:
// row32 in float32 passes.
func (sc Scope) kernelRow(k *rbf.Mixture) func(out, d, e []float64) {
	if sc.F32 {
		return k.Row32
	}
	return k.Row
}

// gram is the engine in sc's precision.
func (sc Scope) gram(x, y gram.Vectors, sym bool, kind gram.Kind, mon gram.Progress, epi func(t *gram.Tile)) {
	if sc.F32 {
		gram.Gram32(x, y, sym, kind, mon, epi)
	} else {
		gram.Gram(x, y, sym, kind, mon, epi)
	}
}

// emitRows hands every row of a tile to emit: the pass of a cross part that
// is the Gram entry itself.
func emitRows(emit func(i, j0 int, x []float64)) func(t *gram.Tile) {
	return func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			emit(t.I0+i, t.J0, t.G[i*t.LD:][:t.NJ])
		}
	}
}

// upperFrom returns the first column of row i that a symmetric pass visits:
// on a diagonal tile only the upper triangle (j >= i), elsewhere every column.
func upperFrom(t *gram.Tile, i int) int {
	if t.Diag {
		return i
	}
	return 0
}

// noProgress is the Progress of passes nobody follows.
type noProgress struct{}

func (noProgress) Err() error            { return nil }
func (noProgress) AddTile(ni, nj, d int) {}

// orNone returns mon, or noProgress when it is nil, so that the models may
// poll it.
func orNone(mon gram.Progress) gram.Progress {
	if mon == nil {
		return noProgress{}
	}
	return mon
}
