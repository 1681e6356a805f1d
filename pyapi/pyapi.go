// Package pyapi holds the stateful Go objects that gopy binds for Python.
//
// Bulk data never crosses the boundary as gopy slices (about 0.5 µs per
// element): Python passes the addresses of NumPy buffers it allocated, as
// uintptr, with their lengths. The API is shaped by gopy v0.4.10's generated
// wrappers:
//
//   - every wrapper releases the GIL, so nothing here calls back into Python;
//   - unsafe.Pointer arguments are silently dropped, hence uintptr;
//   - a bound function returning error leaks its message and, as a method on a
//     stale handle, returns without re-taking the GIL, so nothing here returns
//     error: failures are reported by Err, and methods return a message string
//     ("" on success);
//   - a Go panic would abort the interpreter, so every entry point recovers.
package pyapi

import (
	"fmt"
	"unsafe"

	"github.com/psda-dev/psda/psda"
)

// Schedule is a psda.Schedule built from NumPy index arrays. A Schedule whose
// construction failed has a nil core and a non-empty Err.
type Schedule struct {
	s        *psda.Schedule
	replicas int
	err      string
}

// NewSchedule copies the matching's pairs (nPairs×2 int64, row-major: source,
// target), quads (nQuads×2 int64, indices into pairs) and singles (nSingles
// int64) from the given addresses into Go memory and builds the epoch
// schedule with psda.NewSchedule. The caller's buffers are not retained. An
// address may be 0 only when its count is 0. On invalid input it returns a
// Schedule whose Err says why; it never returns nil.
// Time and memory O(nPairs).
func NewSchedule(pairs uintptr, nPairs int, quads uintptr, nQuads int, singles uintptr, nSingles int,
	batchSize int, seed uint64, dropLast bool, numReplicas int) (sch *Schedule) {
	defer func() {
		if r := recover(); r != nil {
			sch = &Schedule{err: fmt.Sprintf("psda: internal error building the schedule: %v", r)}
		}
	}()
	p, err := int64s(pairs, nPairs, 2, "pairs")
	if err != nil {
		return &Schedule{err: err.Error()}
	}
	q, err := int64s(quads, nQuads, 2, "quads")
	if err != nil {
		return &Schedule{err: err.Error()}
	}
	s, err := int64s(singles, nSingles, 1, "singles")
	if err != nil {
		return &Schedule{err: err.Error()}
	}
	m := &psda.Matching{Pairs: make([]psda.Pair, nPairs), Quads: make([][2]int, nQuads), Singles: make([]int, nSingles)}
	for r := range m.Pairs {
		m.Pairs[r] = psda.Pair{S: int(p[2*r]), T: int(p[2*r+1])}
	}
	for u := range m.Quads {
		m.Quads[u] = [2]int{int(q[2*u]), int(q[2*u+1])}
	}
	for u := range m.Singles {
		m.Singles[u] = int(s[u])
	}
	sched, err := psda.NewSchedule(m, psda.ScheduleConfig{
		BatchSize: batchSize, Seed: seed, DropLast: dropLast, NumReplicas: numReplicas,
	})
	if err != nil {
		return &Schedule{err: err.Error()}
	}
	return &Schedule{s: sched, replicas: numReplicas}
}

// Err returns why NewSchedule failed, or "" for a usable Schedule.
func (s *Schedule) Err() string { return s.err }

// NumBatches returns the number of batches per rank and epoch, or 0 for a
// failed Schedule.
func (s *Schedule) NumBatches() int {
	if s.s == nil {
		return 0
	}
	return s.s.NumBatches()
}

// BatchLen returns the number of pairs in batch b of rank, or -1 when s failed
// or rank or b is out of range.
func (s *Schedule) BatchLen(rank, b int) int {
	if s.s == nil || rank < 0 || rank >= s.replicas || b < 0 || b >= s.s.NumBatches() {
		return -1
	}
	return s.s.BatchLen(rank, b)
}

// Fill writes batches start, ..., NumBatches()-1 of rank for epoch into the
// int64 buffer of dstLen values at address dst, as psda.Schedule.Fill does
// (each batch: its L source indices, then its L target indices). It returns
// "" on success or the reason it wrote nothing. Time O(pairs).
func (s *Schedule) Fill(epoch uint64, rank, start int, dst uintptr, dstLen int) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("psda: internal error filling the schedule: %v", r)
		}
	}()
	if s.s == nil {
		return "psda: schedule is unusable: " + s.err
	}
	out, err := int64s(dst, dstLen, 1, "output buffer")
	if err != nil {
		return err.Error()
	}
	if _, err := s.s.Fill(epoch, rank, start, out); err != nil {
		return err.Error()
	}
	return ""
}

// int64s views n*width int64 values at address addr, memory that Python owns,
// as a slice; it must not outlive the call that received addr.
func int64s(addr uintptr, n, width int, name string) ([]int64, error) {
	if n < 0 {
		return nil, fmt.Errorf("psda: %s has %d rows: must be >= 0", name, n)
	}
	if n == 0 {
		return nil, nil
	}
	if addr == 0 {
		return nil, fmt.Errorf("psda: %s has %d rows but its address is NULL", name, n)
	}
	// Reinterpret the uintptr's bits instead of converting it: the memory is
	// not Go's, so the garbage collector never needs to track it, and go vet's
	// unsafeptr check rightly flags uintptr->unsafe.Pointer conversions.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*int64)(p), n*width), nil
}
