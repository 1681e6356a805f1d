// Package gram is the Gram-matrix engine behind every PSDA cost: a blocked,
// packed, multi-core product G = X Yᵀ (or the squared distances between the
// vectors) computed tile by tile and handed to an epilogue while the tile
// is in cache, in float64 (Gram) or float32 (Gram32, for screening passes),
// with its SIMD kernels: the AVX-512 and AVX2/FMA micro-kernels, chosen at
// run time by what the CPU supports (Paths, UsePath), and the squared
// differences of two rows (SqDiffs), each with a portable fallback (the
// noasm build tag selects the fallbacks everywhere). The tests run every
// path the machine supports.
//
// The costs built on it are derived in docs/method.md ("Cost computation");
// docs/design.md describes the engine's place in the architecture.
package gram

// Progress receives the engine's progress and tells it to stop: Err
// returns a non-nil error once the caller's work is cancelled (the engine
// then skips the remaining tiles), AddTile records a computed tile of
// ni×nj entries of depth d. Both are called from several goroutines.
type Progress interface {
	Err() error
	AddTile(ni, nj, d int)
}

// noProgress is the Progress of a nil argument.
type noProgress struct{}

func (noProgress) Err() error          { return nil }
func (noProgress) AddTile(_, _, _ int) {}
