package psda

// Micro-kernel shape: each call updates an mr×nr block of a tile.
const (
	mr = 6
	nr = 8
)
