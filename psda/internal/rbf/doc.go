// Package rbf evaluates the RBF mixture kernel κ(D) = Σ_γ exp(−γ·D) of the
// paper's MMD costs on rows of squared distances, exactly (Row, Eval) or
// within a stated bound for float32 passes (Row32, ChainErr32), with the
// AVX-512 and AVX2 exp and power kernels behind it, bit-identical to each
// other and chosen by the Gram engine's active path (gram.ActivePath), and
// portable fallbacks without AVX2 or with the noasm tag. docs/method.md ("Cost computation") derives where
// the mixture enters the costs.
package rbf
