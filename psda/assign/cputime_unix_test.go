//go:build unix

package assign

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time used by this process so far; benchmarks report
// it next to wall time because the machine may be shared.
func cpuNow() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
