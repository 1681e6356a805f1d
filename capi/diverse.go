package capi

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/psda-dev/psda/psda/diverse"
)

//export psda_exchange_f64
func psda_exchange_f64(x *C.double, m, d C.int64_t, w *C.double, group, class *C.int64_t, centre *C.double,
	g C.int64_t, omega *C.double, sign C.double, passes, partners C.int64_t, seed C.uint64_t,
	history *C.double, historyCap C.int64_t, historyLen *C.int64_t, cancel *C.int32_t, done *C.int64_t) C.int {
	return withoutContext("psda_exchange_f64", func() *failure {
		switch {
		case x == nil || w == nil || group == nil || class == nil || centre == nil || omega == nil || history == nil || historyLen == nil:
			return fail(errNull, "psda: x, w, group, class, centre, omega, history and history_len are required")
		case m < 1 || d < 1 || g < 1:
			return fail(errSize, "psda: m = %d slots, d = %d features, g = %d groups: all must be >= 1", int64(m), int64(d), int64(g))
		case passes < 0:
			return fail(errInvalid, "psda: passes = %d: must be >= 0", int64(passes))
		case partners < 0:
			return fail(errInvalid, "psda: partners = %d: want 0 (every slot of the class) or a positive count", int64(partners))
		case historyCap <= passes: // not passes+1, which wraps for passes = INT64_MAX
			return fail(errSize, "psda: history_cap = %d: need passes + 1 = %d doubles", int64(historyCap), uint64(passes)+1)
		}
		md, f := elems(m, d, "m*d")
		if f != nil {
			return f
		}
		gd, f := elems(g, d, "g*d")
		if f != nil {
			return f
		}
		p := &diverse.Problem{
			X:      unsafe.Slice((*float64)(unsafe.Pointer(x)), md),
			M:      int(m),
			D:      int(d),
			W:      unsafe.Slice((*float64)(unsafe.Pointer(w)), int(m)),
			Group:  unsafe.Slice((*int64)(unsafe.Pointer(group)), int(m)),
			Class:  unsafe.Slice((*int64)(unsafe.Pointer(class)), int(m)),
			Centre: unsafe.Slice((*float64)(unsafe.Pointer(centre)), gd),
			Omega:  unsafe.Slice((*float64)(unsafe.Pointer(omega)), int(g)),
		}
		o := diverse.Options{Sign: float64(sign), Passes: int(passes), Partners: int(partners), Seed: uint64(seed)}
		o.Stop, o.OnPass = searchHooks(cancel, done)
		h, err := diverse.Exchange(p, o)
		return searchEnd(h, err, history, historyCap, historyLen, "exchange search cancelled; group holds the partition reached")
	})
}

//export psda_kdpp_sample_f64
func psda_kdpp_sample_f64(lam *C.double, nEig C.int64_t, v *C.double, n, k, nb C.int64_t, seed C.uint64_t,
	out *C.int64_t, outCap C.int64_t, cancel *C.int32_t, done *C.int64_t) C.int {
	return withoutContext("psda_kdpp_sample_f64", func() *failure {
		switch {
		case lam == nil || v == nil || out == nil:
			return fail(errNull, "psda: lam, v and out are required")
		case nEig < 1 || n < 1 || k < 1 || nb < 0:
			return fail(errSize, "psda: n_eig = %d, n = %d, k = %d, nb = %d: want n_eig, n, k >= 1 and nb >= 0",
				int64(nEig), int64(n), int64(k), int64(nb))
		}
		// The products are checked before use: in int64 arithmetic they
		// can wrap to a small number that the buffers would seem to hold.
		nv, f := elems(n, nEig, "n*n_eig")
		if f != nil {
			return f
		}
		need, f := elems(nb, k, "nb*k")
		if f != nil {
			return f
		}
		if int64(outCap) < int64(need) {
			return fail(errSize, "psda: out_cap = %d: need nb*k = %d int64 values", int64(outCap), need)
		}
		var stop func() bool
		if cancel != nil {
			flag := (*int32)(unsafe.Pointer(cancel))
			stop = func() bool { return atomic.LoadInt32(flag) != 0 }
		}
		var progress func(int)
		if done != nil {
			counter := (*int64)(unsafe.Pointer(done))
			progress = func(r int) { atomic.StoreInt64(counter, int64(r)) }
		}
		err := diverse.SampleKDPP(
			unsafe.Slice((*float64)(unsafe.Pointer(lam)), int(nEig)),
			unsafe.Slice((*float64)(unsafe.Pointer(v)), nv),
			int(n), int(k), int(nb), uint64(seed),
			// need, not outCap: only nb*k values are written, and a cap
			// beyond Go's slice limit would make unsafe.Slice panic.
			unsafe.Slice((*int64)(unsafe.Pointer(out)), need), stop, progress)
		if errors.Is(err, diverse.ErrCancelled) {
			return fail(errCancelled, "psda: k-DPP sampling cancelled")
		}
		if err != nil {
			return fail(errInvalid, "psda: %s", err.Error())
		}
		return nil
	})
}

