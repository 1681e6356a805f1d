// Package pyapi holds the stateful Go objects that gopy binds for Python: a
// Matching, which computes and then keeps the matching in Go, and the
// Schedule built from it, which cuts the epochs' batches. Data crosses once
// each way: the features go in (Matching.Compute), the pairs come out once
// for the Python Matching's arrays (Matching.Copy), and each epoch's batches
// come out of Schedule.Fill; the schedule is built from the matching in Go,
// never from pairs sent back in.
//
// Bulk data never crosses the boundary as gopy slices, which convert one
// element per Python call each way (benchmarks/gopy_slices.py;
// docs/performance.md): Python passes the addresses of NumPy buffers it
// allocated, as uintptr, with their lengths. The API is shaped by gopy
// v0.4.10's generated wrappers:
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
	"runtime"
	"sync"
	"unsafe"

	"github.com/psda-dev/psda/internal/binding"
	"github.com/psda-dev/psda/psda"
)

// Status codes of Matching.Compute; the message is Matching.Err.
const (
	StatusOK        = 0 // computed
	StatusInvalid   = 1 // invalid settings or features (Go's message names the fix)
	StatusCancelled = 2 // Cancel stopped it
	StatusInternal  = 3 // a bug in psda
)

// Matching is a psda.Matching held in Go with the settings it was (or will
// be) computed with. Compute fills it once; a Matching whose construction
// or computation failed has a nil core and a non-empty Err. Its methods are
// safe for concurrent use; Cancel and ProgressView do not wait for Compute.
type Matching struct {
	mu      sync.Mutex
	cfg     psda.Config
	m       *psda.Matching
	nSource int
	nTarget int
	bad     string // why the arguments of NewMatching are unusable
	err     string // why the last construction or Compute failed

	mon  psda.Monitor
	view *[3]int64 // pinned: Python reads it by address during Compute
	pin  runtime.Pinner
}

// NewMatching returns a Matching to compute with the given settings: the
// nGammas float64 at address gammas are the RBF mixture, or the default
// mixture (psda.DefaultGammas) when defaultGammas. The settings are checked
// by Validate and Compute, in Go only (psda.Config.Validate).
func NewMatching(batchSize, stages int, discrepancy, kernel string, gammas uintptr, nGammas int, defaultGammas bool, solver string) *Matching {
	m := &Matching{cfg: psda.Config{BatchSize: batchSize, Stages: stages, Discrepancy: discrepancy, Kernel: kernel, Solver: solver}}
	if !defaultGammas {
		g, err := view[float64](gammas, nGammas, "gammas")
		if err != nil {
			m.bad, m.err = err.Error(), err.Error()
		}
		m.cfg.Gammas = append([]float64{}, g...) // non-nil even when empty: an empty mixture is not the default
	}
	m.view = new([3]int64)
	m.view[1] = psda.ProgressTotal
	m.pin.Pin(m.view)
	runtime.SetFinalizer(m, func(m *Matching) { m.pin.Unpin() })
	return m
}

// Validate returns "" when the settings are valid for nSource source and
// nTarget target examples (psda.Config.ValidateFor), or when both are 0 for
// any sizes (psda.Config.Validate); otherwise Go's message.
func (m *Matching) Validate(nSource, nTarget int) string {
	if m.bad != "" {
		return m.bad
	}
	var err error
	if nSource == 0 && nTarget == 0 {
		err = m.cfg.Validate()
	} else {
		err = m.cfg.ValidateFor(nSource, nTarget)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// Compute computes the matching of the nSource×dim source and nTarget×dim
// target features at the given addresses (float32 when f32, else float64;
// row-major, read in place, not retained) and returns a Status code; Err
// holds the message. The features are viewed, not copied. The work is
// binding.Compute's, the code the C ABI's psda_compute_* runs too. Time and
// memory as psda.Match.
func (m *Matching) Compute(src uintptr, nSource int, tgt uintptr, nTarget, dim int, f32 bool) (status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m, m.err = nil, ""
	if m.bad != "" {
		m.err = m.bad
		return StatusInvalid
	}
	b := binding.Buffers{Source: pointer(src), Target: pointer(tgt),
		NSource: int64(nSource), NTarget: int64(nTarget), Dim: int64(dim), F32: f32}
	res, e := binding.Compute(b, m.cfg, &m.mon, m.view)
	if e != nil {
		m.err = e.Error()
		switch e.Kind {
		case binding.Cancelled:
			m.err = "psda: matching cancelled"
			return StatusCancelled
		case binding.Internal:
			return StatusInternal
		}
		return StatusInvalid
	}
	m.m, m.nSource, m.nTarget = res, nSource, nTarget
	return StatusOK
}

// Err returns why the last construction or Compute failed, or "". It
// waits for a Compute running in another thread.
func (m *Matching) Err() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Cancel asks a running Compute to stop; it returns StatusCancelled within
// milliseconds. A cancel while none runs applies to the next Compute.
func (m *Matching) Cancel() { m.mon.Cancel() }

// ProgressView returns the address of three int64, {done, total, phase} as
// psda.Monitor.Progress reports them, which Compute refreshes every
// psda.MirrorEvery: Python polls it without calling into Go, which would
// wait for a core the computation keeps busy. Valid while m is alive.
func (m *Matching) ProgressView() uintptr { return uintptr(unsafe.Pointer(m.view)) }

// NumPairs returns the number of pairs, 0 without a result.
func (m *Matching) NumPairs() int { return m.sizes()[0] }

// NumQuads returns the number of quadruplets, 0 without a result.
func (m *Matching) NumQuads() int { return m.sizes()[1] }

// NumSingles returns the number of single pairs, 0 without a result.
func (m *Matching) NumSingles() int { return m.sizes()[2] }

func (m *Matching) sizes() [3]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		return [3]int{}
	}
	return [3]int{len(m.m.Pairs), len(m.m.Quads), len(m.m.Singles)}
}

