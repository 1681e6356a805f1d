// Package rbf evaluates the RBF mixture kernel κ(D) = Σ_γ exp(−γ·D) of the
// paper's MMD costs on rows of squared distances, exactly (Row, Eval) or
// within a stated bound for float32 passes (Row32, ChainErr32), with the
// AVX2 exp and power kernels behind it (portable fallbacks without AVX2 or
// with the noasm tag). docs/method.md ("Cost computation") derives where
// the mixture enters the costs.
package rbf
