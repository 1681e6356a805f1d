package psda

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/psda-dev/psda/psda/assign"
)

// ErrCancelled is returned by Match, wrapped, when its Monitor was cancelled;
// test for it with errors.Is.
var ErrCancelled = errors.New("psda: matching cancelled")

// Phases of a Match, as reported by Monitor.Progress.
const (
	PhaseIdle         = iota // not started
	PhaseStage1Costs         // Stage 1 cost matrix
	PhaseStage1Assign        // Stage 1 assignment
	PhaseStage2Costs         // Stage 2 cost matrix
	PhaseStage2Match         // Stage 2 perfect matching
	PhaseDone                // finished (successfully or not)
)

// ProgressTotal is the value of done in Monitor.Progress when a Match has
// finished: progress is reported in parts per ProgressTotal of the whole.
const ProgressTotal = 1 << 20

// Monitor lets other goroutines follow a running Match and cancel it. Set
// Config.Monitor to use one; the zero value is ready. Its methods are safe
// for concurrent use and cost one atomic operation, so a progress bar may
// poll them as often as it likes. A Monitor follows one Match at a time.
//
// Progress is an estimate: each phase gets a share of ProgressTotal
// proportional to its expected work (from the sizes), and within a phase the
// share fills as cost tiles are computed and rows are assigned. It never
// decreases during a Match and reaches ProgressTotal when Match returns
// successfully.
type Monitor struct {
	done      atomic.Int64
	phase     atomic.Int32
	cancelled atomic.Bool

	// Set by start, read by the goroutines of one Match.
	shares [PhaseDone + 1]float64 // share of each phase, summing to 1
	units  [PhaseDone + 1]float64 // expected work units of each phase
	count  atomic.Int64           // units done in the current phase
	// counted holds, for each phase already left, the units its cost tiles
	// reported: the estimate in units is right when the two agree.
	counted [PhaseDone + 1]int64
}

// Cancel asks the Match that m follows to stop; it returns ErrCancelled soon
// after (Match polls between cost tiles and between augmenting paths). A
// cancel that arrives while no Match runs applies to the next one. Calling
// Cancel on a nil Monitor does nothing.
func (m *Monitor) Cancel() {
	if m != nil {
		m.cancelled.Store(true)
	}
}

// Reset clears a pending cancellation, so that m can follow another Match
// after a cancelled one (or drop a cancel that arrived after a Match
// finished). Match itself resets the progress when it starts.
func (m *Monitor) Reset() { m.cancelled.Store(false) }

// Cancelled reports whether m has a pending cancellation (Cancel since the
// last Reset), for solves outside Match that poll it, such as the C ABI's
// psda_lsap_ctx_f64. A nil Monitor is never cancelled.
func (m *Monitor) Cancelled() bool { return m != nil && m.cancelled.Load() }

// Progress returns the work done in parts per ProgressTotal and the current
// phase (one of the Phase constants).
func (m *Monitor) Progress() (done int64, phase int) {
	return m.done.Load(), int(m.phase.Load())
}

// MirrorEvery is how often Mirror copies the progress into its view.
const MirrorEvery = 20 * time.Millisecond

// Mirror copies m's progress into view, {done, ProgressTotal, phase}, every
// MirrorEvery until the returned stop is called, and once more then. view is
// memory a foreign caller polls without calling into Go (the C ABI's
// psda_progress_view, the Python package's progress bar): a call into Go
// from a thread that is not Go's waits for a core the Match keeps busy, so
// polling Progress through such calls slows the Match down. Each value is
// written with one atomic store; view must stay valid until stop returns.
func (m *Monitor) Mirror(view *[3]int64) (stop func()) {
	atomic.StoreInt64(&view[1], ProgressTotal)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// A panic in a goroutine of its own would end the host program; the
		// view is a convenience, so a failure to publish is dropped.
		defer func() { _ = recover() }()
		t := time.NewTicker(MirrorEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				m.publish(view)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		m.publish(view)
	}
}

// publish copies m's progress into view, one atomic store a field.
func (m *Monitor) publish(view *[3]int64) {
	d, ph := m.Progress()
	atomic.StoreInt64(&view[0], d)
	atomic.StoreInt64(&view[2], int64(ph))
}

// err returns ErrCancelled once m was cancelled; nil for a nil Monitor.
func (m *Monitor) err() error {
	if m != nil && m.cancelled.Load() {
		return ErrCancelled
	}
	return nil
}

