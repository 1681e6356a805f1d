/*
 * psda_abi_test.c - exercises every function of capi/psda.h from C, the
 * epoch schedule (psda_schedule*) included.
 *
 * Usage: psda_abi_test [expected-version]
 * Prints one line per failed check and "ok: N checks" at the end; the exit
 * status is the number of failures (capped at 100). tests/test_capi.py
 * compiles it against capi/psda.h and links it to the built library.
 *
 * Results are checked by properties that follow from the problem, never by
 * stored numbers: with target = source + a constant shift and n_s = n_t, the
 * linear-kernel MMD Stage 1 maximises sum_i <s_i, t_sigma(i)>, which by the
 * rearrangement inequality is the identity with cost 0 (distinct rows).
 *
 * One file of about 600 lines on purpose: one C program, built and run by
 * one pytest, covers the whole header.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psda.h"

static int checks, failures;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        checks++;                                                      \
        if (!(cond)) {                                                 \
            failures++;                                                \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            printf(__VA_ARGS__);                                       \
            printf("\n");                                              \
        }                                                              \
    } while (0)

/* expect checks a status and, for failures, that the message is non-empty
 * and mentions want (when want is not NULL). */
static void expect(int got, int want_status, psda_ctx ctx, const char *want, const char *what) {
    char msg[512];
    int s = psda_last_error(ctx, msg, sizeof msg);
    CHECK(got == want_status, "%s: status %d, want %d (message: %s)", what, got, want_status, msg);
    CHECK(s == PSDA_OK, "%s: psda_last_error status %d", what, s);
    if (want_status == PSDA_OK) {
        CHECK(msg[0] == '\0', "%s: message after success is \"%s\"", what, msg);
    } else {
        CHECK(msg[0] != '\0', "%s: empty message for status %d", what, got);
        if (want)
            CHECK(strstr(msg, want) != NULL, "%s: message \"%s\" does not mention \"%s\"", what, msg, want);
    }
}

/* Deterministic features: a linear congruential generator, so rows differ. */
static double next(unsigned *state) {
    *state = *state * 1103515245u + 12345u;
    return (double)((*state >> 8) & 0xffff) / 65536.0;
}

#define N 8
#define D 3

static void test_versions(const char *want_version) {
    int32_t abi = -1;
    char buf[64];
    expect(psda_abi_version(NULL), PSDA_ERR_NULL, 0, "out", "abi_version(NULL)");
    expect(psda_abi_version(&abi), PSDA_OK, 0, NULL, "abi_version");
    CHECK(abi == PSDA_ABI_VERSION, "library ABI %d, header %d", abi, PSDA_ABI_VERSION);

    expect(psda_version(NULL, 10), PSDA_ERR_NULL, 0, "buf", "version(NULL)");
    expect(psda_version(buf, 0), PSDA_ERR_SIZE, 0, "cap", "version(cap 0)");
    expect(psda_version(buf, 2), PSDA_ERR_SIZE, 0, "cap", "version(cap 2)");
    CHECK(strlen(buf) == 1, "truncated version has %zu bytes, want 1", strlen(buf));
    expect(psda_version(buf, sizeof buf), PSDA_OK, 0, NULL, "version");
    CHECK(buf[0] != '\0', "empty version");
    if (want_version)
        CHECK(strcmp(buf, want_version) == 0, "version \"%s\", want \"%s\"", buf, want_version);
}

/* psda_num_threads: set, read back, refuse a negative count and NULL. */
static void test_threads(void) {
    int32_t n = 0, before = 0;
    expect(psda_num_threads(0, &before), PSDA_OK, 0, NULL, "num_threads(0)");
    CHECK(before >= 1, "default thread count %d", before);
    expect(psda_num_threads(3, &n), PSDA_OK, 0, NULL, "num_threads(3)");
    CHECK(n == 3, "num_threads(3) stored %d", n);
    expect(psda_num_threads(0, &n), PSDA_OK, 0, NULL, "num_threads(0) after 3");
    CHECK(n == 3, "thread count %d after setting 3", n);
    expect(psda_num_threads(-1, &n), PSDA_ERR_INVALID, 0, "-1", "num_threads(-1)");
    expect(psda_num_threads(1, NULL), PSDA_ERR_NULL, 0, "out", "num_threads(1, NULL)");
    expect(psda_num_threads(before, &n), PSDA_OK, 0, NULL, "num_threads(before)");
}

