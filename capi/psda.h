/*
 * psda.h - C ABI of psda (Paired Sampling for Domain Adaptation).
 *
 * Copyright (c) 2026, the psda developers. BSD-3-Clause, see LICENSE.
 *
 * The functions are implemented in Go (package capi) and live in the same
 * shared library as the Python extension, psda/_psdago*.so inside the
 * installed package (Go supports one runtime per process, so there is no
 * separate C library). Link a C program against that file and against
 * libpython (e.g. `python3-config --ldflags --embed`): the extension's glue
 * refers to a few of the interpreter's data symbols, which the dynamic loader
 * resolves at load time. The program never needs to initialise Python.
 *
 * Conventions (SQLite / libgit2):
 *   - Every function returns a status code, PSDA_OK (0) on success.
 *   - The message for the last failure is fetched by psda_last_error, copied
 *     into a buffer the caller owns.
 *   - The caller allocates every output buffer and passes its capacity; psda
 *     never returns memory the caller must free. The only resource psda owns
 *     is a context, released by psda_ctx_free.
 *   - Input arrays are read in place, never copied, and never retained after
 *     the call returns.
 *   - Every pointer argument is required (NULL gives PSDA_ERR_NULL) unless its
 *     comment says otherwise. No function crashes on NULL; psda cannot detect
 *     a non-NULL pointer to too little memory, so sizes must be right.
 *   - A context may be shared between threads; calls on one context are
 *     serialised by a lock. Calls on different contexts run in parallel.
 *
 * Arrays are row-major (C order). Indices are 0-based int64.
 */
#ifndef PSDA_H
#define PSDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PSDA_ABI_VERSION is the version of the interface this header declares;
 * compare it with psda_abi_version at run time. psda 0.1.0 is the first
 * release, with ABI version 1. A release that changes a declaration of this
 * file incompatibly increments it; functions added in a release are listed
 * in its notes, and psda_version names the release. There are no minor ABI
 * versions. */
#define PSDA_ABI_VERSION 1

/* Status codes. */
#define PSDA_OK 0            /* success */
#define PSDA_ERR_NULL 1      /* a required pointer argument is NULL */
#define PSDA_ERR_HANDLE 2    /* the context is 0, already freed, or not a psda context */
#define PSDA_ERR_SIZE 3      /* a size or buffer capacity is out of range, or a string was truncated */
#define PSDA_ERR_INVALID 4   /* an argument's value is invalid: NaN/Inf, unknown name, bad batch size... */
#define PSDA_ERR_NO_RESULT 5 /* a result was requested before a successful psda_compute_* */
#define PSDA_ERR_INTERNAL 6  /* a bug in psda; the message says where */
#define PSDA_ERR_CANCELLED 7 /* psda_cancel stopped the computation */
/* The +INFINITY (forbidden) entries of an assignment problem leave no
 * assignment of every row to a distinct column; the message contains SciPy's
 * words "cost matrix is infeasible". */
#define PSDA_ERR_INFEASIBLE 8

/* Phases of a computation reported by psda_progress. */
#define PSDA_PHASE_IDLE 0          /* no computation started on the context */
#define PSDA_PHASE_STAGE1_COSTS 1  /* Stage 1 cost matrix */
#define PSDA_PHASE_STAGE1_ASSIGN 2 /* Stage 1 assignment */
#define PSDA_PHASE_STAGE2_COSTS 3  /* Stage 2 cost matrix */
#define PSDA_PHASE_STAGE2_MATCH 4  /* Stage 2 perfect matching */
#define PSDA_PHASE_DONE 5          /* the last computation has returned */

/* psda_ctx is an opaque handle to a matching context (options plus the last
 * result); 0 is never a valid context. */
typedef uintptr_t psda_ctx;

/* psda_abi_version stores the library's PSDA_ABI_VERSION in *out. */
int psda_abi_version(int32_t *out);

/* psda_version copies the library version (e.g. "0.1.0"), NUL-terminated,
 * into buf of cap bytes. Returns PSDA_ERR_SIZE, with a truncated copy, when
 * cap is too small. */
int psda_version(char *buf, size_t cap);