// start estimates the work of each phase of a Match with these sizes (in
// multiply-adds), sparse1 and sparse2 telling which stages run on the
// sparse path, factored whether Stage 2 takes the factored RBF model
// (plan.factored) and kept whether Stage 1 keeps its cross kernel for
// Stage 2 (plan.keepCross), and resets the progress, keeping a pending
// cancellation. The cost phases' estimates count the entries of each cost
// model's Gram passes, as its tiles report them (TestMonitorCostEstimate
// holds the two together).
func (m *Monitor) start(ns, nt, d int, cfg Config, sparse1, sparse2, factored, kept bool) {
	if m == nil {
		return
	}
	// Weights measured at n = 3000 and 15000, d = 64 and 512 (RBF): an
	// entry of a cost matrix costs about d + 40 multiply-adds (the kernel's
	// exps), and an exact assignment about 1000 per matrix entry. They only
	// shape the progress bar; errors show up as a faster or slower phase.
	p, fd := float64(max(ns, nt)), float64(d)+40
	fs, ft := float64(ns), float64(nt)
	m.units = [PhaseDone + 1]float64{}
	m.counted = [PhaseDone + 1]int64{}
	m.units[PhaseStage1Costs] = fs * ft * fd
	rbf := cfg.Discrepancy == MMD && cfg.Kernel == RBF
	small := math.Min(fs, ft)
	selfSums := 0.0 // the RBF mixture's self-kernel sums (Stage 1's terms)
	switch {
	case rbf && cfg.Stages == 1:
		selfSums = (fs*fs + ft*ft) / 2 * fd
	case rbf && ns != nt: // the larger side's self sums wait for Stage 2 (Matching.sumsPending)
		selfSums = small * small / 2 * fd
	}
	const assignWork = 1000
	m.units[PhaseStage1Assign] = assignWork * fs * ft
	if cfg.Stages == 2 {
		switch {
		case cfg.Discrepancy == CORAL: // pairs' a, b against the block's (depth d), then F a, F b (depth 2d)
			m.units[PhaseStage2Costs] = 2*p*p*fd + p*p/2*(fd+float64(d))
		case !rbf: // the linear kernel: the pairs' difference vectors
			m.units[PhaseStage2Costs] = p * p / 2 * fd
		case factored: // the larger side, the smaller, the table
			m.units[PhaseStage2Costs] = (p*p/2 + small*small/2) * fd
			if !kept {
				m.units[PhaseStage2Costs] += p * small * fd
			}
		default: // the 2P paired vectors (with the cross kernel kept, its tiles still count)
			m.units[PhaseStage2Costs] = 2 * p * p * fd
		}
		m.units[PhaseStage2Match] = assignWork * p * p
	}
	// The sparse path (sparse.go) counts the tiles of its candidate pass as
	// costs and those of its pricing passes, about one in all (none on
	// Gaussian data, two on clustered data), as the assignment.
	// The dense path takes the self sums with its costs; the sparse one
	// when its pricing first asks for the terms, in the assignment phase.
	if sparse1 {
		m.units[PhaseStage1Assign] = fs*ft*fd + selfSums
	} else {
		m.units[PhaseStage1Costs] += selfSums
	}
	if sparse2 {
		m.units[PhaseStage2Match] = m.units[PhaseStage2Costs]
	}
	total := 0.0
	for _, u := range m.units {
		total += u
	}
	for i, u := range m.units {
		m.shares[i] = u / total
	}
	m.done.Store(0)
	m.count.Store(0)
	m.phase.Store(PhaseIdle)
}

// enter starts phase ph: the progress jumps to the sum of the shares before it.
func (m *Monitor) enter(ph int) {
	if m == nil {
		return
	}
	if prev := m.phase.Load(); prev > PhaseIdle && prev < PhaseDone {
		m.counted[prev] = m.count.Load()
	}
	m.count.Store(0)
	m.phase.Store(int32(ph))
	m.set(ph, 0)
}

// finish marks the whole Match done.
func (m *Monitor) finish() {
	if m == nil {
		return
	}
	m.phase.Store(PhaseDone)
	m.raise(ProgressTotal)
}

// set records that the fraction frac of phase ph is done.
func (m *Monitor) set(ph int, frac float64) {
	base := 0.0
	for i := 0; i < ph; i++ {
		base += m.shares[i]
	}
	v := base + m.shares[ph]*min(1, max(0, frac))
	m.raise(int64(math.Floor(v * ProgressTotal)))
}

// raise sets done to v unless it is already larger (progress never goes back).
func (m *Monitor) raise(v int64) {
	for {
		old := m.done.Load()
		if v <= old || m.done.CompareAndSwap(old, v) {
			return
		}
	}
}

// addTile records a computed cost tile of ni×nj entries of depth d in the
// current phase; safe from several goroutines.
func (m *Monitor) addTile(ni, nj, d int) {
	if m == nil {
		return
	}
	ph := int(m.phase.Load())
	c := m.count.Add(int64(ni) * int64(nj) * int64(d+40))
	if u := m.units[ph]; u > 0 {
		m.set(ph, float64(c)/u)
	}
}

// hooks returns the assign.Hooks that stop a solve on cancellation and report
// its progress as phase ph.
func (m *Monitor) hooks(ph int) *assign.Hooks {
	if m == nil {
		return nil
	}
	return &assign.Hooks{
		Stop:     m.err,
		Progress: func(f float64) { m.set(ph, f) },
	}
}

// progress adapts a Monitor (nil: none) to the Gram engine's Progress, for
// the cost models' passes.
type progress struct{ m *Monitor }

func (p progress) Err() error            { return p.m.err() }
func (p progress) AddTile(ni, nj, d int) { p.m.addTile(ni, nj, d) }
