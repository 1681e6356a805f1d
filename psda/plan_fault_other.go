//go:build !linux

package psda

// prefault does nothing where there is no MADV_POPULATE_WRITE: the pages
// of the matrix fault in as its pass first writes them.
func prefault(c []float64) {}

// mapMatrix returns newMatrix(n, n): the Go heap's memory, whose pages the
// pass maps as it writes them, and a function that does nothing (the
// collector frees the matrix).
func mapMatrix(n int) (c []float64, unmap func()) { return newMatrix(n, n), func() {} }