static void test_handles(void) {
    psda_ctx bogus = 987654321, ctx = 0;
    char msg[8];
    int64_t a, b, c;
    expect(psda_ctx_new(NULL), PSDA_ERR_NULL, 0, "out", "ctx_new(NULL)");
    expect(psda_set_stages(0, 2), PSDA_ERR_HANDLE, 0, "ctx", "set_stages(0)");
    expect(psda_set_stages(bogus, 2), PSDA_ERR_HANDLE, 0, "ctx", "set_stages(bogus)");
    expect(psda_result_sizes(bogus, &a, &b, &c), PSDA_ERR_HANDLE, 0, "ctx", "result_sizes(bogus)");
    expect(psda_ctx_free(0), PSDA_OK, 0, NULL, "ctx_free(0)");

    expect(psda_ctx_new(&ctx), PSDA_OK, 0, NULL, "ctx_new");
    CHECK(ctx != 0, "ctx_new gave 0");
    CHECK(psda_last_error(ctx, NULL, 8) == PSDA_ERR_NULL, "last_error(NULL) accepted");
    CHECK(psda_last_error(ctx, msg, 0) == PSDA_ERR_SIZE, "last_error(cap 0) accepted");
    expect(psda_ctx_free(ctx), PSDA_OK, 0, NULL, "ctx_free");
    expect(psda_ctx_free(ctx), PSDA_ERR_HANDLE, 0, "freed", "ctx_free twice");
    expect(psda_set_batch_size(ctx, 2), PSDA_ERR_HANDLE, 0, "ctx", "use after free");
    CHECK(psda_last_error(bogus, msg, sizeof msg) == PSDA_ERR_HANDLE, "last_error(bogus) accepted");
}

/* test_errors drives psda_compute_* into each of its error paths. */
static void test_errors(void) {
    psda_ctx ctx = 0;
    double x[N * D], y[N * D], one = 1, nan_gamma[2] = {1, NAN};
    int64_t a, b, c, out[2 * N];
    double s1, s2, bd;
    unsigned st = 7;
    for (int i = 0; i < N * D; i++) {
        x[i] = next(&st);
        y[i] = next(&st);
    }
    psda_ctx_new(&ctx);

    expect(psda_result_sizes(ctx, &a, &b, &c), PSDA_ERR_NO_RESULT, ctx, NULL, "sizes before compute");
    expect(psda_copy_pairs(ctx, out, 2 * N), PSDA_ERR_NO_RESULT, ctx, NULL, "pairs before compute");
    expect(psda_objectives(ctx, &s1, &s2, &bd), PSDA_ERR_NO_RESULT, ctx, NULL, "objectives before compute");

    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "batch_size", "batch size unset");
    expect(psda_set_batch_size(ctx, 4), PSDA_OK, ctx, NULL, "set_batch_size");
    expect(psda_compute_f64(ctx, NULL, N, y, N, D), PSDA_ERR_NULL, ctx, "source", "NULL source");
    expect(psda_compute_f64(ctx, x, N, NULL, N, D), PSDA_ERR_NULL, ctx, "target", "NULL target");
    expect(psda_compute_f64(ctx, x, 0, y, N, D), PSDA_ERR_SIZE, ctx, "n_source", "n_source 0");
    expect(psda_compute_f64(ctx, x, N, y, -1, D), PSDA_ERR_SIZE, ctx, "n_target", "n_target -1");
    expect(psda_compute_f64(ctx, x, N, y, N, 0), PSDA_ERR_SIZE, ctx, "dim", "dim 0");
    expect(psda_compute_f32(ctx, NULL, N, NULL, N, D), PSDA_ERR_NULL, ctx, "source", "f32 NULL source");

    x[5] = NAN;
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "finite", "NaN source");
    x[5] = 0.25;
    y[2] = INFINITY;
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "target", "Inf target");
    y[2] = 0.75;

    expect(psda_set_kernel(ctx, NULL), PSDA_ERR_NULL, ctx, "kernel", "set_kernel(NULL)");
    expect(psda_set_kernel(ctx, "laplace"), PSDA_OK, ctx, NULL, "set_kernel(laplace)");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "laplace", "unknown kernel");
    psda_set_kernel(ctx, "rbf");
    expect(psda_set_gammas(ctx, NULL, 2), PSDA_ERR_NULL, ctx, "gammas", "set_gammas(NULL, 2)");
    expect(psda_set_gammas(ctx, nan_gamma, 2), PSDA_OK, ctx, NULL, "set_gammas(NaN)");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "gamma", "NaN gamma");
    expect(psda_set_gammas(ctx, &one, 0), PSDA_OK, ctx, NULL, "set_gammas empty");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "gammas", "empty gammas");
    expect(psda_set_gammas(ctx, NULL, 0), PSDA_OK, ctx, NULL, "set_gammas default");
    expect(psda_set_gammas(ctx, &one, 1), PSDA_OK, ctx, NULL, "set_gammas(1)");

    expect(psda_set_discrepancy(ctx, NULL), PSDA_ERR_NULL, ctx, "discrepancy", "set_discrepancy(NULL)");
    psda_set_discrepancy(ctx, "wasserstein");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "wasserstein", "unknown discrepancy");
    psda_set_discrepancy(ctx, "mmd");
    psda_set_stages(ctx, 3);
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "stages", "stages 3");
    psda_set_stages(ctx, 2);

    expect(psda_set_solver(ctx, NULL), PSDA_ERR_NULL, ctx, "solver", "set_solver(NULL)");
    expect(psda_set_solver(ctx, "simplex"), PSDA_OK, ctx, NULL, "set_solver(simplex)");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "solver", "unknown solver");
    expect(psda_set_solver(ctx, "sparse"), PSDA_OK, ctx, NULL, "set_solver(sparse)");
    expect(psda_set_solver(ctx, "auto"), PSDA_OK, ctx, NULL, "set_solver(auto)");

    psda_set_batch_size(ctx, 3);
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "even", "odd batch, 2 stages");
    psda_set_batch_size(ctx, N + 2);
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "batch_size", "batch too large");
    psda_set_batch_size(ctx, 1);
    psda_set_stages(ctx, 1);
    psda_set_discrepancy(ctx, "coral");
    expect(psda_compute_f64(ctx, x, N, y, N, D), PSDA_ERR_INVALID, ctx, "'coral'", "CORAL with batch 1");
    psda_ctx_free(ctx);
}