/* psda_last_error copies the message of the most recent call on ctx ("" when
 * it succeeded), NUL-terminated, into buf of cap bytes. With ctx == 0 it
 * copies the message of the most recent call made without a valid context
 * (psda_ctx_new, psda_lsap_f64, any call given an invalid handle); that slot
 * is shared by all threads, and a successful psda_progress, psda_progress_view,
 * psda_cancel or psda_ctx_free on a valid context leaves it unchanged. Returns
 * PSDA_ERR_SIZE, with a truncated copy, when cap is too small; 512 bytes
 * hold every message psda produces for typical names. Does not change the
 * stored message. */
int psda_last_error(psda_ctx ctx, char *buf, size_t cap);

/* psda_num_threads sets, when set > 0, the number of threads each parallel
 * loop of psda runs at most (Gram tiles, cost passes, the warm start), for
 * every context and thread of the process, including a computation already
 * queued; a loop already running keeps its count. set = 0 only reads it. The
 * count in effect is stored in *out. The default is all cores (Go's
 * GOMAXPROCS, the number of CPUs the process may use), or the environment
 * variable PSDA_NUM_THREADS, read when the library loads. When that variable
 * is not a positive integer, every call that computes (psda_ctx_new,
 * psda_lsap_f64, ...) and psda_num_threads(0, ...) return PSDA_ERR_INVALID
 * naming it, until psda_num_threads sets a count. A negative set is
 * PSDA_ERR_INVALID. */
int psda_num_threads(int32_t set, int32_t *out);

/* psda_ctx_new creates a context with the default options (stages 2, "mmd",
 * "rbf", the paper's RBF mixture (DefaultGammas in psda/config.go, the one
 * place that lists it), solver "auto", batch
 * size unset) and stores it in *out. Release it with psda_ctx_free. */
int psda_ctx_new(psda_ctx *out);

/* psda_ctx_free releases ctx and its result. Freeing 0 is a no-op; freeing a
 * context twice returns PSDA_ERR_HANDLE, also when two threads free it at
 * once (one returns PSDA_OK). It waits for a call running on ctx in another
 * thread; calls that were waiting for ctx then return PSDA_ERR_HANDLE. */
int psda_ctx_free(psda_ctx ctx);

/* The option setters store a value for the next psda_compute_*; values are
 * validated there, so that the rules live in one place (the Go core). One
 * exception: psda_set_batch_size refuses at once a k beyond 2^31 - 1, which
 * the core's int would not hold. */

/* psda_set_batch_size sets k, the number of pairs per minibatch (>= 1; even
 * with 2 stages; >= 2 with CORAL). */
int psda_set_batch_size(psda_ctx ctx, int64_t batch_size);

/* psda_set_stages sets 1 (Paired: Stage 1 only) or 2 (Double-paired). */
int psda_set_stages(psda_ctx ctx, int32_t stages);

/* psda_set_discrepancy sets "mmd" or "coral" (NUL-terminated, copied). */
int psda_set_discrepancy(psda_ctx ctx, const char *name);

/* psda_set_kernel sets the MMD kernel, "linear" or "rbf" (copied). */
int psda_set_kernel(psda_ctx ctx, const char *name);

/* psda_set_gammas sets the RBF mixture to the n values at gammas (copied).
 * gammas == NULL with n == 0 restores the default; a non-NULL gammas with
 * n == 0 sets an empty mixture, which psda_compute_* rejects for the RBF
 * kernel and the other settings ignore. */
int psda_set_gammas(psda_ctx ctx, const double *gammas, size_t n);

/* psda_set_solver sets how each stage is solved (NUL-terminated, copied):
 * "auto" (the default; "" is the same), "dense" (the full cost matrix and a
 * dense exact assignment; memory O(n_source * n_target) doubles for Stage 1,
 * O(P^2) for Stage 2) or "sparse" (candidate edges, a sparse exact
 * assignment and pricing passes until the duals hold for every dense edge;
 * memory O(P * (dim + K))). Both are exact: Stage 1's cost equals the dense
 * solver's (the pairs may differ only between tied optima) and Stage 2 is
 * certified as on the dense path. When "auto" picks which is
 * docs/design.md, "Solver choice", says. An unknown name makes
 * psda_compute_* fail with PSDA_ERR_INVALID. */
