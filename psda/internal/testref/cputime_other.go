//go:build !unix

package testref

import "time"

// CPUTime returns 0 where there is no getrusage (Windows): the benchmarks'
// cpu-s/op then reads 0, and their wall times stand.
func CPUTime() time.Duration { return 0 }
