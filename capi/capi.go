package capi

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"math"
	"runtime/cgo"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/psda-dev/psda/internal/binding"
	"github.com/psda-dev/psda/psda"
)

// context is what a psda_ctx handle refers to: the options for the next
// computation and the last result, behind a lock so that C threads may share
// a context.
type context struct {
	mu  sync.Mutex
	cfg psda.Config
	res *psda.Matching
	// sched is the schedule psda_schedule built from res, for replicas
	// ranks; a new computation drops both.
	sched    *psda.Schedule
	replicas int
	err      errSlot
	// mon is read by psda_progress and psda_cancel without taking mu, so
	// that another thread can follow and stop a computation holding it.
	mon psda.Monitor
	// view is C memory holding {done, total, phase}, which compute keeps
	// equal to mon's progress (psda_progress_view); freed with the context.
	// Atomic because psda_progress_view reads it without mu.
	view atomic.Pointer[[3]int64]
	// freed is set, under mu, by psda_ctx_free. A call that looked the
	// handle up before the free and then waited for mu must see it and
	// fail with PSDA_ERR_HANDLE instead of using the freed view.
	freed bool
}

// lookup returns the context behind h.
func lookup(h C.uintptr_t) (c *context, f *failure) {
	if h == 0 {
		return nil, fail(errHandle, "psda: ctx is 0: create a context with psda_ctx_new")
	}
	defer func() {
		// cgo.Handle.Value panics on a deleted or never-issued handle.
		if recover() != nil {
			c, f = nil, fail(errHandle, "psda: ctx = %d is not a live context: it was freed or never returned by psda_ctx_new", uint64(h))
		}
	}()
	c, ok := cgo.Handle(h).Value().(*context)
	if !ok {
		return nil, fail(errHandle, "psda: ctx = %d is not a psda context", uint64(h))
	}
	return c, nil
}

// onContext runs body on the context behind h under its lock and records the
// outcome in the context's error slot (in the global slot when h is invalid).
func onContext(h C.uintptr_t, fn string, body func(c *context) *failure) (status C.int) {
	c, f := lookup(h)
	if f != nil {
		return report(&global, f)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed {
		// Freed by another thread while this one waited for the lock.
		return report(&global, freedHandle(h))
	}
	defer func() {
		if r := recover(); r != nil {
			status = report(&c.err, recovered(fn, r))
		}
	}()
	return report(&c.err, body(c))
}

// freedHandle is the failure for a handle freed by another thread after
// this call looked it up.
func freedHandle(h C.uintptr_t) *failure {
	return fail(errHandle, "psda: ctx = %d is not a live context: it was freed (by another thread while this call waited)", uint64(h))
}

// withoutContext runs body and records the outcome in the global error slot.
func withoutContext(fn string, body func() *failure) (status C.int) {
	defer func() {
		if r := recover(); r != nil {
			status = report(&global, recovered(fn, r))
		}
	}()
	if fn != "psda_abi_version" && fn != "psda_version" && fn != "psda_ctx_free" && fn != "psda_num_threads" {
		if f := envFailure.Load(); f != nil { // an invalid PSDA_NUM_THREADS: see threads.go
			return report(&global, f)
		}
	}
	return report(&global, body())
}

//export psda_abi_version
func psda_abi_version(out *C.int32_t) C.int {
	return withoutContext("psda_abi_version", func() *failure {
		if out == nil {
			return fail(errNull, "psda: out is NULL: pass the address of an int32_t")
		}
		*out = abiVersion
		return nil
	})
}

//export psda_version
func psda_version(buf *C.char, cap C.size_t) C.int {
	return withoutContext("psda_version", func() *failure {
		return copyString(version, buf, cap, "version string")
	})
}

//export psda_last_error
func psda_last_error(h C.uintptr_t, buf *C.char, cap C.size_t) (status C.int) {
	defer func() {
		if r := recover(); r != nil {
			status = report(&global, recovered("psda_last_error", r))
		}
	}()
	slot := &global
	if h != 0 {
		c, f := lookup(h)
		if f != nil {
			return report(&global, f)
		}
		slot = &c.err
	}
	if f := copyString(slot.get(), buf, cap, "error message"); f != nil {
		return f.status
	}
	return statusOK
}

//export psda_ctx_new
func psda_ctx_new(out *C.uintptr_t) C.int {
	return withoutContext("psda_ctx_new", func() *failure {
		if out == nil {
			return fail(errNull, "psda: out is NULL: pass the address of a psda_ctx")
		}
		c := &context{cfg: psda.Config{Stages: 2, Discrepancy: psda.MMD, Kernel: psda.RBF}}
		// C memory, so that C may keep its address (psda_progress_view).
		v := (*[3]int64)(C.calloc(3, 8))
		if v == nil {
			return fail(errInternal, "psda: out of memory allocating a context")
		}
		v[1] = psda.ProgressTotal
		c.view.Store(v)
		*out = C.uintptr_t(cgo.NewHandle(c))
		return nil
	})
}

//export psda_ctx_free
func psda_ctx_free(h C.uintptr_t) C.int {
	if h == 0 {
		return withoutContext("psda_ctx_free", func() *failure { return nil })
	}
	// onUnlocked, not withoutContext: freeing a live context is a call with
	// a valid context, so its success keeps the global message (psda.h).
	return onUnlocked(h, "psda_ctx_free", func(c *context) *failure {
		// Hold the lock so that a call running on another thread finishes
		// before the handle disappears.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.freed {
			// Two threads freed h at once; this one lost the race.
			return freedHandle(h)
		}
		c.freed = true
		cgo.Handle(h).Delete()
		c.res = nil
		C.free(unsafe.Pointer(c.view.Swap(nil)))
		return nil
	})
}

