// Package capi exports psda's C ABI, declared in the hand-written header
// psda.h next to this file (read it for the contract of each function).
//
// There is no separate C library: Go supports one runtime per process, so
// `pip install .` links this package into the Python extension
// (psda/_psdago*.so), and C programs link against that file. setup.py adds a
// blank import of this package to gopy's generated main package; //export
// functions of imported packages are exported from a c-shared library like
// those of main. A C program also links libpython, whose data symbols the
// extension's glue refers to, without initialising Python:
//
//	SO=$(python -c 'import psda._native as n; print(n._gopy.__file__)')
//	cc -I capi prog.c "$SO" -Wl,-rpath,"$(dirname "$SO")" \
//	    $(python3-config --ldflags --embed) -o prog
//
// tests/c/psda_abi_test.c is a complete example that calls every function.
//
// Design, following SQLite and libgit2: every function returns a status code
// and records a message that psda_last_error copies into a caller buffer;
// callers allocate every output. Contexts are runtime/cgo.Handle values, so C
// never holds a Go pointer. Input arrays are C memory viewed as Go slices
// (unsafe.Slice) for the duration of one call, never copied and never
// retained. Every entry point validates its pointers and sizes and recovers
// from panics, so a bug surfaces as PSDA_ERR_INTERNAL instead of aborting the
// host process.
package capi
