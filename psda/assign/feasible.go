package assign

// hasForbidden reports whether the row-major nr×nc matrix c has a +Inf
// (forbidden) entry, by a pass split over the cores.
func hasForbidden(c []float64, nr, nc int) bool {
	return firstFailing(nr, nc, func(i0, i1 int) int {
		for k, x := range c[i0*nc : i1*nc] {
			if x == inf {
				return i0 + k/nc
			}
		}
		return -1
	}) >= 0
}

// hasPerfectMatching reports whether the finite entries of the row-major
// n×n matrix c contain a perfect matching (rows to columns). solveLSAP asks
// before an auction, which on an infeasible problem raises prices forever
// (Bertsekas 1988 assumes a feasible problem); the exact paths would find
// the infeasibility themselves, but only after a dense search per row.
//
// It is Kuhn's augmenting-path algorithm after a greedy start, run in rounds
// that share one visited mark per column (as Hopcroft–Karp's phases do) until
// a round augments no row. Such a round leaves the matching unchanged, so a
// column marked in it leads to no free column from any row: no augmenting
// path exists and the matching is maximum. The time complexity is
// O(n³) in the worst case and O(n²) when the greedy start leaves few rows,
// as it does on the diagonal-forbidden matrices of psda's Stage 2.
func hasPerfectMatching(c []float64, n int) bool {
	col4row, row4col := make([]int, n), make([]int, n)
	for j := range row4col {
		row4col[j] = -1
	}
	var free []int
	for i := 0; i < n; i++ {
		col4row[i] = -1
		for j, x := range c[i*n : i*n+n] {
			if x < inf && row4col[j] < 0 {
				col4row[i], row4col[j] = j, i
				break
			}
		}
		if col4row[i] < 0 {
			free = append(free, i)
		}
	}
	seen := make([]int, n) // round in which column j was visited, +1
	next := make([]int, n) // per row on the stack: the next column to try
	stack := make([]int, 0, n)
	for round := 1; len(free) > 0; round++ {
		left := free[:0]
		progress := false
		for _, r := range free {
			if augmentKuhn(c, n, r, round, col4row, row4col, seen, next, stack) {
				progress = true
			} else {
				left = append(left, r)
			}
		}
		if !progress {
			return false
		}
		free = left
	}
	return true
}

// augmentKuhn searches depth-first, without recursion, for an alternating
// path from the free row r to a free column through finite entries and
// columns not yet seen in this round, and flips it when found.
func augmentKuhn(c []float64, n, r, round int, col4row, row4col, seen, next, stack []int) bool {
	stack = append(stack[:0], r)
	next[r] = 0
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		row := c[i*n : i*n+n]
		j := next[i]
		for ; j < n; j++ {
			if row[j] < inf && seen[j] != round {
				break
			}
		}
		next[i] = j + 1
		if j == n {
			stack = stack[:len(stack)-1]
			continue
		}
		seen[j] = round
		if k := row4col[j]; k >= 0 {
			next[k] = 0
			stack = append(stack, k)
			continue
		}
		// Free column: flip the path, whose rows are the stack and whose
		// columns are each row's last tried one.
		for t := len(stack) - 1; t >= 0; t-- {
			i := stack[t]
			jj := next[i] - 1
			col4row[i], row4col[jj] = jj, i
		}
		return true
	}
	return false
}
