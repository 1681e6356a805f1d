/*
 * psda_hostile_test.c - every function of capi/psda.h with hostile arguments
 * and from several threads at once; tests/test_capi.py builds it with
 * AddressSanitizer where the compiler has it.
 *
 * Usage: psda_hostile_test
 * Prints one line per failed check and "ok: N checks" at the end; the exit
 * status is the number of failures (capped at 100). A crash, a sanitizer
 * report or a hang is a failure too (the caller sees the signal or timeout).
 *
 * What must hold: every call returns one of psda.h's status codes, never
 * PSDA_ERR_INTERNAL (an internal error is a bug by its own definition), and
 * the documented code where psda.h names one: PSDA_ERR_HANDLE for a freed
 * or unknown context, PSDA_ERR_SIZE for sizes whose byte count overflows.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psda.h"

static int checks, failures;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        int ok_ = (cond);                                              \
        pthread_mutex_lock(&count_mu);                                 \
        checks++;                                                      \
        if (!ok_) {                                                    \
            failures++;                                                \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            printf(__VA_ARGS__);                                       \
            printf("\n");                                              \
        }                                                              \
        pthread_mutex_unlock(&count_mu);                               \
    } while (0)

/* is_status reports whether s is a status code of psda.h other than
 * PSDA_ERR_INTERNAL (PSDA_ERR_INFEASIBLE is the highest). */
static int is_status(int s) { return s >= PSDA_OK && s <= PSDA_ERR_INFEASIBLE && s != PSDA_ERR_INTERNAL; }

