// Package par holds psda's parallel-for loops: For hands indices to the
// workers as they free up (the Gram engine's tiles, whose costs vary), Rows
// does the same with chunks of rows (the cheap, memory-bound passes that
// finish a cost matrix), and Parts splits rows into one contiguous part
// per core (the dense warm start's passes, whose parts are merged
// in part order). Every loop runs at most Workers() goroutines at once:
// GOMAXPROCS, or the count set by SetWorkers, the one thread setting of
// psda.
package par
