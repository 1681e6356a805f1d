package psda

import (
	"fmt"
	"math/rand/v2"
)

// ScheduleConfig controls how a Matching is cut into minibatches.
type ScheduleConfig struct {
	BatchSize   int    // pairs per batch: k source and k target indices
	Seed        uint64 // with the epoch number, seeds the shuffle
	DropLast    bool   // drop the final short batch (and batches that cannot be shared evenly over replicas)
	NumReplicas int    // ranks sharing the epoch; every rank gets the same number of batches
}

// Schedule turns a Matching into the epoch's batches. The units of the
// shuffle are the matching's quadruplets and single pairs: a quadruplet's two
// pairs always sit at positions 2m and 2m+1 of a batch. Quadruplets are
// shuffled first and single pairs follow (with Stages = 2 there is at most
// one), which keeps every quadruplet aligned because the batch size is even.
// A Schedule is immutable and safe for concurrent use.
type Schedule struct {
	cfg     ScheduleConfig
	pairs   []Pair
	quads   [][2]int
	singles []int
	total   int // batches per epoch over all ranks, before sharding
}

// NewSchedule validates m's units against its pairs (every pair in exactly
// one quadruplet or single) and returns the schedule. It returns an error when
// the configuration cannot give every rank at least one batch.
func NewSchedule(m *Matching, cfg ScheduleConfig) (*Schedule, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("psda: batch_size = %d: must be >= 1", cfg.BatchSize)
	}
	if cfg.NumReplicas < 1 {
		return nil, fmt.Errorf("psda: num_replicas = %d: must be >= 1", cfg.NumReplicas)
	}
	if len(m.Quads) > 0 && cfg.BatchSize%2 != 0 {
		return nil, fmt.Errorf("psda: batch_size = %d with quadruplets: must be even so quadruplets stay whole", cfg.BatchSize)
	}
	if err := m.checkUnits(); err != nil {
		return nil, err
	}
	p := len(m.Pairs)
	s := &Schedule{cfg: cfg, pairs: m.Pairs, quads: m.Quads, singles: m.Singles}
	s.total, _ = BatchesPerRank(p, cfg)
	if err := cfg.check(p, 1, len(m.Quads) > 0); err != nil {
		return nil, err
	}
	return s, nil
}

// BatchesPerRank returns how many batches pairs pairs make per epoch over
// all ranks (total) and for each rank (perRank), as a Schedule with cfg
// serves them; cfg.BatchSize and cfg.NumReplicas must be >= 1. It is the
// one home of this count: the Python samplers ask it too. With DropLast the
// short batch and the batches that cannot be shared evenly are dropped;
// otherwise ranks short of a batch repeat batches from the start of the
// epoch, as torch's DistributedSampler pads. Time O(1).
func BatchesPerRank(pairs int, cfg ScheduleConfig) (total, perRank int) {
	k, r := cfg.BatchSize, cfg.NumReplicas
	if cfg.DropLast {
		total = pairs / k
		return total, total / r
	}
	total = (pairs + k - 1) / k
	return total, (total + r - 1) / r
}

// CheckFor reports whether cfg gives every rank at least one batch of the
// pairs = max(n_source, n_target) pairs of a matching computed with
// matching, before that matching is computed, with a message that names the
// largest batch_size that would (even with two stages, at least 2 for CORAL)
// or the most replicas. The Python sampler calls it to fail before the work.
// Time O(1).
func (cfg ScheduleConfig) CheckFor(pairs int, matching Config) error {
	minBatch := 1
	if matching.Discrepancy == CORAL || matching.Stages == 2 {
		minBatch = 2
	}
	return cfg.check(pairs, minBatch, matching.Stages == 2)
}

