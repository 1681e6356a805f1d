// Package binding is the one code path behind psda's two bindings: the C
// ABI (package capi, psda_compute_f32/_f64 on a context) and the gopy
// binding for Python (package pyapi, Matching.Compute) both compute a
// matching by calling Compute with the caller's raw feature buffers, so
// that the checks of those buffers, the progress mirror, the cancellation
// and the mapping of failures to kinds are written once. Each binding keeps
// only its own calling convention: how a handle or object is found and
// locked, and how a Kind becomes its status code.
package binding

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/psda-dev/psda/psda"
)

// Kind classifies a failed Compute; each binding maps it to a status code
// (psda.h's PSDA_ERR_*, pyapi's Status*).
type Kind int

// Kinds of failure.
const (
	Null      Kind = iota + 1 // a feature buffer's address is NULL
	Size                      // a size is < 1, or the buffer's bytes exceed MaxBytes
	Invalid                   // psda.Match refused the settings or the features' values
	Cancelled                 // the Monitor was cancelled (psda.ErrCancelled)
	Internal                  // a panic: a bug in psda
)

// Error is a failed Compute: its Kind and the message, which names the
// argument and the fix.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error (psda.ErrCancelled is found through it).
func (e *Error) Unwrap() error { return e.Err }

// MaxBytes bounds the bytes of a caller's array: no process has more
// (amd64 and arm64 address at most 2^48 bytes), and unsafe.Slice panics
// beyond Go's own limit, which is no smaller.
const MaxBytes = 1 << 47

// Buffers are the caller's feature matrices: NSource×Dim source and
// NTarget×Dim target values, row-major, float32 when F32 and float64
// otherwise. The memory is the caller's (C's or NumPy's): it is read in
// place during Compute and never retained.
type Buffers struct {
	Source, Target   unsafe.Pointer
	NSource, NTarget int64
	Dim              int64
	F32              bool
}

// Compute returns psda.Match of b's features under cfg, followed by mon
// (cfg.Monitor is replaced by it): while it runs, mon's progress is copied
// into view ({done, total, phase}, psda.Monitor.Mirror; nil for none), and
// mon.Cancel stops it with Kind Cancelled. Afterwards mon has no pending
// cancel, so that one arriving after the last poll does not stop the next
// Compute. It never panics: a panic below becomes Kind Internal. Time and
// memory as psda.Match; the features are viewed, not copied.
func Compute(b Buffers, cfg psda.Config, mon *psda.Monitor, view *[3]int64) (m *psda.Matching, e *Error) {
	src, e := matrix(b.Source, b.NSource, b.Dim, b.F32, "source")
	if e != nil {
		return nil, e
	}
	tgt, e := matrix(b.Target, b.NTarget, b.Dim, b.F32, "target")
	if e != nil {
		return nil, e
	}
	cfg.Monitor = mon
	stop := func() {}
	if view != nil {
		stop = mon.Mirror(view)
	}
	defer func() {
		// Also after a panic: the mirror goroutine must not outlive the
		// call, which may free view.
		stop()
		mon.Reset()
		if r := recover(); r != nil {
			m, e = nil, &Error{Internal, fmt.Errorf("psda: internal error computing the matching: %v (please report this bug)", r)}
		}
	}()
	m, err := psda.Match(src, tgt, cfg)
	switch {
	case errors.Is(err, psda.ErrCancelled):
		return nil, &Error{Cancelled, err}
	case err != nil:
		return nil, &Error{Invalid, err}
	}
	return m, nil
}

// matrix views the n×d values at p as a psda.Matrix; name is "source" or
// "target", the names of the arguments in both bindings (n_source, dim).
func matrix(p unsafe.Pointer, n, d int64, f32 bool, name string) (psda.Matrix, *Error) {
	size := int64(8)
	if f32 {
		size = 4
	}
	switch {
	case p == nil:
		return psda.Matrix{}, &Error{Null, fmt.Errorf("psda: %s is NULL: pass the address of n_%s*dim values", name, name)}
	case n < 1:
		return psda.Matrix{}, &Error{Size, fmt.Errorf("psda: n_%s = %d: need at least one row", name, n)}
	case d < 1:
		return psda.Matrix{}, &Error{Size, fmt.Errorf("psda: dim = %d: need at least one feature column", d)}
	case n > MaxBytes/size/d:
		// Checked before multiplying: n*d may wrap in int64.
		return psda.Matrix{}, &Error{Size, fmt.Errorf("psda: n_%s*dim = %d*%d values: too large (over %d bytes)", name, n, d, int64(MaxBytes))}
	}
	if f32 {
		return psda.Matrix{N: int(n), D: int(d), F32: unsafe.Slice((*float32)(p), n*d)}, nil
	}
	return psda.Matrix{N: int(n), D: int(d), F64: unsafe.Slice((*float64)(p), n*d)}, nil
}
