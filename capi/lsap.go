package capi

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/psda-dev/psda/psda"
	"github.com/psda-dev/psda/psda/assign"
)

//export psda_lsap_f64
func psda_lsap_f64(cost *C.double, nr, nc C.int64_t, col4row *C.int64_t, cap C.int64_t, objective *C.double) C.int {
	return withoutContext("psda_lsap_f64", func() *failure {
		return lsap(cost, nr, nc, col4row, cap, objective, nil)
	})
}

//export psda_lsap_ctx_f64
func psda_lsap_ctx_f64(h C.uintptr_t, cost *C.double, nr, nc C.int64_t, col4row *C.int64_t, cap C.int64_t, objective *C.double) C.int {
	return onContext(h, "psda_lsap_ctx_f64", func(c *context) *failure {
		f := lsap(cost, nr, nc, col4row, cap, objective, &c.mon)
		// As in compute: a cancel that arrived after the last poll concerned
		// this solve, which is over, and must not stop the next call.
		c.mon.Reset()
		return f
	})
}

// errStopped is the Stop error of a solve cancelled through its Monitor.
var errStopped = errors.New("psda: assignment cancelled")

// lsap validates the arguments of psda_lsap_f64 and psda_lsap_ctx_f64 and
// solves; mon, when non-nil, is polled between augmenting paths and auction
// bid batches, and a cancellation returns errCancelled.
func lsap(cost *C.double, nr, nc C.int64_t, col4row *C.int64_t, cap C.int64_t, objective *C.double, mon *psda.Monitor) *failure {
	switch {
	case cost == nil:
		return fail(errNull, "psda: cost is NULL: pass the address of nr*nc doubles")
	case col4row == nil:
		return fail(errNull, "psda: col4row is NULL: pass a buffer of nr int64 values")
	case nr < 1 || nc < 1:
		return fail(errSize, "psda: cost is %d×%d: both dimensions must be at least 1", int64(nr), int64(nc))
	case nr > nc:
		return fail(errSize, "psda: cost is %d×%d: need nr <= nc (transpose the matrix)", int64(nr), int64(nc))
	case int64(nc) > maxBytes/8/int64(nr):
		return fail(errSize, "psda: cost is %d×%d: too large", int64(nr), int64(nc))
	case cap < nr:
		return fail(errSize, "psda: cap = %d int64 values: col4row needs nr = %d", int64(cap), int64(nr))
	}
	var hooks *assign.Hooks
	if mon != nil {
		hooks = &assign.Hooks{Stop: func() error {
			if mon.Cancelled() {
				return errStopped
			}
			return nil
		}}
	}
	c := unsafe.Slice((*float64)(unsafe.Pointer(cost)), int(nr)*int(nc))
	sol, err := assign.RectangularWith(c, int(nr), int(nc), hooks)
	switch {
	case errors.Is(err, errStopped):
		return fail(errCancelled, "psda: cancelled by psda_cancel: col4row and objective were not written")
	case errors.Is(err, assign.ErrInfeasible):
		return fail(errInfeasible, "psda: %s", err.Error())
	case err != nil:
		return fail(errInvalid, "psda: %s", err.Error())
	}
	out := unsafe.Slice((*int64)(unsafe.Pointer(col4row)), int(nr))
	for i, j := range sol.Col4Row {
		out[i] = int64(j)
	}
	if objective != nil {
		*objective = C.double(sol.Cost)
	}
	return nil
}
