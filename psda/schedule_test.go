package psda

import (
	"slices"
	"testing"
)

// testMatching builds a matching of p pairs (pair r = (r, p-1-r)) whose units
// are quadruplets of consecutive pairs plus, for odd p, one single.
func testMatching(p int, quads bool) *Matching {
	m := &Matching{}
	for r := 0; r < p; r++ {
		m.Pairs = append(m.Pairs, Pair{S: r, T: p - 1 - r})
	}
	r := 0
	if quads {
		for ; r+1 < p; r += 2 {
			m.Quads = append(m.Quads, [2]int{r, r + 1})
		}
	}
	for ; r < p; r++ {
		m.Singles = append(m.Singles, r)
	}
	return m
}

// batches returns rank's epoch as a list of batches of pair indices
// (recovered from the source index, which equals the pair index here).
func batches(t *testing.T, s *Schedule, epoch uint64, rank, start int) [][]Pair {
	t.Helper()
	dst := make([]int64, 2*len(s.pairs)*2+8)
	n, err := s.Fill(epoch, rank, start, dst)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]Pair
	w := 0
	for b := start; b < s.NumBatches(); b++ {
		l := s.BatchLen(rank, b)
		batch := make([]Pair, l)
		for i := range batch {
			batch[i] = Pair{S: int(dst[w+i]), T: int(dst[w+l+i])}
		}
		out = append(out, batch)
		w += 2 * l
	}
	if w != n {
		t.Fatalf("Fill wrote %d values, batch lengths add up to %d", n, w)
	}
	return out
}

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p, k     int
		quads    bool
		dropLast bool
	}{
		{"pairs exact", 12, 3, false, true},
		{"pairs drop", 13, 4, false, true},
		{"pairs short last", 13, 4, false, false},
		{"quads exact", 16, 4, true, true},
		{"quads odd drop", 17, 4, true, true},
		{"quads odd short", 17, 4, true, false},
		{"one batch", 5, 5, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMatching(tc.p, tc.quads)
			s, err := NewSchedule(m, ScheduleConfig{BatchSize: tc.k, Seed: 7, DropLast: tc.dropLast, NumReplicas: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.p / tc.k
			if !tc.dropLast && tc.p%tc.k != 0 {
				want++
			}
			if s.NumBatches() != want {
				t.Fatalf("NumBatches = %d, want %d", s.NumBatches(), want)
			}
			ep := batches(t, s, 3, 0, 0)
			seen := map[Pair]int{}
			for b, batch := range ep {
				if b < len(ep)-1 || tc.dropLast || tc.p%tc.k == 0 {
					if len(batch) != tc.k {
						t.Fatalf("batch %d has %d pairs, want %d", b, len(batch), tc.k)
					}
				}
				for i, pr := range batch {
					if pr != m.Pairs[pr.S] {
						t.Fatalf("batch %d position %d holds %v, which is not a pair of the matching", b, i, pr)
					}
					seen[pr]++
					if tc.quads && i%2 == 0 && i+1 < len(batch) {
						// A quadruplet is (2m, 2m+1) pairs of consecutive indices here.
						if q := batch[i+1]; pr.S%2 != 0 || q.S != pr.S+1 {
							if !(pr.S == tc.p-1 && tc.p%2 == 1) {
								t.Fatalf("batch %d positions %d,%d hold pairs %d,%d: not a quadruplet", b, i, i+1, pr.S, q.S)
							}
						}
					}
				}
			}
			used := len(ep) * tc.k
			if !tc.dropLast {
				used = tc.p
			}
			if len(seen) != used {
				t.Fatalf("%d distinct pairs used, want %d", len(seen), used)
			}
			for pr, c := range seen {
				if c != 1 {
					t.Fatalf("pair %v used %d times in one epoch", pr, c)
				}
			}
			if !slices.EqualFunc(ep, batches(t, s, 3, 0, 0), slices.Equal) {
				t.Fatal("same seed and epoch gave different batches")
			}
			if tc.p/tc.k > 1 && slices.EqualFunc(ep, batches(t, s, 4, 0, 0), slices.Equal) {
				t.Fatal("epochs 3 and 4 gave identical batches")
			}
			for b := 0; b <= len(ep); b++ {
				if tail := batches(t, s, 3, 0, b); !slices.EqualFunc(tail, ep[b:], slices.Equal) {
					t.Fatalf("resuming at batch %d does not give the tail of the epoch", b)
				}
			}
		})
	}
}