//export psda_set_batch_size
func psda_set_batch_size(h C.uintptr_t, k C.int64_t) C.int {
	return onContext(h, "psda_set_batch_size", func(c *context) *failure {
		if int64(k) > math.MaxInt32 {
			return fail(errInvalid, "psda: batch_size = %d: too large", int64(k))
		}
		c.cfg.BatchSize = int(k)
		return nil
	})
}

//export psda_set_stages
func psda_set_stages(h C.uintptr_t, stages C.int32_t) C.int {
	return onContext(h, "psda_set_stages", func(c *context) *failure {
		c.cfg.Stages = int(stages)
		return nil
	})
}

//export psda_set_discrepancy
func psda_set_discrepancy(h C.uintptr_t, name *C.char) C.int {
	return setString(h, "psda_set_discrepancy", name, "discrepancy", func(c *context) *string { return &c.cfg.Discrepancy })
}

//export psda_set_kernel
func psda_set_kernel(h C.uintptr_t, name *C.char) C.int {
	return setString(h, "psda_set_kernel", name, "kernel", func(c *context) *string { return &c.cfg.Kernel })
}

//export psda_set_solver
func psda_set_solver(h C.uintptr_t, name *C.char) C.int {
	return setString(h, "psda_set_solver", name, "solver", func(c *context) *string { return &c.cfg.Solver })
}

// setString is the body of the string option setters: it copies name (the
// argument arg of function fn) into the field that field returns.
func setString(h C.uintptr_t, fn string, name *C.char, arg string, field func(*context) *string) C.int {
	return onContext(h, fn, func(c *context) *failure {
		s, f := goString(name, arg)
		if f == nil {
			*field(c) = s
		}
		return f
	})
}

//export psda_set_gammas
func psda_set_gammas(h C.uintptr_t, gammas *C.double, n C.size_t) C.int {
	return onContext(h, "psda_set_gammas", func(c *context) *failure {
		switch {
		case n == 0 && gammas == nil:
			c.cfg.Gammas = nil
		case n == 0:
			// Empty but set: only the RBF kernel needs gammas, and psda.Match
			// rejects an empty mixture for it.
			c.cfg.Gammas = []float64{}
		case gammas == nil:
			return fail(errNull, "psda: gammas is NULL but n = %d: pass n values or n = 0 for the default", uint64(n))
		case n > math.MaxInt32:
			return fail(errSize, "psda: n = %d gammas: too many", uint64(n))
		default:
			c.cfg.Gammas = slices.Clone(unsafe.Slice((*float64)(unsafe.Pointer(gammas)), int(n)))
		}
		return nil
	})
}

