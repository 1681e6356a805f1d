// Package assign holds exact solvers for the combinatorial problems behind
// PSDA: the dense rectangular linear assignment problem with dual potentials
// and an optimality certificate, its imbalanced (evenly spread) variant, and
// minimum-weight perfect matching on a complete graph via the symmetric
// assignment relaxation.
package assign