func TestScheduleShards(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p, k, r  int
		quads    bool
		dropLast bool
	}{
		{"even split", 24, 3, 2, false, true},
		{"even split quads", 32, 4, 4, true, true},
		{"uneven drop", 30, 3, 4, false, true},
		{"uneven pad", 30, 3, 4, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMatching(tc.p, tc.quads)
			cfg := ScheduleConfig{BatchSize: tc.k, Seed: 1, DropLast: tc.dropLast, NumReplicas: 1}
			single, err := NewSchedule(m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			whole := batches(t, single, 0, 0, 0)
			cfg.NumReplicas = tc.r
			s, err := NewSchedule(m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var union [][]Pair
			for rank := 0; rank < tc.r; rank++ {
				shard := batches(t, s, 0, rank, 0)
				if len(shard) != s.NumBatches() {
					t.Fatalf("rank %d has %d batches, want %d", rank, len(shard), s.NumBatches())
				}
				union = append(union, shard...)
			}
			count := map[int]int{}
			for _, b := range union {
				idx := slices.IndexFunc(whole, func(w []Pair) bool { return slices.Equal(w, b) })
				if idx < 0 {
					t.Fatalf("shard batch %v is not a batch of the single-rank epoch", b)
				}
				count[idx]++
			}
			if tc.dropLast {
				if len(count) != len(union) {
					t.Fatal("shards are not disjoint")
				}
				if want := len(whole) / tc.r * tc.r; len(union) != want {
					t.Fatalf("shards hold %d batches, want %d", len(union), want)
				}
			} else if len(count) != len(whole) {
				t.Fatalf("padded shards cover %d of %d batches", len(count), len(whole))
			}
		})
	}
}

func TestScheduleErrors(t *testing.T) {
	m := testMatching(8, true)
	for _, tc := range []struct {
		name string
		m    *Matching
		cfg  ScheduleConfig
	}{
		{"k zero", m, ScheduleConfig{BatchSize: 0, NumReplicas: 1}},
		{"replicas zero", m, ScheduleConfig{BatchSize: 2, NumReplicas: 0}},
		{"odd k with quads", m, ScheduleConfig{BatchSize: 3, NumReplicas: 1}},
		{"too few batches", m, ScheduleConfig{BatchSize: 4, NumReplicas: 3, DropLast: true}},
		{"k above pairs", m, ScheduleConfig{BatchSize: 10, NumReplicas: 1, DropLast: true}},
		{"pair twice", &Matching{Pairs: m.Pairs, Quads: [][2]int{{0, 1}, {1, 2}}}, ScheduleConfig{BatchSize: 2, NumReplicas: 1}},
		{"pair missing", &Matching{Pairs: m.Pairs, Singles: []int{0}}, ScheduleConfig{BatchSize: 1, NumReplicas: 1}},
		{"pair out of range", &Matching{Pairs: m.Pairs[:1], Singles: []int{3}}, ScheduleConfig{BatchSize: 1, NumReplicas: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSchedule(tc.m, tc.cfg); err == nil {
				t.Fatal("no error")
			}
		})
	}
	s, err := NewSchedule(m, ScheduleConfig{BatchSize: 2, NumReplicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fill(0, 2, 0, make([]int64, 100)); err == nil {
		t.Fatal("rank out of range accepted")
	}
	if _, err := s.Fill(0, 0, 5, make([]int64, 100)); err == nil {
		t.Fatal("start beyond the epoch accepted")
	}
	if _, err := s.Fill(0, 0, 0, make([]int64, 3)); err == nil {
		t.Fatal("short buffer accepted")
	}
}
