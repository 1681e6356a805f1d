package psda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot writes files (path relative to root → content) under a fresh
// directory and returns it: a file system as cgroupRoomAt reads it.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupRoom(t *testing.T) {
	const g = "sys/fs/cgroup/"
	const v1 = "sys/fs/cgroup/memory/"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"no cgroup file system", map[string]string{}, 0, false},
		{"v2, no limit anywhere", map[string]string{
			"proc/self/cgroup":       "0::/job\n",
			g + "job/memory.max":     "max\n",
			g + "job/memory.current": "5000\n",
		}, 0, false},
		{"v2, the group's own limit, cache reclaimable", map[string]string{
			"proc/self/cgroup":       "0::/job\n",
			g + "job/memory.max":     "10000\n",
			g + "job/memory.current": "6000\n",
			g + "job/memory.stat":    "anon 3000\nfile 3000\ninactive_file 2000\nactive_file 1000\n",
		}, 10000 - (6000 - 2000), true},
		{"v2, a parent's tighter limit holds", map[string]string{
			"proc/self/cgroup":       "0::/a/b\n",
			g + "a/memory.max":       "7000\n",
			g + "a/memory.current":   "6500\n",
			g + "a/b/memory.max":     "max\n",
			g + "a/b/memory.current": "1000\n",
			g + "memory.max":         "99999999\n", // the root has none in practice; smallest wins
			g + "memory.current":     "1\n",
		}, 500, true},
		{"v2 in a namespace: the group is the mount itself", map[string]string{
			"proc/self/cgroup":   "0::/\n",
			g + "memory.max":     "4096\n",
			g + "memory.current": "1024\n",
		}, 3072, true},
		{"v2 path absent under the mount: the mount is the group", map[string]string{
			"proc/self/cgroup":   "0::/docker/abc\n",
			g + "memory.max":     "8192\n",
			g + "memory.current": "4096\n",
		}, 4096, true},
		{"v1 memory controller, hierarchical inactive cache", map[string]string{
			"proc/self/cgroup":                      "5:cpu,cpuacct:/x\n4:memory:/slurm/job7\n0::/\n",
			v1 + "slurm/job7/memory.limit_in_bytes": "20000\n",
			v1 + "slurm/job7/memory.usage_in_bytes": "15000\n",
			v1 + "slurm/job7/memory.stat":           "inactive_file 1\ntotal_inactive_file 5000\n",
			v1 + "memory.limit_in_bytes":            "9223372036854771712\n",
			v1 + "memory.usage_in_bytes":            "123\n",
		}, 20000 - (15000 - 5000), true},
		{"v1, unlimited (2^63 − 4096)", map[string]string{
			"proc/self/cgroup":           "4:memory:/\n",
			v1 + "memory.limit_in_bytes": "9223372036854771712\n",
			v1 + "memory.usage_in_bytes": "123\n",
		}, 0, false},
		// A job at its limit after reading its data set twice: the cache
		// fills the group, most of it on the active list, all of it
		// reclaimable. Half the file cache (4000) counts free, as
		// MemAvailable counts it, not the inactive part (1000) alone.
		{"v2 at its limit, cache mostly active", map[string]string{
			"proc/self/cgroup":       "0::/job\n",
			g + "job/memory.max":     "10000\n",
			g + "job/memory.current": "9900\n",
			g + "job/memory.stat":    "anon 1900\nfile 8000\nactive_anon 1900\ninactive_file 1000\nactive_file 7000\n",
		}, 10000 - (9900 - 4000), true},
		{"v1 at its limit, hierarchical active cache", map[string]string{
			"proc/self/cgroup":                      "4:memory:/slurm/job7\n",
			v1 + "slurm/job7/memory.limit_in_bytes": "20000\n",
			v1 + "slurm/job7/memory.usage_in_bytes": "19000\n",
			v1 + "slurm/job7/memory.stat":           "inactive_file 1\nactive_file 1\ntotal_inactive_file 2000\ntotal_active_file 12000\n",
		}, 20000 - (19000 - 7000), true},
		{"over the limit: negative room", map[string]string{
			"proc/self/cgroup":   "0::/\n",
			g + "memory.max":     "1000\n",
			g + "memory.current": "3000\n",
		}, -2000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupRoomAt(fakeRoot(t, tc.files))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("cgroupRoomAt = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// On this machine availableBytes may not exceed a cgroup limit that holds.
func TestAvailableBytesWithinCgroup(t *testing.T) {
	room, ok := cgroupRoom()
	if !ok {
		t.Skip("no memory cgroup limit on this machine")
	}
	if a, _ := availableBytes(); a > max(room, 1) {
		t.Fatalf("availableBytes = %d above the cgroup's room %d", a, room)
	}
}

func TestBytesText(t *testing.T) {
	for b, want := range map[int64]string{
		3_200_000_000: "3.2 GB", 1e9: "1.0 GB", 999_999_999: "1000 MB", 150e6: "150 MB",
		1e6: "1 MB", 999_999: "999999 bytes", 1: "1 bytes",
	} {
		if got := bytesText(b); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", b, got, want)
		}
	}
}

// A refusal under 1 GB names megabytes, not "0.0 GB".
func TestRefusalInMegabytes(t *testing.T) {
	pl := defaultPlan()
	pl.available = func() (int64, memLimit) { return 20e6, limitMachine }
	x := Matrix{N: 2000, D: 1, F32: make([]float32, 2000)}
	_, err := pl.match(x, x, Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "needs about 32 MB") || !strings.Contains(err.Error(), "only 20 MB") {
		t.Fatalf("2000×2000 on 20 MB: got %v, want a refusal in MB", err)
	}
	pl.available = func() (int64, memLimit) { return 1, limitCgroup } // at or past the limit
	_, err = pl.match(x, x, Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "but none of memory is left under") {
		t.Fatalf("2000×2000 past the cgroup's limit: got %v, want \"but none\"", err)
	}
}

// A refusal names the limit of the reading it compared against, with that
// limit's advice: the one availableBytes found, not one found by reading a
// cgroup's usage or VmSize again (they move between the two readings).
func TestRefusalNamesTheBindingLimit(t *testing.T) {
	x := Matrix{N: 2000, D: 1, F32: make([]float32, 2000)}
	for _, tc := range []struct {
		limit      memLimit
		want, hint string
	}{
		{limitMachine, "of memory is available", "run on a machine with more memory"},
		{limitCgroup, "memory cgroup limit", "raise the container's or the job's memory limit"},
		{limitAddressSpace, "ulimit -v / RLIMIT_AS", "raise the limit (ulimit -v)"},
	} {
		pl := defaultPlan()
		pl.available = func() (int64, memLimit) { return 20e6, tc.limit }
		_, err := pl.match(x, x, Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: Linear})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("limit %d: got %v, want a refusal naming %q and advising %q", tc.limit, err, tc.want, tc.hint)
		}
	}
}
