package capi

/*
#include <stdint.h>
*/
import "C"

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/psda-dev/psda/psda"
)

// threadsEnv names the environment variable read when the library loads.
const threadsEnv = "PSDA_NUM_THREADS"

// envFailure holds the failure for an invalid PSDA_NUM_THREADS until
// psda_num_threads sets a count: a bad value must not be dropped silently,
// so the calls that compute (withoutContext, hence psda_ctx_new) report it.
var envFailure atomic.Pointer[failure]

func init() {
	s, ok := os.LookupEnv(threadsEnv)
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		envFailure.Store(fail(errInvalid, "psda: %s = %q is not a positive integer: set it to the number of threads psda may use, "+
			"or unset it for the default, all cores (GOMAXPROCS = %d); in C, psda_num_threads with a positive count also overrides it",
			threadsEnv, s, runtime.GOMAXPROCS(0)))
		return
	}
	psda.SetNumThreads(n)
}

//export psda_num_threads
func psda_num_threads(set C.int32_t, out *C.int32_t) C.int {
	return withoutContext("psda_num_threads", func() *failure {
		if out == nil {
			return fail(errNull, "psda: out is NULL: pass the address of an int32_t")
		}
		if set < 0 {
			return fail(errInvalid, "psda: n = %d threads: want a positive count to set, or 0 to only read the count", int32(set))
		}
		if set > 0 {
			psda.SetNumThreads(int(set))
			envFailure.Store(nil)
		} else if f := envFailure.Load(); f != nil {
			return f
		}
		*out = C.int32_t(psda.NumThreads())
		return nil
	})
}
