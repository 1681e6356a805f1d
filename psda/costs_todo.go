package psda

// TEMPORARY stubs with the agreed signatures; see cost.go once it lands.

func stage1Costs(src, tgt Matrix, cfg Config) []float64 { panic("todo") }

func stage2Costs(src, tgt Matrix, cfg Config, pairs []Pair) ([]float64, int) { panic("todo") }
