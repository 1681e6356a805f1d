//go:build unix

package psda

import (
	"syscall"
	"testing"
)

// Issue 17 case 3: an address-space limit (ulimit -v) bounds the memory
// the guard counts on, not only MemAvailable.
func TestAvailableBytesHonoursAddressSpaceLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skip("no RLIMIT_AS here")
	}
	vm := procKB("/proc/self/status", "VmSize:") << 10
	if vm <= 0 {
		t.Skip("no /proc/self/status VmSize here")
	}
	lim := old
	lim.Cur = uint64(vm) + 512<<20
	if lim.Cur > old.Max {
		t.Skip("the hard limit is below the test's")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Skipf("cannot set RLIMIT_AS: %v", err)
	}
	got, limit := availableBytes()
	room, ok := addressSpaceRoom()
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Fatalf("restoring RLIMIT_AS: %v", err)
	}
	if !ok || got > 512<<20 || got != max(min(room, got), 1) {
		t.Fatalf("with ulimit -v at VmSize + 512 MiB: availableBytes = %d, room = %d (%v), want at most 512 MiB", got, room, ok)
	}
	if limit != limitAddressSpace {
		t.Fatalf("with ulimit -v at VmSize + 512 MiB: availableBytes names limit %d, want the address space's (%d)", limit, limitAddressSpace)
	}
}