//export psda_compute_f32
func psda_compute_f32(h C.uintptr_t, src *C.float, ns C.int64_t, tgt *C.float, nt C.int64_t, d C.int64_t) C.int {
	return onContext(h, "psda_compute_f32", func(c *context) *failure {
		return c.compute(binding.Buffers{Source: unsafe.Pointer(src), Target: unsafe.Pointer(tgt),
			NSource: int64(ns), NTarget: int64(nt), Dim: int64(d), F32: true})
	})
}

//export psda_compute_f64
func psda_compute_f64(h C.uintptr_t, src *C.double, ns C.int64_t, tgt *C.double, nt C.int64_t, d C.int64_t) C.int {
	return onContext(h, "psda_compute_f64", func(c *context) *failure {
		return c.compute(binding.Buffers{Source: unsafe.Pointer(src), Target: unsafe.Pointer(tgt),
			NSource: int64(ns), NTarget: int64(nt), Dim: int64(d)})
	})
}

// maxBytes bounds the bytes of a caller's array (binding.MaxBytes).
const maxBytes = binding.MaxBytes

// compute sets c's result to the matching of b's features, computed by
// binding.Compute, the code pyapi's Matching.Compute runs too; on failure
// c holds no result, so that a stale one is never mistaken for the new one.
// The caller holds mu, so the context and its view are not freed meanwhile.
func (c *context) compute(b binding.Buffers) *failure {
	c.res, c.sched = nil, nil
	m, e := binding.Compute(b, c.cfg, &c.mon, c.view.Load())
	if e != nil {
		return fail(kindStatus(e.Kind), "%s", bindingMessage(e))
	}
	c.res = m
	return nil
}

// kindStatus maps binding's kinds of failure to psda.h's status codes; a
// kind it does not know is a bug, never PSDA_OK.
func kindStatus(k binding.Kind) C.int {
	switch k {
	case binding.Null:
		return errNull
	case binding.Size:
		return errSize
	case binding.Invalid:
		return errInvalid
	case binding.Cancelled:
		return errCancelled
	}
	return errInternal
}

// bindingMessage is e's message, with the C ABI's own advice for a cancel.
func bindingMessage(e *binding.Error) string {
	if e.Kind == binding.Cancelled {
		return "psda: cancelled by psda_cancel: the context holds no result and can compute again"
	}
	return e.Error()
}

// result returns c's last matching.
func (c *context) result() (*psda.Matching, *failure) {
	if c.res == nil {
		return nil, fail(errNoResult, "psda: no result: the last psda_compute_* failed or none ran")
	}
	return c.res, nil
}

//export psda_result_sizes
func psda_result_sizes(h C.uintptr_t, nPairs, nQuads, nSingles *C.int64_t) C.int {
	return onContext(h, "psda_result_sizes", func(c *context) *failure {
		if nPairs == nil || nQuads == nil || nSingles == nil {
			return fail(errNull, "psda: n_pairs, n_quads or n_singles is NULL: pass three int64_t addresses")
		}
		m, f := c.result()
		if f != nil {
			return f
		}
		*nPairs, *nQuads, *nSingles = C.int64_t(len(m.Pairs)), C.int64_t(len(m.Quads)), C.int64_t(len(m.Singles))
		return nil
	})
}

// output returns the caller's buffer of cap int64 values at dst as a slice of
// the need values to write; what names the result in messages.
func output(dst *C.int64_t, cap C.int64_t, need int, what string) ([]int64, *failure) {
	switch {
	case need == 0:
		return nil, nil
	case dst == nil:
		return nil, fail(errNull, "psda: dst is NULL: the %s need a buffer of %d int64 values", what, need)
	case int64(cap) < int64(need):
		return nil, fail(errSize, "psda: cap = %d int64 values: the %s need %d", int64(cap), what, need)
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(dst)), need), nil
}

