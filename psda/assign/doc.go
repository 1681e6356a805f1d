// Package assign holds exact solvers for the combinatorial problems behind
// PSDA: the dense rectangular linear assignment problem with dual potentials
// and an optimality certificate, its imbalanced (evenly spread) variant, and
// exact minimum-weight perfect matching (the weighted blossom algorithm,
// warm-started from the symmetric assignment relaxation) with a dual
// certificate, and a sparse square assignment solver for graphs too large to
// store densely.
//
// How the pieces fit:
//
//	Rectangular  (lsap.go)       shortest augmenting paths (Crouse 2016),
//	                             +Inf forbidden; square problems whose paths
//	                             grow long restart from warm.go or auction.go
//	                             (after feasible.go's perfect-matching check)
//	Imbalanced   (imbalanced.go) implicit column copies: auction warm start
//	                             on columns, then exact augmenting paths
//	Certify      (certify.go)    LP duality check, O(nr·nc), for both
//	MinWeightPerfectMatching     symmetric assignment with a forbidden
//	             (matching.go)   diagonal, whose halved duals and tight cycle
//	                             edges (RelaxationStart) start the blossom
//	                             algorithm; MinWeightPerfectMatchingMirrored
//	             (matching_mirrored.go) for costs symmetric by construction
//	BlossomDense, BlossomSparse  Edmonds' weighted blossom algorithm in
//	             (blossom.go)    Galil's organisation, dense or on an edge list
//	CertifyMatching(Graph)       vertex and blossom duals checked against
//	             (certify_matching.go) every edge
//	SolveSparse  (sparse.go)     sparse square assignment: auction warm start,
//	                             heap Dijkstra paths; ResolveSparse restarts
//	                             from a solution by paths alone
//	Pricing      (pricing.go)    the pricing loop: solve on candidate Edges,
//	                             price against every dense edge through a
//	                             PricedModel, add violators, re-solve; psda's
//	                             sparse stages run it to the certificate, the
//	                             Rectangular warm start (warm.go) for a few
//	                             passes on the dense matrix
//	Hooks        (hooks.go)      progress and cancellation for the *With
//	                             variants (RectangularWith, ImbalancedWith,
//	                             MinWeightPerfectMatchingWith, and
//	                             MinWeightPerfectMatchingMirrored)
//
// The auctions only warm-start: the potentials they leave are made feasible,
// only exactly tight assigned entries are kept, and augmenting paths finish,
// so every Solution is exact and carries potentials that Certify accepts.
package assign