//export psda_kmeans_f64
func psda_kmeans_f64(x *C.double, m, d C.int64_t, w *C.double, group *C.int64_t, k, minSize, passes C.int64_t,
	seed C.uint64_t, history *C.double, historyCap C.int64_t, historyLen *C.int64_t, cancel *C.int32_t,
	done *C.int64_t) C.int {
	return withoutContext("psda_kmeans_f64", func() *failure {
		switch {
		case x == nil || w == nil || group == nil || history == nil || historyLen == nil:
			return fail(errNull, "psda: x, w, group, history and history_len are required")
		case m < 1 || d < 1 || k < 1:
			return fail(errSize, "psda: m = %d rows, d = %d features, k = %d clusters: all must be >= 1", int64(m), int64(d), int64(k))
		case passes < 0:
			return fail(errInvalid, "psda: passes = %d: must be >= 0", int64(passes))
		case historyCap <= passes: // not passes+1, which wraps for passes = INT64_MAX
			return fail(errSize, "psda: history_cap = %d: need passes + 1 = %d doubles", int64(historyCap), uint64(passes)+1)
		}
		md, f := elems(m, d, "m*d")
		if f != nil {
			return f
		}
		c := &diverse.Clustering{
			X:       unsafe.Slice((*float64)(unsafe.Pointer(x)), md),
			M:       int(m),
			D:       int(d),
			W:       unsafe.Slice((*float64)(unsafe.Pointer(w)), int(m)),
			Group:   unsafe.Slice((*int64)(unsafe.Pointer(group)), int(m)),
			K:       int(k),
			MinSize: int(minSize),
		}
		o := diverse.Options{Passes: int(passes), Seed: uint64(seed)}
		o.Stop, o.OnPass = searchHooks(cancel, done)
		h, err := diverse.WeightedKMeans(c, o)
		return searchEnd(h, err, history, historyCap, historyLen, "weighted k-means cancelled; group holds the clustering reached")
	})
}

// elems returns a*b, the number of 8-byte values of an array the caller
// sized by a >= 0 and b >= 1, or a PSDA_ERR_SIZE failure naming what (the
// product's expression, "m*d") when their bytes exceed maxBytes: checked
// before multiplying, since the int64 product may wrap to a small number.
func elems(a, b C.int64_t, what string) (int, *failure) {
	if int64(a) > maxBytes/8/int64(b) {
		return 0, fail(errSize, "psda: %s = %d*%d values: too large (over %d bytes)", what, int64(a), int64(b), int64(maxBytes))
	}
	return int(a) * int(b), nil
}

// searchHooks turns a caller's cancel flag and pass counter (either may be
// NULL) into a search's Stop and OnPass: the flag is polled, the counter
// stored atomically, so another thread may read and set them while the
// search runs.
func searchHooks(cancel *C.int32_t, done *C.int64_t) (stop func() bool, onPass func(int, float64)) {
	if cancel != nil {
		flag := (*int32)(unsafe.Pointer(cancel))
		stop = func() bool { return atomic.LoadInt32(flag) != 0 }
	}
	if done != nil {
		counter := (*int64)(unsafe.Pointer(done))
		onPass = func(pass int, _ float64) { atomic.StoreInt64(counter, int64(pass)) }
	}
	return stop, onPass
}

// searchEnd copies a search's objective history to the caller's buffer,
// also when it was cancelled (the caller keeps the state reached), and
// maps its error to a status.
func searchEnd(h []float64, err error, history *C.double, historyCap C.int64_t, historyLen *C.int64_t, cancelled string) *failure {
	// len(h) <= passes + 1 <= historyCap values (checked by the caller);
	// slicing historyCap values would panic for a cap beyond Go's limit.
	copy(unsafe.Slice((*float64)(unsafe.Pointer(history)), min(len(h), int(historyCap))), h)
	*historyLen = C.int64_t(len(h))
	if errors.Is(err, diverse.ErrCancelled) {
		return fail(errCancelled, "psda: %s", cancelled)
	}
	if err != nil {
		return fail(errInvalid, "psda: %s", err.Error())
	}
	return nil
}