int psda_set_solver(psda_ctx ctx, const char *name);

/* psda_compute_f32 computes the matching of source (n_source x dim) and target
 * (n_target x dim), both row-major float32, read in place. On success the
 * context holds the result; on failure it holds none (PSDA_ERR_SIZE for
 * sizes < 1 or arrays beyond 2^47 bytes; PSDA_ERR_INVALID for NaN/Inf
 * features, bad options, a batch size larger than max(n_source, n_target) or
 * cost matrices that do not fit in memory; PSDA_ERR_CANCELLED after
 * psda_cancel). Follow it
 * from another thread with psda_progress. Time O(n_source * n_target * dim) for the costs
 * plus the exact assignment (O(n^3) worst case); memory O(n_source * n_target)
 * doubles with the dense solver, O(P * (dim + K)) with the sparse one (see
 * psda_set_solver). */
int psda_compute_f32(psda_ctx ctx, const float *source, int64_t n_source,
                     const float *target, int64_t n_target, int64_t dim);

/* psda_compute_f64 is psda_compute_f32 for float64 features. */
int psda_compute_f64(psda_ctx ctx, const double *source, int64_t n_source,
                     const double *target, int64_t n_target, int64_t dim);

/* psda_progress stores how far the computation running on ctx (or the last
 * one) has come: *done out of *total work units (an estimate from the sizes,
 * non-decreasing during a computation, equal to *total after a successful
 * one) and the current PSDA_PHASE_* in *phase. It does not wait for the
 * context's lock, so another thread may call it while psda_compute_* runs;
 * it costs a few atomic loads. Errors go to psda_last_error(0, ...). */
int psda_progress(psda_ctx ctx, int64_t *done, int64_t *total, int32_t *phase);

/* psda_progress_view stores in *view the address of three int64_t, {done,
 * total, phase} as psda_progress reports them, owned by ctx and valid until
 * psda_ctx_free: the library copies the progress there about every 20 ms
 * while a psda_compute_* runs on ctx, and once when it returns. Read each
 * value with one aligned 64-bit load. Polling this memory costs the
 * computation nothing, where each psda_progress call from a thread that is
 * not the library's must wait for a core the computation keeps busy (about
 * 5 ms a call with 2 cores: a poll every 50 ms slowed an n = 4000 matching
 * by 15%). Errors go to psda_last_error(0, ...). */
int psda_progress_view(psda_ctx ctx, const int64_t **view);

/* psda_cancel asks the psda_compute_* running on ctx to stop; it returns at
 * once, without waiting for the computation. The computation notices within
 * a few milliseconds (it polls between cost tiles and between augmenting
 * paths) and returns PSDA_ERR_CANCELLED, leaving no result; the context
 * stays usable. A cancel that arrives while no computation runs applies to
 * the next psda_compute_* on ctx; one that arrives after the computation's
 * last poll is dropped when it returns. Like psda_progress it does not take
 * the context's lock, so it may be called from any thread (e.g. a signal
 * handler's thread). Errors go to psda_last_error(0, ...). */
int psda_cancel(psda_ctx ctx);

/* psda_result_sizes stores the number of pairs P = max(n_source, n_target),
 * quadruplets Q and single pairs S of the last result. */
int psda_result_sizes(psda_ctx ctx, int64_t *n_pairs, int64_t *n_quads,
                      int64_t *n_singles);

/* psda_copy_pairs writes the P pairs as P x 2 int64 (source index, target
 * index) into dst, which holds cap int64 values (cap >= 2P). dst may be NULL
 * when 2P == 0. */
int psda_copy_pairs(psda_ctx ctx, int64_t *dst, int64_t cap);

/* psda_copy_quads writes the Q quadruplets as Q x 2 int64 indices into the
 * pairs (cap >= 2Q; dst may be NULL when Q == 0, e.g. with 1 stage). */
int psda_copy_quads(psda_ctx ctx, int64_t *dst, int64_t cap);

/* psda_copy_singles writes the S indices of pairs left without a partner
 * (every pair with 1 stage, at most one with 2 stages; cap >= S; dst may be
 * NULL when S == 0). */
int psda_copy_singles(psda_ctx ctx, int64_t *dst, int64_t cap);

