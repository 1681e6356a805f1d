// Package topk keeps, for each of n items, the k entries of smallest value
// offered to it from several goroutines (Lists: the sparse path's candidate
// lists and the pricing passes' kept edges, docs/design.md "The sparse
// exact path"), and the largest value per item (Max: the nearest kernel
// value behind the float32 error bounds of the RBF costs).
package topk
