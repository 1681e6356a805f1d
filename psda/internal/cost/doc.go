// Package cost computes the paper's cost matrices (section "Cost
// computation"): Stage 1's C^st (n_s×n_t) and Stage 2's C^MM (pairs×pairs),
// for the MMD with a linear or RBF-mixture kernel and for CORAL. Every
// entry is the full conditional expected error E[‖D̂ − D‖² | …], with all
// constant, row and column terms, so that sums of entries are the
// objective reported to users. The identities used are derived in
// docs/method.md and checked in cost_test.go against the paper's formulas
// evaluated directly (internal/testref).
//
// Each discrepancy is a model of each stage (linear1, rbf1 and coral1;
// linear2, rbf2, rbf2Factored and coral2: linear.go, rbf.go, coral.go, with
// rbf2Factored, the RBF Stage 2 of imbalanced pairs, in rbf2_factored.go,
// the cross kernel a balanced RBF Stage 2 takes from Stage 1 in cross.go,
// and CORAL's weighted covariance in coral_form.go) behind one split, Stage1
// and Stage2 (cost.go): an entry is a row term plus a column term plus a
// cross part, and only the cross part needs a Gram pass (internal/gram)
// over all entries. Package psda's dense stages store the pass (Dense);
// its sparse stages keep a few entries per row and run passes again over
// some rows or columns (Scope) to price the rest, in float32 where the
// model bounds the error of such a pass (float32.go).
//
// Precision: float64 throughout (internal/gram); float32 input is
// converted one vector at a time (vectors.go).
package cost
