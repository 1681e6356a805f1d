// Package topk is the one home of psda's k-best keepers. Lists keeps, for
// each of n items, the k entries of smallest value offered to it from
// several goroutines, ties broken by a hash so that tied items keep
// different partners (the sparse path's candidate lists and the pricing
// passes' kept edges, docs/method.md "The sparse exact path"), or by index
// (NewByIndex: the dense warm start's pricing, where ties are cheaper to
// refuse); Max keeps
// the largest value per item (the nearest kernel value behind the float32
// error bounds of the RBF costs). SmallestK, InsertSorted and Columns are
// the sequential, sorted lists of the dense solvers in package assign
// (the auction's bids, the warm start's candidates), whose ties keep the
// earlier index.
package topk
