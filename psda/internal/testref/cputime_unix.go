//go:build unix

package testref

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system, all threads) used so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