/* psda_objectives stores the Stage 1 cost (certified optimal), the Stage 2
 * cost (certified optimal), and the Stage 2 certificate's dual objective, a
 * lower bound equal to the Stage 2 cost up to rounding (both 0 with 1
 * stage). */
int psda_objectives(psda_ctx ctx, double *stage1_cost, double *stage2_cost,
                    double *stage2_bound);

/* The epoch schedule: the batches of the context's last result, cut in Go
 * as Python's PairedBatchSampler cuts them (psda/schedule.go), so that a C
 * program need not copy the pairs out to build minibatches. Each epoch
 * shuffles the quadruplets, then the single pairs, with a PCG seeded by
 * (seed, epoch), cuts the sequence into batches of batch_size pairs (a
 * quadruplet's two pairs stay in one batch) and deals them to the ranks in
 * turn (rank, rank + num_replicas, ...). The same seed, epoch and rank give
 * the same batches on every platform. */

/* psda_schedule builds the schedule of the last result: batch_size pairs per
 * batch (even when the result has quadruplets), num_replicas ranks (>= 1),
 * drop_last nonzero to drop the short final batch and the batches that
 * cannot be shared evenly (otherwise ranks short of a batch repeat batches
 * from the start of the epoch). PSDA_ERR_NO_RESULT without a result,
 * PSDA_ERR_INVALID when a rank would get no batch (the message names the
 * fix). A failed call drops the previous schedule too, and a later
 * psda_compute_* drops the schedule with the result. Time and memory O(P). */
int psda_schedule(psda_ctx ctx, int64_t batch_size, uint64_t seed, int32_t drop_last,
                  int64_t num_replicas);

/* psda_schedule_num_batches stores the number of batches each rank gets per
 * epoch (PSDA_ERR_NO_RESULT before a successful psda_schedule). */
int psda_schedule_num_batches(psda_ctx ctx, int64_t *out);

/* psda_schedule_batch_len stores the number of pairs L in batch b of rank:
 * batch_size, except for a final short batch without drop_last.
 * PSDA_ERR_INVALID unless 0 <= rank < num_replicas and 0 <= b < the number
 * of batches. */
int psda_schedule_batch_len(psda_ctx ctx, int64_t rank, int64_t b, int64_t *out);

/* psda_schedule_fill writes batches start, start + 1, ... of rank for epoch
 * into dst, which holds cap int64 values, and their number to *written: each
 * batch of L pairs takes 2L values, its L source indices, then the L target
 * indices of the same pairs in the same order (cap >= 2 * batch_size *
 * (number of batches - start) always suffices; dst may be NULL when nothing
 * is to be written). PSDA_ERR_INVALID unless 0 <= rank < num_replicas and 0
 * <= start <= the number of batches; PSDA_ERR_SIZE when cap is too small.
 * Time O(P). */
int psda_schedule_fill(psda_ctx ctx, uint64_t epoch, int64_t rank, int64_t start, int64_t *dst,
                       int64_t cap, int64_t *written);

/* psda_lsap_f64 solves the dense rectangular linear assignment problem on the
 * nr x nc row-major cost matrix (1 <= nr <= nc), read in place: it assigns
 * every row a distinct column at minimum total cost, writes the column of row
 * i to col4row[i] (cap >= nr) and, unless objective is NULL, the total cost
 * to *objective. An entry is a finite cost or +INFINITY, which forbids the
 * pair (as in SciPy);
 * when the forbidden entries leave no complete assignment it returns
 * PSDA_ERR_INFEASIBLE and writes nothing. NaN and -INFINITY give
 * PSDA_ERR_INVALID. Errors are reported through psda_last_error(0, ...). Time
 * O(nr^2 nc) worst case. */
int psda_lsap_f64(const double *cost, int64_t nr, int64_t nc, int64_t *col4row,
                  int64_t cap, double *objective);

/* psda_lsap_ctx_f64 is psda_lsap_f64 run on ctx, so that another thread can
 * stop it with psda_cancel(ctx): it then returns PSDA_ERR_CANCELLED within a
 * few milliseconds (it polls between augmenting paths and auction bid
 * batches) and writes nothing. It neither reads ctx's options nor touches
 * its matching result; errors go to psda_last_error(ctx, ...). A cancel
 * that arrives while no call runs on ctx applies to the next psda_compute_*
 * or psda_lsap_ctx_f64, as for psda_compute_*. */
