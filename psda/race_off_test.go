//go:build !race

package psda

// raceEnabled reports a -race build, whose tests run fewer iterations.
const raceEnabled = false
