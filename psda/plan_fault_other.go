//go:build !linux

package psda

// prefault does nothing where there is no MADV_POPULATE_WRITE: the pages
// of the matrix fault in as its pass first writes them.
func prefault(c []float64) {}