// Objective returns the Stage 1 cost (which 0), the Stage 2 cost (1) or the
// Stage 2 bound (2) of the result, 0 without one.
func (m *Matching) Objective(which int) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		return 0
	}
	switch which {
	case 0:
		return m.m.Stage1Cost
	case 1:
		return m.m.Stage2Cost
	case 2:
		return m.m.Stage2Bound
	}
	return 0
}

// Copy writes the result into Python's buffers: NumPairs()×2 int64 pairs
// (source, target), NumQuads()×2 int64 quadruplets and NumSingles() int64
// singles. It returns "" or the reason it wrote nothing. Time O(pairs).
func (m *Matching) Copy(pairs, quads, singles uintptr) (msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		return "psda: no result: Compute failed or did not run"
	}
	p, err := view[int64](pairs, 2*len(m.m.Pairs), "pairs")
	if err != nil {
		return err.Error()
	}
	q, err := view[int64](quads, 2*len(m.m.Quads), "quads")
	if err != nil {
		return err.Error()
	}
	s, err := view[int64](singles, len(m.m.Singles), "singles")
	if err != nil {
		return err.Error()
	}
	for r, pr := range m.m.Pairs {
		p[2*r], p[2*r+1] = int64(pr.S), int64(pr.T)
	}
	for u, qu := range m.m.Quads {
		q[2*u], q[2*u+1] = int64(qu[0]), int64(qu[1])
	}
	for u, r := range m.m.Singles {
		s[u] = int64(r)
	}
	return ""
}

// MatchingFromArrays copies a stored matching into Go: nPairs×2 int64 pairs,
// nQuads×2 int64 quadruplets and nSingles int64 singles at the given
// addresses (0 only for a count of 0), of nSource source and nTarget target
// examples; it checks them with psda.Matching.Check, the one home of that
// rule (with nSource < 0 only that every pair is in exactly one unit). On
// invalid input the result's Err says why. Time and memory O(nPairs).
func MatchingFromArrays(pairs uintptr, nPairs int, quads uintptr, nQuads int, singles uintptr, nSingles int, nSource, nTarget int) (out *Matching) {
	out = &Matching{}
	defer func() {
		if r := recover(); r != nil {
			out.m, out.err = nil, fmt.Sprintf("psda: internal error reading the matching: %v", r)
		}
	}()
	p, err := view[int64](pairs, 2*nPairs, "pairs")
	if err == nil {
		var q, s []int64
		if q, err = view[int64](quads, 2*nQuads, "quads"); err == nil {
			if s, err = view[int64](singles, nSingles, "singles"); err == nil {
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
				if nSource >= 0 {
					err = m.Check(nSource, nTarget)
				}
				out.m, out.nSource, out.nTarget = m, nSource, nTarget
			}
		}
	}
	if err != nil {
		out.m, out.err = nil, err.Error()
	}
	return out
}

