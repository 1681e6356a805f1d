// Package psda implements Paired Sampling for Domain Adaptation (PSDA): it turns
// source and target feature matrices into the paper's matchings and cuts them
// into minibatches whose discrepancy estimate has low variance.
//
// The specification is the Method section of the PSDA paper: Stage 1 pairs
// source and target examples by a linear assignment under the conditional
// cost C^st (eqs. 3–5), Stage 2 groups those pairs into quadruplets by a
// minimum-weight perfect matching under C^MM. Costs are defined for the MMD
// (linear kernel or RBF mixture) and for CORAL. The derivations that make the
// costs cheap are in docs/method.md; every identity used here is checked in
// the tests against the paper's formulas evaluated directly.
//
// Solvers live in the sub-package assign; this package owns the public API
// (match.go, config.go, schedule.go, monitor.go), the plan of a matching
// (plan.go: each stage's path and the sparse path's settings), the two
// stages on the dense path (stage1.go, stage2.go) and on the sparse path,
// for sizes whose cost matrices do not fit (sparse.go, stage1_sparse.go,
// stage2_sparse.go, stage2_sparse_records.go), and the batch schedule. The cost models (internal/cost, built from a Config
// in costs.go), the Matrix and Pair types they read (internal/feat), the
// Gram engine and its SIMD kernels (internal/gram), the RBF mixture
// (internal/rbf), the k-best lists (internal/topk) and the parallel loops
// (internal/par) are internal packages. docs/design.md describes the
// layout.
package psda
