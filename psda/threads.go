package psda

import "github.com/psda-dev/psda/psda/internal/par"

// SetNumThreads sets the number of goroutines each parallel loop of psda
// (Gram tiles, cost passes, the warm start) runs at most, for every
// matching of the process, or restores the default, GOMAXPROCS, when n is
// 0. A loop already running keeps its count. Results do not depend on it.
// It returns an error naming n when n is negative.
func SetNumThreads(n int) error { return par.SetWorkers(n) }

// NumThreads returns the number of goroutines each parallel loop of psda
// runs at most: the count set by SetNumThreads, else GOMAXPROCS.
func NumThreads() int { return par.Workers() }