// NewSchedule builds the epoch schedule of m's result with psda.NewSchedule;
// on failure (no result, or settings that give a rank no batch) the
// Schedule's Err says why. It never returns nil. Time and memory O(pairs).
func (m *Matching) NewSchedule(batchSize int, seed uint64, dropLast bool, numReplicas int) (sch *Schedule) {
	defer func() {
		if r := recover(); r != nil {
			sch = &Schedule{err: fmt.Sprintf("psda: internal error building the schedule: %v", r)}
		}
	}()
	m.mu.Lock()
	res, why := m.m, m.err
	m.mu.Unlock()
	if res == nil {
		return &Schedule{err: "psda: no matching to schedule: " + why}
	}
	s, err := psda.NewSchedule(res, psda.ScheduleConfig{BatchSize: batchSize, Seed: seed, DropLast: dropLast, NumReplicas: numReplicas})
	if err != nil {
		return &Schedule{err: err.Error()}
	}
	return &Schedule{s: s, replicas: numReplicas}
}

// CheckSchedule returns "" when a schedule of batchSize pairs per batch over
// numReplicas ranks gives every rank a batch of the pairs of a matching
// computed with stages and discrepancy (psda.ScheduleConfig.CheckFor), or
// the message naming the fix.
func CheckSchedule(pairs, batchSize, numReplicas int, dropLast bool, stages int, discrepancy string) string {
	err := psda.ScheduleConfig{BatchSize: batchSize, NumReplicas: numReplicas, DropLast: dropLast}.CheckFor(
		pairs, psda.Config{Stages: stages, Discrepancy: discrepancy})
	if err != nil {
		return err.Error()
	}
	return ""
}

// EpochBatches returns the batches per epoch over all ranks of pairs pairs
// (psda.BatchesPerRank); batchSize and numReplicas must be >= 1.
func EpochBatches(pairs, batchSize, numReplicas int, dropLast bool) int {
	total, _ := psda.BatchesPerRank(pairs, psda.ScheduleConfig{BatchSize: batchSize, NumReplicas: numReplicas, DropLast: dropLast})
	return total
}

// RankBatches returns the batches per epoch of each rank (psda.BatchesPerRank).
func RankBatches(pairs, batchSize, numReplicas int, dropLast bool) int {
	_, perRank := psda.BatchesPerRank(pairs, psda.ScheduleConfig{BatchSize: batchSize, NumReplicas: numReplicas, DropLast: dropLast})
	return perRank
}

// NumDefaultGammas returns the size of the default RBF mixture.
func NumDefaultGammas() int { return len(psda.DefaultGammas) }

// DefaultGamma returns gamma i of the default RBF mixture, psda.DefaultGammas.
func DefaultGamma(i int) float64 { return psda.DefaultGammas[i] }

// Schedule is the psda.Schedule of a Matching (Matching.NewSchedule). A
// Schedule whose construction failed has a nil core and a non-empty Err.
type Schedule struct {
	s        *psda.Schedule
	replicas int
	err      string
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

// BatchLens writes the number of pairs of each of rank's NumBatches()
// batches into the int64 buffer of n values at address dst, one call instead
// of one per batch; it returns "" or the reason it wrote nothing.
func (s *Schedule) BatchLens(rank int, dst uintptr, n int) string {
	if s.s == nil {
		return "psda: schedule is unusable: " + s.err
	}
	nb := s.s.NumBatches()
	if rank < 0 || rank >= s.replicas {
		return fmt.Sprintf("psda: rank = %d: want 0 <= rank < num_replicas = %d", rank, s.replicas)
	}
	if n != nb {
		return fmt.Sprintf("psda: the buffer holds %d values, want %d batches", n, nb)
	}
	out, err := view[int64](dst, n, "output buffer")
	if err != nil {
		return err.Error()
	}
	for b := range out {
		out[b] = int64(s.s.BatchLen(rank, b))
	}
	return ""
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
	out, err := view[int64](dst, dstLen, "output buffer")
	if err != nil {
		return err.Error()
	}
	if _, err := s.s.Fill(epoch, rank, start, out); err != nil {
		return err.Error()
	}
	return ""
}

// view returns the n values at address addr, memory that Python owns, as a
// slice; it must not outlive the call that received addr.
func view[T int64 | float32 | float64](addr uintptr, n int, name string) ([]T, error) {
	if n < 0 {
		return nil, fmt.Errorf("psda: %s has %d values: must be >= 0", name, n)
	}
	if n == 0 {
		return nil, nil
	}
	if addr == 0 {
		return nil, fmt.Errorf("psda: %s has %d values but its address is NULL", name, n)
	}
	return unsafe.Slice((*T)(pointer(addr)), n), nil
}

// pointer returns the address addr, memory that Python owns, as a pointer.
func pointer(addr uintptr) unsafe.Pointer {
	// Reinterpret the uintptr's bits instead of converting it: the memory is
	// not Go's, so the garbage collector never needs to track it, and go vet's
	// unsafeptr check rightly flags uintptr->unsafe.Pointer conversions.
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