/* compute_ok checks that a compute succeeded; the result checks that follow
 * are skipped when it did not, so one failure gives one report. */
static int compute_ok(int status, psda_ctx ctx, const char *what) {
    expect(status, PSDA_OK, ctx, NULL, what);
    return status == PSDA_OK;
}

/* check_matching checks the properties every matching of n_s x n_t has. */
static void check_matching(psda_ctx ctx, int ns, int nt, int stages, int64_t *pairs, const char *what) {
    int64_t np = -1, nq = -1, nsg = -1, quads[2 * N], singles[N];
    int seen[N] = {0}, used_s[N] = {0}, used_t[N] = {0};
    double s1 = NAN, s2 = NAN, bd = NAN;
    int p = ns > nt ? ns : nt;

    expect(psda_result_sizes(ctx, NULL, &nq, &nsg), PSDA_ERR_NULL, ctx, NULL, "result_sizes(NULL)");
    expect(psda_result_sizes(ctx, &np, &nq, &nsg), PSDA_OK, ctx, NULL, what);
    CHECK(np == p, "%s: %lld pairs, want max(n_s, n_t) = %d", what, (long long)np, p);
    CHECK(2 * nq + nsg == np, "%s: 2*%lld quads + %lld singles != %lld pairs", what, (long long)nq, (long long)nsg, (long long)np);
    if (stages == 1)
        CHECK(nq == 0, "%s: %lld quads with 1 stage", what, (long long)nq);
    else
        CHECK(nsg == np % 2, "%s: %lld singles, want %lld", what, (long long)nsg, (long long)(np % 2));

    expect(psda_copy_pairs(ctx, pairs, 2 * np - 1), PSDA_ERR_SIZE, ctx, "cap", "copy_pairs short");
    expect(psda_copy_pairs(ctx, NULL, 2 * np), PSDA_ERR_NULL, ctx, "dst", "copy_pairs(NULL)");
    expect(psda_copy_pairs(ctx, pairs, 2 * np), PSDA_OK, ctx, NULL, "copy_pairs");
    expect(psda_copy_quads(ctx, quads, 2 * N), PSDA_OK, ctx, NULL, "copy_quads");
    if (nq == 0)
        expect(psda_copy_quads(ctx, NULL, 0), PSDA_OK, ctx, NULL, "copy_quads(NULL, 0) with none");
    expect(psda_copy_singles(ctx, singles, N), PSDA_OK, ctx, NULL, "copy_singles");
    if (nsg > 0)
        expect(psda_copy_singles(ctx, singles, nsg - 1), PSDA_ERR_SIZE, ctx, "cap", "copy_singles short");

    /* Every source and target is used; the larger side exactly once, the
     * smaller one floor(P/n) or ceil(P/n) times. */
    for (int r = 0; r < np; r++) {
        int64_t s = pairs[2 * r], t = pairs[2 * r + 1];
        CHECK(0 <= s && s < ns && 0 <= t && t < nt, "%s: pair %d = (%lld, %lld) out of range", what, r, (long long)s, (long long)t);
        if (0 <= s && s < ns && 0 <= t && t < nt) {
            used_s[s]++;
            used_t[t]++;
        }
    }
    for (int i = 0; i < ns; i++)
        CHECK(used_s[i] >= p / ns && used_s[i] <= (p + ns - 1) / ns, "%s: source %d used %d times", what, i, used_s[i]);
    for (int j = 0; j < nt; j++)
        CHECK(used_t[j] >= p / nt && used_t[j] <= (p + nt - 1) / nt, "%s: target %d used %d times", what, j, used_t[j]);

    /* Quadruplets and singles partition the pairs. */
    for (int u = 0; u < 2 * nq; u++)
        if (quads[u] >= 0 && quads[u] < np)
            seen[quads[u]]++;
    for (int u = 0; u < nsg; u++)
        if (singles[u] >= 0 && singles[u] < np)
            seen[singles[u]]++;
    for (int r = 0; r < np; r++)
        CHECK(seen[r] == 1, "%s: pair %d in %d units", what, r, seen[r]);

    expect(psda_objectives(ctx, &s1, NULL, &bd), PSDA_ERR_NULL, ctx, NULL, "objectives(NULL)");
    expect(psda_objectives(ctx, &s1, &s2, &bd), PSDA_OK, ctx, NULL, "objectives");
    CHECK(isfinite(s1) && s1 >= -1e-9, "%s: stage 1 cost %g", what, s1);
    if (stages == 2)
        CHECK(isfinite(s2) && isfinite(bd) && bd <= s2 + 1e-9 * (1 + fabs(s2)), "%s: stage 2 bound %g > cost %g", what, bd, s2);
}

