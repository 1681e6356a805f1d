// Package scan finds the first entry of a row that fails a bound: the
// filter of the dense matching's passes over its n×n matrix (package
// assign's tightenWithin, the blossom start's repair, the certificate, the
// input check, and topk's selections), where nearly every entry passes
// and the few that fail are handled one at a time by the caller's own
// scalar code.
//
// Each function evaluates the same IEEE operations as the scalar
// expression it names, in the same order (no fused multiply-add), so an
// entry it reports is exactly one the scalar test would stop at, and a
// caller that resumes after it visits the same entries in the same order
// as its plain loop: the results are the loop's, bit for bit. The bounds
// are stated as !(h >= t) and !(h > t), so a NaN always stops the scan
// and the caller's own test decides what a NaN does. On amd64 with AVX2
// the scans run eight entries at a time in assembly (scan_amd64.s); those
// passes were compute-bound at about one entry per 2.5 cycles in Go, a
// few times below what memory delivers (docs/performance.md).
package scan
