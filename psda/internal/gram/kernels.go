package gram

// Micro-kernel shape: each call updates an mr×nr block of a tile (mr×nr32
// for gram32's float32 kernel).
const (
	mr   = 6
	nr   = 8
	nr32 = 16
)