/* test_shifted: balanced, target = source + shift, linear MMD: identity. */
static void test_shifted(void) {
    static const double shift[D] = {0.5, -1.0, 2.0};
    double x[N * D], y[N * D], s1, s2, bd;
    float xf[N * D], yf[N * D];
    int64_t pairs[2 * N], pairs32[2 * N];
    unsigned st = 42;
    psda_ctx ctx = 0;
    for (int i = 0; i < N * D; i++) {
        x[i] = next(&st);
        y[i] = x[i] + shift[i % D];
        xf[i] = (float)x[i];
        yf[i] = (float)y[i];
    }
    psda_ctx_new(&ctx);
    psda_set_batch_size(ctx, 4);
    psda_set_kernel(ctx, "linear");
    for (int stages = 1; stages <= 2; stages++) {
        psda_set_stages(ctx, stages);
        if (!compute_ok(psda_compute_f64(ctx, x, N, y, N, D), ctx, "compute_f64 shifted"))
            continue;
        check_matching(ctx, N, N, stages, pairs, "shifted f64");
        for (int r = 0; r < N; r++)
            CHECK(pairs[2 * r] == r && pairs[2 * r + 1] == r, "shifted: pair %d = (%lld, %lld), want (%d, %d)",
                  r, (long long)pairs[2 * r], (long long)pairs[2 * r + 1], r, r);
        psda_objectives(ctx, &s1, &s2, &bd);
        CHECK(fabs(s1) < 1e-9, "shifted: stage 1 cost %g, want 0", s1);

        if (!compute_ok(psda_compute_f32(ctx, xf, N, yf, N, D), ctx, "compute_f32 shifted"))
            continue;
        check_matching(ctx, N, N, stages, pairs32, "shifted f32");
        CHECK(memcmp(pairs, pairs32, sizeof pairs) == 0, "shifted: float32 pairs differ from float64 pairs");
    }

    /* Imbalanced, default RBF mixture: only structural properties. */
    psda_set_kernel(ctx, "rbf");
    if (compute_ok(psda_compute_f64(ctx, x, N, y, 5, D), ctx, "compute_f64 8x5"))
        check_matching(ctx, N, 5, 2, pairs, "8x5 rbf");
    if (compute_ok(psda_compute_f64(ctx, x, 3, y, N, D), ctx, "compute_f64 3x8"))
        check_matching(ctx, 3, N, 2, pairs, "3x8 rbf");

    /* CORAL, 1 stage. */
    psda_set_discrepancy(ctx, "coral");
    psda_set_stages(ctx, 1);
    psda_set_batch_size(ctx, 2);
    if (compute_ok(psda_compute_f32(ctx, xf, N, yf, 7, D), ctx, "compute_f32 coral"))
        check_matching(ctx, N, 7, 1, pairs, "8x7 coral");

    /* A failed compute leaves no stale result behind. */
    expect(psda_compute_f64(ctx, x, 0, y, N, D), PSDA_ERR_SIZE, ctx, NULL, "failing compute");
    expect(psda_copy_pairs(ctx, pairs, 2 * N), PSDA_ERR_NO_RESULT, ctx, NULL, "result after failed compute");
    psda_ctx_free(ctx);
}

/* test_solver: the sparse solver gives a valid matching and the same
 * (certified optimal) Stage 1 cost as the dense one; its Stage 2 cost is at
 * least the dense path's lower bound. */
static void test_solver(void) {
    enum { NS = 60, NT = 45, DIM = 4 };
    static const char *kernels[] = {"rbf", "linear"};
    double x[NS * DIM], y[NT * DIM];
    int64_t pairs[2 * N];
    unsigned st = 5;
    psda_ctx ctx = 0;
    for (int i = 0; i < NS * DIM; i++)
        x[i] = next(&st);
    for (int i = 0; i < NT * DIM; i++)
        y[i] = next(&st) + 0.2;
    psda_ctx_new(&ctx);
    psda_set_batch_size(ctx, 4);
    for (int k = 0; k < 2; k++) {
        double s1[2], s2[2], bd[2];
        int ok = 1;
        psda_set_kernel(ctx, kernels[k]);
        for (int v = 0; v < 2; v++) {
            expect(psda_set_solver(ctx, v ? "sparse" : "dense"), PSDA_OK, ctx, NULL, "set_solver");
            ok = ok && compute_ok(psda_compute_f64(ctx, x, NS, y, NT, DIM), ctx, v ? "sparse compute" : "dense compute");
            ok = ok && psda_objectives(ctx, &s1[v], &s2[v], &bd[v]) == PSDA_OK;
        }
        if (!ok)
            continue;
        CHECK(fabs(s1[1] - s1[0]) <= 1e-9 * fabs(s1[0]), "%s: sparse stage 1 cost %.17g, dense %.17g", kernels[k], s1[1], s1[0]);
        CHECK(s2[1] >= bd[0] - 1e-9 * fabs(bd[0]), "%s: sparse stage 2 cost %.17g below the dense bound %.17g", kernels[k], s2[1], bd[0]);
        CHECK(bd[1] <= s2[1] + 1e-9 * fabs(s2[1]), "%s: sparse stage 2 bound %.17g above its cost %.17g", kernels[k], bd[1], s2[1]);
    }
    /* Structural checks of a sparse result, on a size check_matching handles. */
    if (compute_ok(psda_compute_f64(ctx, x, N, y, 5, DIM), ctx, "sparse 8x5"))
        check_matching(ctx, N, 5, 2, pairs, "sparse 8x5");
    psda_ctx_free(ctx);
}

