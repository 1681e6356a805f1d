//go:build !unix

package assign

import "time"

// cpuNow is unavailable here; benchmarks then report 0 CPU seconds.
func cpuNow() time.Duration { return 0 }