//export psda_copy_pairs
func psda_copy_pairs(h C.uintptr_t, dst *C.int64_t, cap C.int64_t) C.int {
	return onContext(h, "psda_copy_pairs", func(c *context) *failure {
		m, f := c.result()
		if f != nil {
			return f
		}
		out, f := output(dst, cap, 2*len(m.Pairs), "pairs")
		if f != nil {
			return f
		}
		for r, p := range m.Pairs {
			out[2*r], out[2*r+1] = int64(p.S), int64(p.T)
		}
		return nil
	})
}

//export psda_copy_quads
func psda_copy_quads(h C.uintptr_t, dst *C.int64_t, cap C.int64_t) C.int {
	return onContext(h, "psda_copy_quads", func(c *context) *failure {
		m, f := c.result()
		if f != nil {
			return f
		}
		out, f := output(dst, cap, 2*len(m.Quads), "quads")
		if f != nil {
			return f
		}
		for u, q := range m.Quads {
			out[2*u], out[2*u+1] = int64(q[0]), int64(q[1])
		}
		return nil
	})
}

//export psda_copy_singles
func psda_copy_singles(h C.uintptr_t, dst *C.int64_t, cap C.int64_t) C.int {
	return onContext(h, "psda_copy_singles", func(c *context) *failure {
		m, f := c.result()
		if f != nil {
			return f
		}
		out, f := output(dst, cap, len(m.Singles), "singles")
		if f != nil {
			return f
		}
		for u, r := range m.Singles {
			out[u] = int64(r)
		}
		return nil
	})
}

//export psda_objectives
func psda_objectives(h C.uintptr_t, stage1Cost, stage2Cost, stage2Bound *C.double) C.int {
	return onContext(h, "psda_objectives", func(c *context) *failure {
		if stage1Cost == nil || stage2Cost == nil || stage2Bound == nil {
			return fail(errNull, "psda: stage1_cost, stage2_cost or stage2_bound is NULL: pass three double addresses")
		}
		m, f := c.result()
		if f != nil {
			return f
		}
		*stage1Cost, *stage2Cost, *stage2Bound = C.double(m.Stage1Cost), C.double(m.Stage2Cost), C.double(m.Stage2Bound)
		return nil
	})
}

// onUnlocked runs body on the context behind h without taking its lock (a
// computation may hold it), recording failures in the global error slot:
// for the fields that other threads may read during a computation, the
// Monitor and the progress view, and for psda_ctx_free (which takes the
// lock itself and then deletes the context with its slot). A success
// leaves the global slot alone: it holds the message of the last call
// without a valid context (psda.h), which a progress poll from another
// thread must not erase.
func onUnlocked(h C.uintptr_t, fn string, body func(c *context) *failure) (status C.int) {
	defer func() {
		if r := recover(); r != nil {
			status = report(&global, recovered(fn, r))
		}
	}()
	c, f := lookup(h)
	if f == nil {
		f = body(c)
	}
	if f != nil {
		return report(&global, f)
	}
	return statusOK
}

//export psda_cancel
func psda_cancel(h C.uintptr_t) C.int {
	return onUnlocked(h, "psda_cancel", func(c *context) *failure {
		c.mon.Cancel()
		return nil
	})
}

//export psda_progress
func psda_progress(h C.uintptr_t, done, total *C.int64_t, phase *C.int32_t) C.int {
	return onUnlocked(h, "psda_progress", func(c *context) *failure {
		if done == nil || total == nil || phase == nil {
			return fail(errNull, "psda: done, total or phase is NULL: pass two int64_t and one int32_t address")
		}
		d, ph := c.mon.Progress()
		*done, *total, *phase = C.int64_t(d), C.int64_t(psda.ProgressTotal), C.int32_t(ph)
		return nil
	})
}

//export psda_progress_view
func psda_progress_view(h C.uintptr_t, view **C.int64_t) C.int {
	return onUnlocked(h, "psda_progress_view", func(c *context) *failure {
		if view == nil {
			return fail(errNull, "psda: view is NULL: pass the address of a const int64_t pointer")
		}
		v := c.view.Load()
		if v == nil {
			return freedHandle(h)
		}
		*view = (*C.int64_t)(unsafe.Pointer(v))
		return nil
	})
}