/* test_lsap compares psda_lsap_f64 with enumeration of all injections. */
static void test_lsap(void) {
    enum { R = 3, C = 4 };
    double cost[R * C], obj = NAN, best = INFINITY, sum = 0;
    int64_t col4row[R];
    unsigned st = 3;
    int hit[C] = {0};
    for (int i = 0; i < R * C; i++)
        cost[i] = floor(10 * next(&st));
    for (int a = 0; a < C; a++)
        for (int b = 0; b < C; b++)
            for (int c = 0; c < C; c++)
                if (a != b && b != c && a != c && cost[a] + cost[C + b] + cost[2 * C + c] < best)
                    best = cost[a] + cost[C + b] + cost[2 * C + c];

    expect(psda_lsap_f64(cost, R, C, col4row, R, &obj), PSDA_OK, 0, NULL, "lsap 3x4");
    for (int i = 0; i < R; i++) {
        CHECK(col4row[i] >= 0 && col4row[i] < C, "lsap: row %d -> column %lld", i, (long long)col4row[i]);
        if (col4row[i] >= 0 && col4row[i] < C) {
            CHECK(++hit[col4row[i]] == 1, "lsap: column %lld used twice", (long long)col4row[i]);
            sum += cost[i * C + col4row[i]];
        }
    }
    CHECK(fabs(sum - best) < 1e-12, "lsap: assignment costs %g, enumeration finds %g", sum, best);
    CHECK(fabs(obj - sum) < 1e-12, "lsap: objective %g, assignment sums to %g", obj, sum);
    expect(psda_lsap_f64(cost, R, C, col4row, R, NULL), PSDA_OK, 0, NULL, "lsap objective NULL");

    expect(psda_lsap_f64(NULL, R, C, col4row, R, &obj), PSDA_ERR_NULL, 0, "cost", "lsap NULL cost");
    expect(psda_lsap_f64(cost, R, C, NULL, R, &obj), PSDA_ERR_NULL, 0, "col4row", "lsap NULL col4row");
    expect(psda_lsap_f64(cost, C, R, col4row, C, &obj), PSDA_ERR_SIZE, 0, "transpose", "lsap nr > nc");
    expect(psda_lsap_f64(cost, 0, C, col4row, R, &obj), PSDA_ERR_SIZE, 0, NULL, "lsap nr 0");
    expect(psda_lsap_f64(cost, R, C, col4row, R - 1, &obj), PSDA_ERR_SIZE, 0, "cap", "lsap short cap");
    cost[5] = NAN;
    expect(psda_lsap_f64(cost, R, C, col4row, R, &obj), PSDA_ERR_INVALID, 0, "finite", "lsap NaN");
    cost[5] = -INFINITY;
    expect(psda_lsap_f64(cost, R, C, col4row, R, &obj), PSDA_ERR_INVALID, 0, "finite", "lsap -inf");

    /* Minor 4: +INFINITY forbids a pair; a row with every pair forbidden
     * leaves no assignment. */
    double forb[3 * 3] = {INFINITY, 1, INFINITY, 2, INFINITY, INFINITY, 5, 3, 1};
    expect(psda_lsap_f64(forb, 3, 3, col4row, 3, &obj), PSDA_OK, 0, NULL, "lsap +inf");
    CHECK(col4row[0] == 1 && col4row[1] == 0 && col4row[2] == 2 && obj == 4,
          "lsap +inf: columns %lld %lld %lld, objective %g; want 1 0 2, 4",
          (long long)col4row[0], (long long)col4row[1], (long long)col4row[2], obj);
    forb[1] = INFINITY;
    forb[3] = INFINITY;
    col4row[0] = -7;
    expect(psda_lsap_f64(forb, 3, 3, col4row, 3, &obj), PSDA_ERR_INFEASIBLE, 0, "cost matrix is infeasible",
           "lsap infeasible");
    CHECK(col4row[0] == -7, "lsap infeasible wrote col4row[0] = %lld", (long long)col4row[0]);

    /* psda_lsap_ctx_f64: the same solve on a context, its errors in the
     * context's slot, a pending cancel stops it once. */
    psda_ctx ctx = 0;
    psda_ctx_new(&ctx);
    forb[1] = 1;
    forb[3] = 2;
    expect(psda_lsap_ctx_f64(ctx, forb, 3, 3, col4row, 3, &obj), PSDA_OK, ctx, NULL, "lsap_ctx");
    CHECK(obj == 4, "lsap_ctx: objective %g, want 4", obj);
    expect(psda_lsap_ctx_f64(ctx, NULL, 3, 3, col4row, 3, &obj), PSDA_ERR_NULL, ctx, "cost", "lsap_ctx NULL");
    expect(psda_lsap_ctx_f64(0, forb, 3, 3, col4row, 3, &obj), PSDA_ERR_HANDLE, 0, "ctx", "lsap_ctx(0)");
    CHECK(psda_cancel(ctx) == PSDA_OK, "cancel before lsap_ctx failed");
    expect(psda_lsap_ctx_f64(ctx, forb, 3, 3, col4row, 3, &obj), PSDA_ERR_CANCELLED, ctx, "cancel",
           "lsap_ctx pending cancel");
    expect(psda_lsap_ctx_f64(ctx, forb, 3, 3, col4row, 3, &obj), PSDA_OK, ctx, NULL, "lsap_ctx after cancel");
    psda_ctx_free(ctx);
}