// check is CheckFor for a batch size of at least minBatch, even if even.
func (cfg ScheduleConfig) check(pairs, minBatch int, even bool) error {
	if cfg.BatchSize < 1 {
		return fmt.Errorf("psda: batch_size = %d: must be >= 1", cfg.BatchSize)
	}
	if cfg.NumReplicas < 1 {
		return fmt.Errorf("psda: num_replicas = %d: must be >= 1", cfg.NumReplicas)
	}
	total, perRank := BatchesPerRank(pairs, cfg)
	if perRank >= 1 {
		return nil
	}
	r := cfg.NumReplicas
	kMax := pairs / r
	if even {
		kMax -= kMax % 2
	}
	fix := fmt.Sprintf("num_replicas <= %d", total)
	if kMax >= minBatch {
		fix = fmt.Sprintf("batch_size <= %d", kMax)
	}
	if !cfg.DropLast {
		return fmt.Errorf("psda: batch_size = %d with num_replicas = %d: %d pairs make %d batch(es), fewer than one per rank: use %s",
			cfg.BatchSize, r, pairs, total, fix)
	}
	return fmt.Errorf("psda: batch_size = %d with num_replicas = %d and drop_last=True: %d pairs make %d full batch(es), "+
		"fewer than one per rank: use %s, or drop_last=False", cfg.BatchSize, r, pairs, total, fix)
}

// NumBatches returns the number of batches each rank gets per epoch. With
// DropLast the batches that cannot be shared evenly are dropped; otherwise
// ranks short of a batch repeat batches from the start of the epoch, as
// torch's DistributedSampler pads.
func (s *Schedule) NumBatches() int {
	_, perRank := BatchesPerRank(len(s.pairs), s.cfg)
	return perRank
}

// global returns the index, in the single-rank epoch, of batch b of rank.
// Ranks interleave (rank, rank+R, ...), like DistributedSampler.
func (s *Schedule) global(rank, b int) int {
	return (b*s.cfg.NumReplicas + rank) % s.total
}

// BatchLen returns the number of pairs in batch b of rank: BatchSize, except
// for the final short batch when DropLast is false.
func (s *Schedule) BatchLen(rank, b int) int {
	g := s.global(rank, b)
	return min(s.cfg.BatchSize, len(s.pairs)-g*s.cfg.BatchSize)
}

// order returns the epoch's sequence of pair indices: shuffled quadruplets
// (each contributing its two pairs in a row), then shuffled single pairs.
// The PRNG (PCG seeded with Seed and epoch) is the same on every platform and
// rank, so all ranks see one order.
func (s *Schedule) order(epoch uint64) []int {
	rng := rand.New(rand.NewPCG(s.cfg.Seed, epoch))
	out := make([]int, 0, len(s.pairs))
	for _, u := range rng.Perm(len(s.quads)) {
		out = append(out, s.quads[u][0], s.quads[u][1])
	}
	for _, u := range rng.Perm(len(s.singles)) {
		out = append(out, s.singles[u])
	}
	return out
}

// Fill writes batches start, start+1, ..., NumBatches()-1 of rank for the
// given epoch into dst and returns how many values it wrote. Each batch of
// length L takes 2L values: its L source indices, then the L target indices of
// the same pairs in the same order. dst must hold at least that many values.
// Time O(P) for the shuffle plus the output.
func (s *Schedule) Fill(epoch uint64, rank, start int, dst []int64) (int, error) {
	nb := s.NumBatches()
	if rank < 0 || rank >= s.cfg.NumReplicas {
		return 0, fmt.Errorf("psda: rank = %d: want 0 <= rank < num_replicas = %d", rank, s.cfg.NumReplicas)
	}
	if start < 0 || start > nb {
		return 0, fmt.Errorf("psda: start batch = %d: want 0 <= start <= %d batches per epoch", start, nb)
	}
	need := 0
	for b := start; b < nb; b++ {
		need += 2 * s.BatchLen(rank, b)
	}
	if len(dst) < need {
		return 0, fmt.Errorf("psda: output buffer holds %d values, need %d", len(dst), need)
	}
	order := s.order(epoch)
	k, w := s.cfg.BatchSize, 0
	for b := start; b < nb; b++ {
		g := s.global(rank, b)
		batch := order[g*k : g*k+s.BatchLen(rank, b)]
		for i, r := range batch {
			dst[w+i] = int64(s.pairs[r].S)
			dst[w+len(batch)+i] = int64(s.pairs[r].T)
		}
		w += 2 * len(batch)
	}
	return w, nil
}