#define STATUS(call) CHECK(is_status(call), "%s returned a status outside psda.h or INTERNAL", #call)
#define WANT(call, want)                                                             \
    do {                                                                             \
        int got_ = (call);                                                           \
        CHECK(got_ == (want), "%s: status %d, want %d", #call, got_, (int)(want)); \
    } while (0)

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double lcg(unsigned *st) {
    *st = *st * 1103515245u + 12345u;
    return (double)((*st >> 8) & 0xffff) / 65536.0;
}

/* last_error_has reports whether the global last-error message contains
 * want (the calls without a context record theirs there). */
static int last_error_has(const char *want) {
    char msg[512];
    return psda_last_error(0, msg, sizeof msg) == PSDA_OK && strstr(msg, want) != NULL;
}

/* test_hostile_searches calls the comparison samplers' searches with sizes
 * whose product overflows (PSDA_ERR_SIZE, as psda.h promises for sizes, not
 * an internal error) and with non-finite eigenvectors (PSDA_ERR_INVALID, the
 * message naming v); issue 25. */
static void test_hostile_searches(void) {
    double lam[2] = {1, 2}, v[4] = {1, 0, 0, 1}, hist[4];
    int64_t out[8], n_hist = 0;
    const int64_t big = (int64_t)1 << 62;

    /* n * n_eig = 2^64 wraps to 0 in int64 arithmetic. */
    WANT(psda_kdpp_sample_f64(lam, 4, v, big, 1, 1, 0, out, 8, NULL, NULL), PSDA_ERR_SIZE);
    CHECK(last_error_has("n*n_eig"), "kdpp: the message does not name n*n_eig");
    WANT(psda_kdpp_sample_f64(lam, 2, v, INT64_MAX, 1, 1, 0, out, 8, NULL, NULL), PSDA_ERR_SIZE);
    /* nb * k = 2^64 wraps to 0, which out_cap = 8 would satisfy. */
    WANT(psda_kdpp_sample_f64(lam, 2, v, 2, 4, big, 0, out, 8, NULL, NULL), PSDA_ERR_SIZE);
    CHECK(last_error_has("nb*k"), "kdpp: the message does not name nb*k");
    WANT(psda_kdpp_sample_f64(lam, 2, v, 2, INT64_MAX, INT64_MAX, 0, out, 8, NULL, NULL), PSDA_ERR_SIZE);
    /* Non-finite eigenvectors are refused, naming v. */
    double vnan[4] = {1, 0, NAN, 1}, vinf[4] = {1, -INFINITY, 0, 1}, laminf[2] = {1, INFINITY};
    WANT(psda_kdpp_sample_f64(lam, 2, vnan, 2, 1, 2, 0, out, 8, NULL, NULL), PSDA_ERR_INVALID);
    CHECK(last_error_has("v[2]"), "kdpp: the message does not name v[2]");
    WANT(psda_kdpp_sample_f64(lam, 2, vinf, 2, 1, 2, 0, out, 8, NULL, NULL), PSDA_ERR_INVALID);
    CHECK(last_error_has("v[1]"), "kdpp: the message does not name v[1]");
    WANT(psda_kdpp_sample_f64(laminf, 2, v, 2, 1, 2, 0, out, 8, NULL, NULL), PSDA_ERR_INVALID);
    CHECK(last_error_has("lam[1]"), "kdpp: the message does not name lam[1]");
    WANT(psda_kdpp_sample_f64(lam, 2, v, 2, 1, 2, 0, out, 8, NULL, NULL), PSDA_OK);

    /* The other searches' size products: m*d and g*d. */
    double x[4] = {0, 1, 2, 3}, w[2] = {1, 1}, centre[2] = {0, 0}, omega[1] = {1};
    int64_t group[2] = {0, 0}, class_[2] = {0, 0};
    WANT(psda_exchange_f64(x, big, 4, w, group, class_, centre, 1, omega, 1, 1, 0, 0, hist, 4, &n_hist, NULL, NULL),
         PSDA_ERR_SIZE);
    CHECK(last_error_has("m*d"), "exchange: the message does not name m*d");
    WANT(psda_exchange_f64(x, 2, big, w, group, class_, centre, 4, omega, 1, 1, 0, 0, hist, 4, &n_hist, NULL, NULL),
         PSDA_ERR_SIZE);
    WANT(psda_exchange_f64(x, 2, 2, w, group, class_, centre, INT64_MAX, omega, 1, 1, 0, 0, hist, 4, &n_hist, NULL,
                           NULL),
         PSDA_ERR_SIZE);
    CHECK(last_error_has("g*d"), "exchange: the message does not name g*d");
    WANT(psda_kmeans_f64(x, big, 4, w, group, 1, 1, 1, 0, hist, 4, &n_hist, NULL, NULL), PSDA_ERR_SIZE);
    CHECK(last_error_has("m*d"), "kmeans: the message does not name m*d");
    WANT(psda_kmeans_f64(x, 2, 2, w, group, 1, 1, 1, 0, hist, 4, &n_hist, NULL, NULL), PSDA_OK);

    /* history_cap >= passes + 1, where passes + 1 wraps to INT64_MIN for
     * passes = INT64_MAX: refused, not history_len > history_cap. */
    double x4[8] = {0, 0, 1, 1, 5, 5, 6, 6}, w4[4] = {1, 1, 1, 1}, centre2[4] = {0, 0, 0, 0}, omega2[2] = {1, 1};
    int64_t group4[4] = {0, 1, 0, 1}, class4[4] = {0, 0, 0, 0};
    n_hist = -1;
    WANT(psda_kmeans_f64(x, 2, 2, w, group, 1, 1, INT64_MAX, 0, hist, 1, &n_hist, NULL, NULL), PSDA_ERR_SIZE);
    CHECK(n_hist <= 1, "kmeans: history_len = %lld with history_cap = 1", (long long)n_hist);
    n_hist = -1;
    WANT(psda_exchange_f64(x4, 4, 2, w4, group4, class4, centre2, 2, omega2, 1, INT64_MAX, 0, 0, hist, 1, &n_hist,
                           NULL, NULL),
         PSDA_ERR_SIZE);
    CHECK(n_hist <= 1, "exchange: history_len = %lld with history_cap = 1", (long long)n_hist);
    /* partners < 0 has no meaning (0 is the whole class): refused, naming it. */
    WANT(psda_exchange_f64(x4, 4, 2, w4, group4, class4, centre2, 2, omega2, 1, 1, -3, 0, hist, 4, &n_hist, NULL,
                           NULL),
         PSDA_ERR_INVALID);
    CHECK(last_error_has("partners"), "exchange: the message does not name partners");
    /* A capacity far beyond what is needed (as for psda_version): only the
     * values the call produces are written, never an internal error. */
    WANT(psda_kdpp_sample_f64(lam, 2, v, 2, 1, 2, 0, out, INT64_MAX, NULL, NULL), PSDA_OK);
    WANT(psda_kmeans_f64(x, 2, 2, w, group, 1, 1, 1, 0, hist, INT64_MAX, &n_hist, NULL, NULL), PSDA_OK);
    WANT(psda_exchange_f64(x4, 4, 2, w4, group4, class4, centre2, 2, omega2, 1, 1, 0, 0, hist, INT64_MAX, &n_hist,
                           NULL, NULL),
         PSDA_OK);
}

/* test_hostile_arguments calls each entry point with NULLs, zero, negative
 * and overflowing sizes, special values and bad strings. */
static void test_hostile_arguments(void) {
    psda_ctx ctx = 0, bogus = (psda_ctx)-1;
    char buf[64];
    int64_t a = 0, b = 0, c = 0, out[16];
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {8, 7, 6, 5, 4, 3, 2, 1}, s1, s2, bd;
    float xf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double gam[3] = {NAN, INFINITY, -1};
    const int64_t *view = NULL;

    STATUS(psda_abi_version(NULL));
    STATUS(psda_version(NULL, 0));
    STATUS(psda_version(buf, 0));
    /* A cap far beyond the buffer: only the string's bytes may be written. */
    WANT(psda_version(buf, SIZE_MAX), PSDA_OK);
    STATUS(psda_last_error(0, NULL, 0));
    STATUS(psda_last_error(0, buf, SIZE_MAX));
    STATUS(psda_last_error(bogus, buf, sizeof buf));

    /* Unknown handles on every function that takes one. */
    WANT(psda_ctx_free(bogus), PSDA_ERR_HANDLE);
    WANT(psda_set_batch_size(bogus, 4), PSDA_ERR_HANDLE);
    WANT(psda_set_stages(bogus, 2), PSDA_ERR_HANDLE);
    WANT(psda_set_discrepancy(bogus, "mmd"), PSDA_ERR_HANDLE);
    WANT(psda_set_kernel(bogus, "rbf"), PSDA_ERR_HANDLE);
    WANT(psda_set_gammas(bogus, NULL, 0), PSDA_ERR_HANDLE);
    WANT(psda_set_solver(bogus, "auto"), PSDA_ERR_HANDLE);
    WANT(psda_compute_f64(bogus, x, 4, y, 4, 2), PSDA_ERR_HANDLE);
    WANT(psda_compute_f32(bogus, xf, 4, xf, 4, 2), PSDA_ERR_HANDLE);
    WANT(psda_progress(bogus, &a, &b, (int32_t *)&c), PSDA_ERR_HANDLE);
    WANT(psda_progress_view(bogus, &view), PSDA_ERR_HANDLE);
    WANT(psda_cancel(bogus), PSDA_ERR_HANDLE);
    WANT(psda_result_sizes(bogus, &a, &b, &c), PSDA_ERR_HANDLE);
    WANT(psda_copy_pairs(bogus, out, 16), PSDA_ERR_HANDLE);
    WANT(psda_copy_quads(bogus, out, 16), PSDA_ERR_HANDLE);
    WANT(psda_copy_singles(bogus, out, 16), PSDA_ERR_HANDLE);
    WANT(psda_objectives(bogus, &s1, &s2, &bd), PSDA_ERR_HANDLE);
    WANT(psda_schedule(bogus, 2, 0, 0, 1), PSDA_ERR_HANDLE);
    WANT(psda_schedule_num_batches(bogus, &a), PSDA_ERR_HANDLE);
    WANT(psda_schedule_batch_len(bogus, 0, 0, &a), PSDA_ERR_HANDLE);
    WANT(psda_schedule_fill(bogus, 0, 0, 0, out, 16, &a), PSDA_ERR_HANDLE);

    WANT(psda_ctx_new(&ctx), PSDA_OK);
    /* Options out of range are accepted or refused, never a crash; compute
     * refuses the bad ones with PSDA_ERR_INVALID. */
    STATUS(psda_set_batch_size(ctx, INT64_MIN));
    STATUS(psda_set_batch_size(ctx, INT64_MAX));
    STATUS(psda_set_batch_size(ctx, -1));
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_INVALID);
    STATUS(psda_set_stages(ctx, INT32_MIN));
    STATUS(psda_set_stages(ctx, INT32_MAX));
    WANT(psda_set_batch_size(ctx, 4), PSDA_OK);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_INVALID);
    WANT(psda_set_stages(ctx, 2), PSDA_OK);
    WANT(psda_set_discrepancy(ctx, NULL), PSDA_ERR_NULL);
    WANT(psda_set_kernel(ctx, NULL), PSDA_ERR_NULL);
    WANT(psda_set_solver(ctx, NULL), PSDA_ERR_NULL);
    STATUS(psda_set_discrepancy(ctx, ""));
    STATUS(psda_set_kernel(ctx, "\xff\xfe not utf-8"));
    STATUS(psda_set_solver(ctx, "blossom; rm -rf /"));
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_INVALID);
    WANT(psda_set_discrepancy(ctx, "mmd"), PSDA_OK);
    WANT(psda_set_kernel(ctx, "rbf"), PSDA_OK);
    WANT(psda_set_solver(ctx, "auto"), PSDA_OK);
    WANT(psda_set_gammas(ctx, NULL, 5), PSDA_ERR_NULL);
    WANT(psda_set_gammas(ctx, gam, SIZE_MAX), PSDA_ERR_SIZE);
    WANT(psda_set_gammas(ctx, gam, 3), PSDA_OK);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_INVALID);
    WANT(psda_set_gammas(ctx, gam, 0), PSDA_OK);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_INVALID);
    WANT(psda_set_gammas(ctx, NULL, 0), PSDA_OK);

    /* Sizes: negative, zero, and products whose byte count overflows. */
    WANT(psda_compute_f64(ctx, x, -1, y, 4, 2), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, 4, y, INT64_MIN, 2), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 0), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, -3), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, INT64_MAX, y, 4, 2), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, (int64_t)1 << 40, y, 4, (int64_t)1 << 20), PSDA_ERR_SIZE);
    WANT(psda_compute_f64(ctx, x, (int64_t)1 << 32, y, 4, (int64_t)1 << 31), PSDA_ERR_SIZE);
    WANT(psda_compute_f32(ctx, xf, (int64_t)1 << 46, xf, 4, 2), PSDA_ERR_SIZE);
    WANT(psda_compute_f32(ctx, xf, 4, xf, 4, INT64_MAX), PSDA_ERR_SIZE);

    /* Special values in the features. */
    double bad[8] = {NAN, 1, 2, 3, 4, 5, 6, 7};
    WANT(psda_compute_f64(ctx, bad, 4, y, 4, 2), PSDA_ERR_INVALID);
    bad[0] = INFINITY;
    WANT(psda_compute_f64(ctx, bad, 4, y, 4, 2), PSDA_ERR_INVALID);
    double huge[8] = {1e300, -1e300, 1e300, 1e300, -1e300, 1e300, 1e300, -1e300};
    STATUS(psda_compute_f64(ctx, huge, 4, y, 4, 2));

    /* Result accessors with bad buffers, after a good compute. */
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_OK);
    WANT(psda_result_sizes(ctx, NULL, &b, &c), PSDA_ERR_NULL);
    WANT(psda_result_sizes(ctx, &a, &b, &c), PSDA_OK);
    WANT(psda_copy_pairs(ctx, NULL, 16), PSDA_ERR_NULL);
    WANT(psda_copy_pairs(ctx, out, -5), PSDA_ERR_SIZE);
    WANT(psda_copy_pairs(ctx, out, INT64_MIN), PSDA_ERR_SIZE);
    WANT(psda_copy_pairs(ctx, out, 1), PSDA_ERR_SIZE);
    WANT(psda_copy_pairs(ctx, out, 16), PSDA_OK);
    STATUS(psda_copy_quads(ctx, NULL, 0));
    STATUS(psda_copy_quads(ctx, out, -1));
    STATUS(psda_copy_singles(ctx, NULL, INT64_MAX));
    WANT(psda_objectives(ctx, &s1, NULL, &bd), PSDA_ERR_NULL);
    WANT(psda_objectives(ctx, &s1, &s2, &bd), PSDA_OK);
    WANT(psda_progress(ctx, NULL, NULL, NULL), PSDA_ERR_NULL);
    WANT(psda_progress_view(ctx, NULL), PSDA_ERR_NULL);

    /* The schedule: out-of-range sizes, ranks, batches, epochs and buffers. */
    WANT(psda_schedule(ctx, INT64_MIN, 0, 0, 1), PSDA_ERR_INVALID);
    WANT(psda_schedule(ctx, INT64_MAX, 0, 0, 1), PSDA_ERR_INVALID);
    WANT(psda_schedule(ctx, 2, 0, 0, INT64_MAX), PSDA_ERR_INVALID);
    WANT(psda_schedule(ctx, 2, 0, 0, -1), PSDA_ERR_INVALID);
    WANT(psda_schedule(ctx, 3, 0, 0, 1), PSDA_ERR_INVALID);
    WANT(psda_schedule(ctx, 2, UINT64_MAX, INT32_MIN, 1), PSDA_OK);
    WANT(psda_schedule_num_batches(ctx, NULL), PSDA_ERR_NULL);
    WANT(psda_schedule_batch_len(ctx, INT64_MIN, 0, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_batch_len(ctx, 0, INT64_MAX, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_batch_len(ctx, 0, -1, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_fill(ctx, UINT64_MAX, 0, 0, out, 16, &a), PSDA_OK);
    WANT(psda_schedule_fill(ctx, 0, 0, 0, out, -1, &a), PSDA_ERR_SIZE);
    WANT(psda_schedule_fill(ctx, 0, 0, 0, out, INT64_MIN, &a), PSDA_ERR_SIZE);
    WANT(psda_schedule_fill(ctx, 0, INT64_MAX, 0, out, 16, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_fill(ctx, 0, 0, INT64_MIN, out, 16, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_fill(ctx, 0, 0, INT64_MAX, out, 16, &a), PSDA_ERR_INVALID);
    WANT(psda_schedule_fill(ctx, 0, 0, 0, NULL, 16, &a), PSDA_ERR_NULL);

    /* psda_lsap_f64. */
    int64_t col[4];
    double cost[6] = {1, 2, 3, 4, 5, 6}, obj;
    WANT(psda_lsap_f64(NULL, 2, 3, col, 4, &obj), PSDA_ERR_NULL);
    WANT(psda_lsap_f64(cost, 2, 3, NULL, 4, &obj), PSDA_ERR_NULL);
    WANT(psda_lsap_f64(cost, 0, 3, col, 4, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, -2, 3, col, 4, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, 3, 2, col, 4, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, 2, 3, col, 1, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, 2, 3, col, -1, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, (int64_t)1 << 32, (int64_t)1 << 33, col, 4, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, 2, INT64_MAX, col, 4, &obj), PSDA_ERR_SIZE);
    WANT(psda_lsap_f64(cost, 2, 3, col, 4, NULL), PSDA_OK);
    double nanc[6] = {NAN, 2, 3, 4, 5, 6};
    STATUS(psda_lsap_f64(nanc, 2, 3, col, 4, &obj));
    double infc[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    WANT(psda_lsap_f64(infc, 2, 3, col, 4, &obj), PSDA_ERR_INFEASIBLE);
    double bigc[6] = {1e308, -1e308, 1e308, -1e308, 1e308, -1e308};
    STATUS(psda_lsap_f64(bigc, 2, 3, col, 4, &obj));

    test_hostile_searches();

    /* The global slot holds the message of the last call without a valid
     * context: a progress poll or cancel on a live context, which may run
     * in any thread at any rate, must not erase it. */
    int32_t ph = -1;
    WANT(psda_lsap_f64(NULL, 2, 3, col, 4, &obj), PSDA_ERR_NULL);
    WANT(psda_progress(ctx, &a, &b, &ph), PSDA_OK);
    WANT(psda_progress_view(ctx, &view), PSDA_OK);
    WANT(psda_cancel(ctx), PSDA_OK);
    CHECK(last_error_has("cost is NULL"), "a successful poll or cancel on a live context erased the global message");
    /* Nor may freeing a live context (another thread's, say): psda_ctx_free
     * on a valid handle is a call with a valid context. */
    psda_ctx spare = 0;
    WANT(psda_ctx_new(&spare), PSDA_OK);
    WANT(psda_lsap_f64(NULL, 2, 3, col, 4, &obj), PSDA_ERR_NULL);
    WANT(psda_ctx_free(spare), PSDA_OK);
    CHECK(last_error_has("cost is NULL"), "a successful psda_ctx_free of a live context erased the global message");

    WANT(psda_ctx_free(ctx), PSDA_OK);
    WANT(psda_ctx_free(ctx), PSDA_ERR_HANDLE);
    WANT(psda_compute_f64(ctx, x, 4, y, 4, 2), PSDA_ERR_HANDLE);
    WANT(psda_progress_view(ctx, &view), PSDA_ERR_HANDLE);
    WANT(psda_cancel(ctx), PSDA_ERR_HANDLE);
    WANT(psda_schedule_fill(ctx, 0, 0, 0, out, 16, &a), PSDA_ERR_HANDLE);
}

/* Shared features for the threaded tests. */
enum { M = 600, DIM = 8 };
static double *fx, *fy;

struct race {
    psda_ctx ctx;
    int status;
    long delay_ms;
};

static void *compute_thread(void *p) {
    struct race *r = p;
    sleep_ms(r->delay_ms);
    r->status = psda_compute_f64(r->ctx, fx, M, fy, M, DIM);
    return NULL;
}

static void *free_thread(void *p) {
    struct race *r = p;
    sleep_ms(r->delay_ms);
    r->status = psda_ctx_free(r->ctx);
    return NULL;
}

static void *poll_thread(void *p) {
    struct race *r = p;
    int64_t d, t;
    int32_t ph;
    const int64_t *view;
    r->status = PSDA_OK;
    for (int i = 0; i < 200; i++) {
        int s1 = psda_progress(r->ctx, &d, &t, &ph), s2 = psda_progress_view(r->ctx, &view);
        int s3 = psda_cancel(r->ctx);
        if (!is_status(s1) || !is_status(s2) || !is_status(s3))
            r->status = PSDA_ERR_INTERNAL;
        if (s1 == PSDA_ERR_HANDLE)
            break;
        sleep_ms(1);
    }
    return NULL;
}

/* test_free_race: thread A computes, thread B waits on the same context
 * to compute, thread C frees it while A runs (so C waits for A), and a
 * poller reads the progress throughout. Whatever the interleaving, B gets
 * PSDA_OK (it ran before the free) or PSDA_ERR_HANDLE, and nothing crashes. */
static void test_free_race(void) {
    for (int round = 0; round < 6; round++) {
        psda_ctx ctx = 0;
        psda_ctx_new(&ctx);
        psda_set_batch_size(ctx, 4);
        struct race a = {ctx, -1, 0}, b = {ctx, -1, 5 + round}, c = {ctx, -1, 10 + round}, p = {ctx, -1, 0};
        pthread_t ta, tb, tc, tp;
        pthread_create(&ta, NULL, compute_thread, &a);
        pthread_create(&tb, NULL, compute_thread, &b);
        pthread_create(&tc, NULL, free_thread, &c);
        pthread_create(&tp, NULL, poll_thread, &p);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_join(tc, NULL);
        pthread_join(tp, NULL);
        CHECK(a.status == PSDA_OK || a.status == PSDA_ERR_HANDLE || a.status == PSDA_ERR_CANCELLED,
              "round %d: compute A status %d", round, a.status);
        CHECK(b.status == PSDA_OK || b.status == PSDA_ERR_HANDLE || b.status == PSDA_ERR_CANCELLED,
              "round %d: compute B status %d", round, b.status);
        CHECK(c.status == PSDA_OK, "round %d: free status %d", round, c.status);
        CHECK(p.status == PSDA_OK, "round %d: poller saw an internal error", round);
        WANT(psda_ctx_free(ctx), PSDA_ERR_HANDLE);
    }
}

/* test_double_free_race: many threads free one context at once; exactly one
 * succeeds and every other gets PSDA_ERR_HANDLE. */
static void test_double_free_race(void) {
    enum { T = 8 };
    for (int round = 0; round < 20; round++) {
        psda_ctx ctx = 0;
        psda_ctx_new(&ctx);
        struct race r[T];
        pthread_t th[T];
        for (int i = 0; i < T; i++) {
            r[i] = (struct race){ctx, -1, 0};
            pthread_create(&th[i], NULL, free_thread, &r[i]);
        }
        int ok = 0;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            if (r[i].status == PSDA_OK)
                ok++;
            else
                CHECK(r[i].status == PSDA_ERR_HANDLE, "round %d: concurrent free status %d", round, r[i].status);
        }
        CHECK(ok == 1, "round %d: %d concurrent frees succeeded, want 1", round, ok);
    }
}

/* test_shared_context: several threads set options, compute and read
 * results on one context; every call ends with a psda.h status. */
struct shared {
    psda_ctx ctx;
    int id, bad;
};

static void *shared_thread(void *p) {
    struct shared *s = p;
    int64_t np, nq, ns, buf[2 * M];
    double s1, s2, bd;
    for (int i = 0; i < 4; i++) {
        int st[6];
        st[0] = psda_set_stages(s->ctx, 1 + (s->id + i) % 2);
        st[1] = psda_set_kernel(s->ctx, (s->id + i) % 2 ? "linear" : "rbf");
        st[2] = psda_compute_f64(s->ctx, fx, 100 + s->id, fy, 90, DIM);
        st[3] = psda_result_sizes(s->ctx, &np, &nq, &ns);
        st[4] = psda_copy_pairs(s->ctx, buf, 2 * M);
        st[5] = psda_objectives(s->ctx, &s1, &s2, &bd);
        for (int k = 0; k < 6; k++)
            if (!is_status(st[k]))
                s->bad++;
    }
    return NULL;
}

static void test_shared_context(void) {
    enum { T = 4 };
    psda_ctx ctx = 0;
    psda_ctx_new(&ctx);
    psda_set_batch_size(ctx, 4);
    struct shared s[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        s[i] = (struct shared){ctx, i, 0};
        pthread_create(&th[i], NULL, shared_thread, &s[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK(s[i].bad == 0, "thread %d: %d calls returned INTERNAL or an unknown status", i, s[i].bad);
    }
    WANT(psda_ctx_free(ctx), PSDA_OK);
}

int main(void) {
    unsigned st = 3;
    fx = malloc(sizeof(double) * M * DIM);
    fy = malloc(sizeof(double) * M * DIM);
    for (int i = 0; i < M * DIM; i++) {
        fx[i] = lcg(&st);
        fy[i] = lcg(&st);
    }
    test_hostile_arguments();
    test_free_race();
    test_double_free_race();
    test_shared_context();
    free(fx);
    free(fy);
    printf("%s: %d checks, %d failures\n", failures ? "FAILED" : "ok", checks, failures);
    return failures > 100 ? 100 : failures;
}
