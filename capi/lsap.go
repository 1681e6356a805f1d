package capi

/*
#include <stdint.h>
*/
import "C"

import (
	"unsafe"

	"github.com/psda-dev/psda/psda/assign"
)

//export psda_lsap_f64
func psda_lsap_f64(cost *C.double, nr, nc C.int64_t, col4row *C.int64_t, cap C.int64_t, objective *C.double) C.int {
	return withoutContext("psda_lsap_f64", func() *failure {
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
		c := unsafe.Slice((*float64)(unsafe.Pointer(cost)), int(nr)*int(nc))
		sol, err := assign.Rectangular(c, int(nr), int(nc))
		if err != nil {
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
	})
}