/* canceller sleeps the given milliseconds, then cancels the context. */
struct cancel_arg {
    psda_ctx ctx;
    long ms;
    int status;
    int64_t done_seen, view_seen;
};

static void *canceller(void *p) {
    struct cancel_arg *a = p;
    struct timespec ts = {a->ms / 1000, (a->ms % 1000) * 1000000L};
    int64_t done = 0, total = 0;
    int32_t phase = 0;
    nanosleep(&ts, NULL);
    const int64_t *view = NULL;
    psda_progress(a->ctx, &done, &total, &phase);
    a->done_seen = done;
    if (psda_progress_view(a->ctx, &view) == PSDA_OK)
        a->view_seen = view[0];
    a->status = psda_cancel(a->ctx);
    return NULL;
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* test_progress_cancel: progress reaches its total, a pending cancel stops
 * the next computation, a cancel from another thread stops a long one
 * promptly, and the context computes normally afterwards. */
static void test_progress_cancel(void) {
    enum { M = 3000, DIM = 16 }; /* long enough to cancel after 300 ms */
    psda_ctx ctx = 0;
    int64_t done = -1, total = -1, np, nq, ns;
    int32_t phase = -1;
    unsigned st = 11;
    double *x = malloc(sizeof(double) * M * DIM), *y = malloc(sizeof(double) * M * DIM);
    for (int i = 0; i < M * DIM; i++) {
        x[i] = next(&st);
        y[i] = next(&st);
    }
    expect(psda_cancel(0), PSDA_ERR_HANDLE, 0, "ctx", "cancel(0)");
    expect(psda_progress(0, &done, &total, &phase), PSDA_ERR_HANDLE, 0, "ctx", "progress(0)");

    psda_ctx_new(&ctx);
    psda_set_batch_size(ctx, 4);
    expect(psda_progress(ctx, NULL, &total, &phase), PSDA_ERR_NULL, 0, "done", "progress(NULL)");
    /* A success on a live context leaves the global slot (which holds the
     * failure above) alone; the context's own slot stays empty. */
    expect(psda_progress(ctx, &done, &total, &phase), PSDA_OK, ctx, NULL, "progress before compute");
    CHECK(done == 0 && phase == PSDA_PHASE_IDLE, "before compute: done %lld phase %d", (long long)done, phase);
    const int64_t *view = NULL;
    expect(psda_progress_view(0, &view), PSDA_ERR_HANDLE, 0, "ctx", "progress_view(0)");
    expect(psda_progress_view(ctx, NULL), PSDA_ERR_NULL, 0, "view", "progress_view(NULL)");
    expect(psda_progress_view(ctx, &view), PSDA_OK, ctx, NULL, "progress_view");
    CHECK(view[0] == 0 && view[1] == total && view[2] == PSDA_PHASE_IDLE, "view before compute: %lld/%lld phase %lld",
          (long long)view[0], (long long)view[1], (long long)view[2]);

    expect(psda_compute_f64(ctx, x, 50, y, 40, DIM), PSDA_OK, ctx, NULL, "small compute");
    psda_progress(ctx, &done, &total, &phase);
    CHECK(total > 0 && done == total && phase == PSDA_PHASE_DONE, "after compute: %lld/%lld phase %d", (long long)done, (long long)total, phase);
    CHECK(view[0] == done && view[1] == total && view[2] == phase, "view after compute: %lld/%lld phase %lld",
          (long long)view[0], (long long)view[1], (long long)view[2]);

    expect(psda_cancel(ctx), PSDA_OK, ctx, NULL, "cancel while idle");
    expect(psda_compute_f64(ctx, x, 50, y, 40, DIM), PSDA_ERR_CANCELLED, ctx, "cancel", "pending cancel");
    expect(psda_result_sizes(ctx, &np, &nq, &ns), PSDA_ERR_NO_RESULT, ctx, NULL, "no result after cancel");
    expect(psda_compute_f64(ctx, x, 50, y, 40, DIM), PSDA_OK, ctx, NULL, "compute after cancel");

    /* A long computation cancelled from another thread after 300 ms. */
    struct cancel_arg a = {ctx, 300, -1, -1, -1};
    pthread_t th;
    pthread_create(&th, NULL, canceller, &a);
    double t0 = seconds();
    int got = psda_compute_f64(ctx, x, M, y, M, DIM);
    double took = seconds() - t0;
    pthread_join(th, NULL);
    CHECK(a.status == PSDA_OK, "cancel from a thread: status %d", a.status);
    if (got == PSDA_OK) {
        printf("note: the %dx%d computation finished in %.2f s, before the cancel\n", M, M, took);
    } else {
        expect(got, PSDA_ERR_CANCELLED, ctx, "cancel", "cancel from a thread");
        CHECK(took < 0.3 + 2.0, "cancel took effect after %.2f s", took - 0.3);
        CHECK(a.done_seen > 0, "no progress seen after 300 ms (%lld)", (long long)a.done_seen);
        CHECK(a.view_seen > 0, "no progress in the view after 300 ms (%lld)", (long long)a.view_seen);
    }
    expect(psda_compute_f64(ctx, x, 60, y, 60, DIM), PSDA_OK, ctx, NULL, "compute after a threaded cancel");
    expect(psda_result_sizes(ctx, &np, &nq, &ns), PSDA_OK, ctx, NULL, "sizes after a threaded cancel");
    CHECK(np == 60, "pairs after a threaded cancel: %lld", (long long)np);
    psda_ctx_free(ctx);
    free(x);
    free(y);
}

/* pair_row returns the row of pairs (P x 2) whose source index is src and
 * target index tgt, or -1. */
static int pair_row(const int64_t *pairs, int64_t p, int64_t src, int64_t tgt) {
    for (int64_t r = 0; r < p; r++)
        if (pairs[2 * r] == src && pairs[2 * r + 1] == tgt)
            return (int)r;
    return -1;
}

/* test_schedule: the batches psda_schedule_fill hands out are the result's
 * pairs, position m of the source half paired with position m of the target
 * half, a quadruplet's two pairs at positions 2m and 2m + 1; the ranks
 * together cover every pair; an epoch repeats and epochs differ. Checked
 * against the pairs and quadruplets psda_copy_* return, not stored batches. */
static void test_schedule(void) {
    enum { NS = 22, NT = 17, DIM = 3, K = 4, R = 2 };
    double x[NS * DIM], y[NT * DIM];
    unsigned st = 5;
    for (int i = 0; i < NS * DIM; i++)
        x[i] = next(&st);
    for (int i = 0; i < NT * DIM; i++)
        y[i] = next(&st);
    psda_ctx ctx = 0;
    int64_t nb = -1, len = -1, written = -1, np = 0, nq = 0, ns = 0;
    psda_ctx_new(&ctx);
    psda_set_batch_size(ctx, K);
    expect(psda_schedule(0, K, 1, 0, R), PSDA_ERR_HANDLE, 0, "ctx", "schedule(0)");
    expect(psda_schedule(ctx, K, 1, 0, R), PSDA_ERR_NO_RESULT, ctx, "psda_compute", "schedule before compute");
    expect(psda_schedule_num_batches(ctx, &nb), PSDA_ERR_NO_RESULT, ctx, "psda_schedule", "num_batches before schedule");
    expect(psda_compute_f64(ctx, x, NS, y, NT, DIM), PSDA_OK, ctx, NULL, "compute for the schedule");
    psda_result_sizes(ctx, &np, &nq, &ns);
    CHECK(np == NS && nq == NS / 2 && ns == 0, "sizes %lld %lld %lld", (long long)np, (long long)nq, (long long)ns);
    int64_t pairs[2 * NS], quads[NS], singles[1];
    psda_copy_pairs(ctx, pairs, 2 * NS);
    psda_copy_quads(ctx, quads, NS);
    psda_copy_singles(ctx, singles, 0);

    expect(psda_schedule(ctx, 0, 1, 0, R), PSDA_ERR_INVALID, ctx, "batch_size", "schedule batch_size 0");
    expect(psda_schedule(ctx, 3, 1, 0, R), PSDA_ERR_INVALID, ctx, "even", "schedule odd batch_size");
    expect(psda_schedule(ctx, 12, 1, 1, R), PSDA_ERR_INVALID, ctx, "batch_size <= 10", "schedule: a rank without a batch");
    expect(psda_schedule(ctx, K, 1, 0, 0), PSDA_ERR_INVALID, ctx, "num_replicas", "schedule num_replicas 0");
    expect(psda_schedule(ctx, K, 7, 0, R), PSDA_OK, ctx, NULL, "schedule");
    expect(psda_schedule_num_batches(ctx, NULL), PSDA_ERR_NULL, ctx, "out", "num_batches(NULL)");
    expect(psda_schedule_num_batches(ctx, &nb), PSDA_OK, ctx, NULL, "num_batches");
    /* 22 pairs in batches of 4: 6 batches (the last of 2) over 2 ranks. */
    CHECK(nb == 3, "num_batches %lld, want 3", (long long)nb);
    expect(psda_schedule_batch_len(ctx, R, 0, &len), PSDA_ERR_INVALID, ctx, "rank", "batch_len rank out of range");
    expect(psda_schedule_batch_len(ctx, 0, nb, &len), PSDA_ERR_INVALID, ctx, "batch", "batch_len b out of range");
    expect(psda_schedule_batch_len(ctx, 0, 0, NULL), PSDA_ERR_NULL, ctx, "out", "batch_len(NULL)");

    int seen[NS] = {0};
    int64_t flat[2 * K * 3], again[2 * K * 3];
    for (int rank = 0; rank < R; rank++) {
        expect(psda_schedule_fill(ctx, 3, rank, 0, flat, 2 * K * 3, &written), PSDA_OK, ctx, NULL, "fill");
        int64_t off = 0;
        for (int64_t b = 0; b < nb; b++) {
            expect(psda_schedule_batch_len(ctx, rank, b, &len), PSDA_OK, ctx, NULL, "batch_len");
            CHECK(len == K || len == 2, "batch %lld of rank %d has %lld pairs", (long long)b, rank, (long long)len);
            int rows[K];
            for (int64_t m = 0; m < len; m++) {
                rows[m] = pair_row(pairs, np, flat[off + m], flat[off + len + m]);
                CHECK(rows[m] >= 0, "position %lld of batch %lld: (%lld, %lld) is not a pair", (long long)m, (long long)b,
                      (long long)flat[off + m], (long long)flat[off + len + m]);
                if (rows[m] >= 0)
                    seen[rows[m]]++;
            }
            for (int64_t m = 0; m + 1 < len; m += 2) {
                int quad = 0;
                for (int64_t u = 0; u < nq; u++)
                    quad |= (quads[2 * u] == rows[m] && quads[2 * u + 1] == rows[m + 1]) ||
                            (quads[2 * u] == rows[m + 1] && quads[2 * u + 1] == rows[m]);
                CHECK(quad, "positions %lld, %lld of batch %lld are not a quadruplet", (long long)m, (long long)m + 1, (long long)b);
            }
            off += 2 * len;
        }
        CHECK(written == off, "fill wrote %lld values, the batches hold %lld", (long long)written, (long long)off);
        int64_t first = 0;
        psda_schedule_batch_len(ctx, rank, 0, &first);
        expect(psda_schedule_fill(ctx, 3, rank, 1, again, 2 * K * 3, &written), PSDA_OK, ctx, NULL, "fill from batch 1");
        CHECK(written == off - 2 * first && memcmp(again, flat + 2 * first, sizeof(int64_t) * written) == 0,
              "fill from batch 1 is not the tail of the epoch (rank %d)", rank);
        expect(psda_schedule_fill(ctx, 3, rank, 0, again, 2 * K * 3, &written), PSDA_OK, ctx, NULL, "fill again");
        CHECK(memcmp(again, flat, sizeof(int64_t) * written) == 0, "epoch 3 differs between two fills (rank %d)", rank);
    }
    /* Without drop_last, a rank short of a batch repeats one: every pair at
     * least once. */
    for (int r = 0; r < NS; r++)
        CHECK(seen[r] >= 1, "pair %d is in no batch", r);
    int differ = 0;
    for (uint64_t e = 4; e < 8 && !differ; e++) {
        psda_schedule_fill(ctx, e, 0, 0, again, 2 * K * 3, &written);
        differ = memcmp(again, flat, sizeof(int64_t) * written) != 0;
    }
    CHECK(differ, "epochs 4 to 7 repeat epoch 3");

    expect(psda_schedule_fill(ctx, 3, 0, 0, flat, 3, &written), PSDA_ERR_SIZE, ctx, "cap", "fill short buffer");
    expect(psda_schedule_fill(ctx, 3, 0, 0, NULL, 2 * K * 3, &written), PSDA_ERR_NULL, ctx, "dst", "fill(NULL)");
    expect(psda_schedule_fill(ctx, 3, 0, 0, flat, 2 * K * 3, NULL), PSDA_ERR_NULL, ctx, "written", "fill written NULL");
    expect(psda_schedule_fill(ctx, 3, R, 0, flat, 2 * K * 3, &written), PSDA_ERR_INVALID, ctx, "rank", "fill bad rank");
    expect(psda_schedule_fill(ctx, 3, 0, nb + 1, flat, 2 * K * 3, &written), PSDA_ERR_INVALID, ctx, "batch", "fill bad start");
    expect(psda_schedule_fill(ctx, 3, 0, nb, NULL, 0, &written), PSDA_OK, ctx, NULL, "fill from the end");
    CHECK(written == 0, "fill from the end wrote %lld values", (long long)written);

    /* A new computation drops the schedule with the result. */
    expect(psda_compute_f64(ctx, x, NS, y, NT, DIM), PSDA_OK, ctx, NULL, "recompute");
    expect(psda_schedule_num_batches(ctx, &nb), PSDA_ERR_NO_RESULT, ctx, NULL, "num_batches after recompute");
    psda_ctx_free(ctx);
}

int main(int argc, char **argv) {
    test_versions(argc > 1 ? argv[1] : NULL);
    test_threads();
    test_handles();
    test_errors();
    test_shifted();
    test_solver();
    test_lsap();
    test_progress_cancel();
    test_schedule();
    printf("%s: %d checks, %d failures\n", failures ? "FAILED" : "ok", checks, failures);
    return failures > 100 ? 100 : failures;
}
