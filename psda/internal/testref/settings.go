package testref

import (
	"runtime"
	"testing"

	"github.com/psda-dev/psda/psda/internal/par"
)

// Setting is one way of running psda's parallel code: GOMAXPROCS and the
// thread setting (par.SetWorkers; 0 for its default).
type Setting struct{ Procs, Workers int }

// Settings are the settings a result must not depend on: one core, two,
// eight, and eight with a thread setting below them.
var Settings = []Setting{{1, 0}, {2, 0}, {8, 0}, {8, 3}}

// EachSetting runs f under each of settings in turn and restores
// GOMAXPROCS and the thread setting afterwards, so that a test can
// require the same bits from code that splits its work by either.
func EachSetting(t testing.TB, settings []Setting, f func(s Setting)) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer par.SetWorkers(0)
	for _, s := range settings {
		runtime.GOMAXPROCS(s.Procs)
		if err := par.SetWorkers(s.Workers); err != nil {
			t.Fatalf("GOMAXPROCS %d, threads %d: %v", s.Procs, s.Workers, err)
		}
		f(s)
	}
}
