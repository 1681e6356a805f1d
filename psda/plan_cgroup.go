package psda

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file reads the memory limit of the process's control group (cgroup
// v2's memory.max, v1's memory.limit_in_bytes): in a container or under a
// job scheduler (Kubernetes, Slurm) that limit, not the machine's
// MemAvailable, is where the kernel kills the process, so checkMemory must
// count it to give its error instead.

// unlimitedCgroup: limits at or above this are "no limit" (cgroup v1 writes
// 2^63 − 4096 for one).
const unlimitedCgroup = 1 << 62

// cgroupRoom returns the bytes the memory cgroup limits of this process
// leave, and false where no limit is set or it cannot tell (no cgroup file
// system, another OS).
func cgroupRoom() (int64, bool) { return cgroupRoomAt("/") }

// cgroupRoomAt is cgroupRoom on the file system under root (tests build one).
// A limit holds for its group and every group below it, so the room is the
// smallest over the process's group and its ancestors of limit − (usage −
// reclaimable file cache): the kernel reclaims clean file pages, active or
// inactive, before it kills. As MemAvailable does (si_mem_available), at
// most half of the file cache (the active and inactive file lists) is
// counted free, and never less than its inactive part: a job that has read
// its data set more than once holds most of its cache on the active list,
// and at its limit the cache fills the group, so counting the inactive
// part alone refused matchings that the kernel would have made room for.
func cgroupRoomAt(root string) (int64, bool) {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var v1, v2 string
	has1, has2 := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id:controllers:path; v2's line is "0::path".
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, has2 = parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1, has1 = parts[2], true
			}
		}
	}
	// A v1 memory controller, where mounted, is the one that limits.
	if has1 {
		return cgroupWalk(filepath.Join(root, "sys/fs/cgroup/memory"), v1,
			"memory.limit_in_bytes", "memory.usage_in_bytes", "total_")
	}
	if has2 {
		return cgroupWalk(filepath.Join(root, "sys/fs/cgroup"), v2,
			"memory.max", "memory.current", "")
	}
	return 0, false
}

// cgroupWalk returns the smallest room over the group at path under the
// mount base and its ancestors. Where the group's directory is absent (a
// container that mounts only its own group at base, without a cgroup
// namespace), base itself is that group.
func cgroupWalk(base, path, limitFile, usageFile, statPrefix string) (int64, bool) {
	dir := filepath.Join(base, filepath.Clean("/"+path))
	if _, err := os.Stat(dir); err != nil {
		dir = base
	}
	room, found := int64(0), false
	for {
		if r, ok := cgroupLevel(dir, limitFile, usageFile, statPrefix); ok && (!found || r < room) {
			room, found = r, true
		}
		if dir == base || len(dir) <= len(base) {
			return room, found
		}
		dir = filepath.Dir(dir)
	}
}

// cgroupLevel returns limit − (usage − reclaimable file cache) of one
// group (cgroupRoomAt), and false where the group has no limit or its files
// cannot be read. statPrefix is "total_" for v1's hierarchical memory.stat
// keys (its usage counts the groups below), "" for v2's.
func cgroupLevel(dir, limitFile, usageFile, statPrefix string) (int64, bool) {
	limit, ok := readInt(filepath.Join(dir, limitFile))
	if !ok || limit >= unlimitedCgroup {
		return 0, false // "max" (v2) does not parse: no limit
	}
	usage, ok := readInt(filepath.Join(dir, usageFile))
	if !ok {
		return 0, false
	}
	stat := filepath.Join(dir, "memory.stat")
	inactive := statValue(stat, statPrefix+"inactive_file")
	active := statValue(stat, statPrefix+"active_file")
	free := max(inactive, (inactive+active)/2)
	return limit - max(usage-free, 0), true
}

// readInt returns the integer a one-value file holds.
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// statValue returns the value of key in a memory.stat file, or 0.
func statValue(path, key string) int64 {
	v, _ := strconv.ParseInt(keyValue(path, key+" "), 10, 64)
	return v
}
