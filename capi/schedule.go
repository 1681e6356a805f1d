package capi

/*
#include <stdint.h>
*/
import "C"

import (
	"math"

	"github.com/psda-dev/psda/psda"
)

// The epoch schedule of a context's matching (psda_schedule*): C programs
// get the batches from the matching that stays in Go, as Python's sampler
// does, instead of copying the pairs out and cutting batches themselves.

//export psda_schedule
func psda_schedule(h C.uintptr_t, batchSize C.int64_t, seed C.uint64_t, dropLast C.int32_t, numReplicas C.int64_t) C.int {
	return onContext(h, "psda_schedule", func(c *context) *failure {
		c.sched, c.replicas = nil, 0
		m, f := c.result()
		if f != nil {
			return f
		}
		if batchSize < 1 || batchSize > math.MaxInt32 || numReplicas < 1 || numReplicas > math.MaxInt32 {
			return fail(errInvalid, "psda: batch_size = %d, num_replicas = %d: both must be in [1, 2^31)", int64(batchSize), int64(numReplicas))
		}
		s, err := psda.NewSchedule(m, psda.ScheduleConfig{
			BatchSize: int(batchSize), Seed: uint64(seed), DropLast: dropLast != 0, NumReplicas: int(numReplicas),
		})
		if err != nil {
			return fail(errInvalid, "%s", err.Error())
		}
		c.sched, c.replicas = s, int(numReplicas)
		return nil
	})
}

// schedule returns c's schedule.
func (c *context) schedule() (*psda.Schedule, *failure) {
	if c.sched == nil {
		return nil, fail(errNoResult, "psda: no schedule: call psda_schedule after a successful psda_compute_*")
	}
	return c.sched, nil
}

// batch checks that rank and batch index b (b == nb allowed when end) name
// a batch of s.
func (c *context) batch(s *psda.Schedule, rank, b C.int64_t, end bool) *failure {
	nb := int64(s.NumBatches())
	if rank < 0 || int64(rank) >= int64(c.replicas) {
		return fail(errInvalid, "psda: rank = %d: want 0 <= rank < num_replicas = %d", int64(rank), c.replicas)
	}
	hi := nb - 1
	if end {
		hi = nb
	}
	if b < 0 || int64(b) > hi {
		return fail(errInvalid, "psda: batch = %d: want 0 <= batch <= %d (batches per rank and epoch: %d)", int64(b), hi, nb)
	}
	return nil
}

//export psda_schedule_num_batches
func psda_schedule_num_batches(h C.uintptr_t, out *C.int64_t) C.int {
	return onContext(h, "psda_schedule_num_batches", func(c *context) *failure {
		if out == nil {
			return fail(errNull, "psda: out is NULL: pass the address of an int64_t")
		}
		s, f := c.schedule()
		if f != nil {
			return f
		}
		*out = C.int64_t(s.NumBatches())
		return nil
	})
}

//export psda_schedule_batch_len
func psda_schedule_batch_len(h C.uintptr_t, rank, b C.int64_t, out *C.int64_t) C.int {
	return onContext(h, "psda_schedule_batch_len", func(c *context) *failure {
		if out == nil {
			return fail(errNull, "psda: out is NULL: pass the address of an int64_t")
		}
		s, f := c.schedule()
		if f != nil {
			return f
		}
		if f := c.batch(s, rank, b, false); f != nil {
			return f
		}
		*out = C.int64_t(s.BatchLen(int(rank), int(b)))
		return nil
	})
}

//export psda_schedule_fill
func psda_schedule_fill(h C.uintptr_t, epoch C.uint64_t, rank, start C.int64_t, dst *C.int64_t, cap C.int64_t, written *C.int64_t) C.int {
	return onContext(h, "psda_schedule_fill", func(c *context) *failure {
		if written == nil {
			return fail(errNull, "psda: written is NULL: pass the address of an int64_t")
		}
		s, f := c.schedule()
		if f != nil {
			return f
		}
		if f := c.batch(s, rank, start, true); f != nil {
			return f
		}
		need := 0
		for b := int(start); b < s.NumBatches(); b++ {
			need += 2 * s.BatchLen(int(rank), b)
		}
		out, f := output(dst, cap, need, "batches")
		if f != nil {
			return f
		}
		n, err := s.Fill(uint64(epoch), int(rank), int(start), out)
		if err != nil {
			return fail(errInternal, "psda: %s", err.Error())
		}
		*written = C.int64_t(n)
		return nil
	})
}
