package capi

// This file has no //export functions, so its preamble may include psda.h
// (cgo copies the preambles of exporting files into _cgo_export.h, where
// psda.h's const-qualified prototypes would clash with cgo's own). The status
// codes below are therefore taken from the header, never restated.

/*
#include "psda.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/psda-dev/psda/psda"
)

// Status codes, from psda.h.
const (
	statusOK       = C.PSDA_OK
	errNull        = C.PSDA_ERR_NULL
	errHandle      = C.PSDA_ERR_HANDLE
	errSize        = C.PSDA_ERR_SIZE
	errInvalid     = C.PSDA_ERR_INVALID
	errNoResult    = C.PSDA_ERR_NO_RESULT
	errInternal    = C.PSDA_ERR_INTERNAL
	errCancelled   = C.PSDA_ERR_CANCELLED
	errInfeasible  = C.PSDA_ERR_INFEASIBLE
	abiVersion     = C.PSDA_ABI_VERSION
	defaultVersion = "devel"
)

// The phase numbers of psda.h are psda's: these fail to compile otherwise.
var (
	_ = [1]struct{}{}[C.PSDA_PHASE_IDLE-psda.PhaseIdle]
	_ = [1]struct{}{}[C.PSDA_PHASE_STAGE1_COSTS-psda.PhaseStage1Costs]
	_ = [1]struct{}{}[C.PSDA_PHASE_STAGE1_ASSIGN-psda.PhaseStage1Assign]
	_ = [1]struct{}{}[C.PSDA_PHASE_STAGE2_COSTS-psda.PhaseStage2Costs]
	_ = [1]struct{}{}[C.PSDA_PHASE_STAGE2_MATCH-psda.PhaseStage2Match]
	_ = [1]struct{}{}[C.PSDA_PHASE_DONE-psda.PhaseDone]
)

// version is the library version; setup.py sets it from pyproject.toml with
// -ldflags "-X github.com/psda-dev/psda/capi.version=...".
var version = defaultVersion

// failure is an error with its psda.h status code.
type failure struct {
	status C.int
	msg    string
}

func (f *failure) Error() string { return f.msg }

// fail returns a failure with a formatted message.
func fail(status C.int, format string, args ...any) *failure {
	return &failure{status: status, msg: fmt.Sprintf(format, args...)}
}

// errSlot holds the message of the last call, guarded by its own lock.
type errSlot struct {
	mu  sync.Mutex
	msg string
}

func (e *errSlot) set(msg string) {
	e.mu.Lock()
	e.msg = msg
	e.mu.Unlock()
}

func (e *errSlot) get() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.msg
}

// global is the message slot for calls made without a valid context.
var global errSlot

// report stores f's message ("" for nil) in slot and returns its status.
func report(slot *errSlot, f *failure) C.int {
	if f == nil {
		slot.set("")
		return statusOK
	}
	slot.set(f.msg)
	return f.status
}

// recovered turns a panic value into an internal failure; the caller names
// the entry point.
func recovered(fn string, r any) *failure {
	return fail(errInternal, "psda: internal error in %s: %v (please report this bug)", fn, r)
}

// copyString writes s, NUL-terminated and truncated to fit, into the cap bytes
// at buf; it fails with errSize when s was truncated.
func copyString(s string, buf *C.char, cap C.size_t, what string) *failure {
	if buf == nil {
		return fail(errNull, "psda: buf is NULL: pass a buffer for the %s", what)
	}
	if cap == 0 {
		return fail(errSize, "psda: cap = 0: the %s needs %d bytes including the NUL", what, len(s)+1)
	}
	// Only len(s)+1 bytes are ever written: a larger cap (SIZE_MAX, say)
	// must not reach unsafe.Slice, which refuses lengths beyond Go's limit.
	n := min(uint64(cap), uint64(len(s))+1)
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	w := copy(dst[:len(dst)-1], s)
	dst[w] = 0
	if w < len(s) {
		return fail(errSize, "psda: cap = %d bytes: the %s needs %d including the NUL", cap, what, len(s)+1)
	}
	return nil
}

// goString copies a NUL-terminated C string; name is the argument's name.
func goString(p *C.char, name string) (string, *failure) {
	if p == nil {
		return "", fail(errNull, "psda: %s is NULL: pass a NUL-terminated string", name)
	}
	return C.GoString(p), nil
}
