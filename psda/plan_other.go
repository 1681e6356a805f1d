//go:build !unix

package psda

// addressSpaceRoom reports no address-space limit where there is no
// RLIMIT_AS.
func addressSpaceRoom() (int64, bool) { return 0, false }