int psda_lsap_ctx_f64(psda_ctx ctx, const double *cost, int64_t nr, int64_t nc,
                      int64_t *col4row, int64_t cap, double *objective);

/* psda_exchange_f64 runs the pairwise exchange search of the comparison
 * samplers (package psda/diverse; anticlustering, VaRDASS strata, ORDERED's
 * order) on m slots of d features x (row-major), weights w, groups group (in
 * [0, g), updated in place), exchange classes class (slots swap only within a
 * class), g centre rows and weights omega, for
 *     F = sum_g omega[g] || sum_{i in g} w[i] x[i] - centre[g] ||^2.
 * sign = +1 minimises F, -1 maximises it; at most passes passes; partners > 0
 * draws that many candidates per visit (0: the whole class; < 0 is
 * PSDA_ERR_INVALID); seed seeds the visiting order. history (history_cap >=
 * passes + 1 doubles) receives F at the start and after each pass,
 * history_len their number. cancel (may be NULL) is polled: a nonzero value
 * stops the search with PSDA_ERR_CANCELLED, group holding the partition
 * reached. done (may be NULL) receives the number of passes completed, for
 * progress. PSDA_ERR_SIZE when m*d or g*d
 * values would not fit in memory (also where the int64 product overflows;
 * issue 25). O(passes m C d) for C candidates. */
int psda_exchange_f64(const double *x, int64_t m, int64_t d, const double *w, int64_t *group, const int64_t *class_,
                      const double *centre, int64_t g, const double *omega, double sign, int64_t passes,
                      int64_t partners, uint64_t seed, double *history, int64_t history_cap, int64_t *history_len,
                      const int32_t *cancel, int64_t *done);

/* psda_kdpp_sample_f64 draws nb independent k-subsets of [0, n) from the
 * k-DPP whose L-ensemble has the n_eig eigenvalues lam (>= 0) and orthonormal
 * eigenvectors v (n x n_eig, row-major), into out (out_cap >= nb*k int64,
 * row-major); Kulesza & Taskar 2011, Algorithm 1 (package psda/diverse).
 * seed seeds the draws. cancel (may be NULL) is polled after every draw
 * (PSDA_ERR_CANCELLED); done (may be NULL) receives the draws finished.
 * PSDA_ERR_INVALID when fewer than k eigenvalues are positive, or when an
 * eigenvalue is NaN, negative or +Inf or an entry of v is NaN or +-Inf (the
 * message names the entry, "v[i]"; issue 25). PSDA_ERR_SIZE when n*n_eig or
 * nb*k values would not fit in memory (also where the int64 product
 * overflows) or out_cap < nb*k. O(n_eig k + nb (n_eig + n k^2)). */
int psda_kdpp_sample_f64(const double *lam, int64_t n_eig, const double *v, int64_t n, int64_t k, int64_t nb,
                         uint64_t seed, int64_t *out, int64_t out_cap, const int32_t *cancel, int64_t *done);

/* psda_kmeans_f64 improves the clustering group (m slots in [0, k), updated
 * in place) of m rows of d features x (row-major) with weights w (finite,
 * > 0) by weighted k-means single-row moves (Hartigan & Wong, AS 136;
 * package psda/diverse), every cluster keeping at least min_size rows, for
 *     SSE = sum_h sum_{i in h} w[i] || x[i] - c_h ||^2.
 * At most passes passes; seed seeds the visiting order. history, history_len,
 * cancel (may be NULL) and done (may be NULL) as for psda_exchange_f64.
 * PSDA_ERR_SIZE when m*d values would not fit in memory. O(passes m k d).
 * Declared here since ABI version 1 (issue 25: the function was exported but
 * missing from this header). */
int psda_kmeans_f64(const double *x, int64_t m, int64_t d, const double *w, int64_t *group, int64_t k,
                    int64_t min_size, int64_t passes, uint64_t seed, double *history, int64_t history_cap,
                    int64_t *history_len, const int32_t *cancel, int64_t *done);

#ifdef __cplusplus
}
#endif

#endif /* PSDA_H */
