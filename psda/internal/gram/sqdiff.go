package gram

// SqDiffsGeneric returns Σ_k (x[k] − y[k])² in float64, summed in eight
// lanes (k mod 8) that are folded pairwise, the order of the AVX2 kernels;
// the conversions keep the compiler from fusing into FMAs, which those
// kernels do not use either.
func SqDiffsGeneric[T float32 | float64](x, y []T) float64 {
	n8 := len(x) &^ 7
	y = y[:len(x)]
	var s8 [8]float64
	for k := 0; k < n8; k += 8 {
		for l := range s8 {
			t := float64(x[k+l]) - float64(y[k+l])
			s8[l] += float64(t * t)
		}
	}
	var s [4]float64
	for l := range s {
		s[l] = s8[l] + s8[l+4]
	}
	return foldSqDiffs(s, x[n8:], y[n8:])
}

// foldSqDiffs adds the four lane sums s pairwise and then the tail's
// squared differences.
func foldSqDiffs[T float32 | float64](s [4]float64, x, y []T) float64 {
	tail := 0.0
	for k := range x {
		t := float64(x[k]) - float64(y[k])
		tail += float64(t * t)
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + tail
}
