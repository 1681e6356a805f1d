//go:build unix

package psda

import "syscall"

// addressSpaceRoom returns the bytes RLIMIT_AS leaves above the process's
// current virtual size, and false when there is no limit or it cannot tell.
func addressSpaceRoom() (int64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur == ^uint64(0) || lim.Cur > 1<<62 {
		return 0, false
	}
	vm := procKB("/proc/self/status", "VmSize:")
	if vm <= 0 {
		return 0, false
	}
	return int64(lim.Cur) - vm<<10, true
}
