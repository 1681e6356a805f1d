package topk

import (
	"math"
	"sync"
)

// Lists keeps, for each of n items, the k (value, index, aux) entries with
// the smallest values offered so far (ties broken by a key of the index,
// see key, so that the result does not depend on the order of the offers).
// For k <= sortedK an item's list is kept sorted by insertion and its worst
// entry is the bound once it is full. For larger k, offers better than the
// item's bound are appended to a buffer of room = 3k/2 entries; a full
// buffer is cut back to its k best (cut), whose worst becomes the bound,
// and settling an item (Settle, and every reader below) cuts it to k. A
// max-heap per item, sifted at every offer, costs O(log k) per accepted
// offer where the buffer costs O(1) plus an expected O(room) cut every k/2
// accepted offers; in Stage 1's candidate pass the buffer measured faster
// than the heap (docs/performance.md, "Design decisions and the
// measurements behind them"). How the lists' remaining cost splits between
// the offers and the column lists' memory, touched at random, was not
// measured.
type Lists struct {
	k, room int
	val     []float64
	Aux     []float64 // Aux[t], Idx[t]: entry t (see Entries)
	Idx     []int32
	cnt     []int32
	// bv and bk: the value and tie key (key) of the worst entry kept at
	// the last cut, or of a full sorted list (bv +Inf before): an offer
	// must beat it. The key is
	// kept rather than the index so that an offer tying the bound, which
	// on tie-heavy costs is nearly every offer, costs one hash.
	bv []float64
	bk []uint64
	mu []sync.Mutex // one per lockBlock items
	// byIndex: ties keep the smaller index (NewByIndex) instead of the
	// smaller tieKey.
	byIndex bool
}

// sortedK is the largest k whose lists are kept sorted by insertion
// (room = k): for few entries the shifts cost less than the buffer's cuts,
// and the bound tightens at every entry instead of every k/2
// (BenchmarkRowSink).
const sortedK = 16

// LockBlock is the number of items that share a lock.
const LockBlock = 64

// New returns lists of k >= 1 entries for n items whose ties keep the
// entries of smaller tieKey: items with tied values (duplicated feature
// rows) then keep different tied partners, so that their candidates can
// form a matching.
func New(n, k int) *Lists { return newLists(n, k, false) }

// NewByIndex returns lists of k >= 1 entries for n items whose ties keep
// the smaller index. On tie-heavy values an offer tying the bound then
// costs a comparison instead of a hash, and when an item's offers come in
// index order it never enters the list; but tied items keep the same
// partners. That is a speed trade-off for the dense warm start, whose
// candidates break ties this way too and whose correctness rests on the
// exact phase: duplicated rows there only make it give up sooner.
func NewByIndex(n, k int) *Lists { return newLists(n, k, true) }

// Bytes returns the bytes New and NewByIndex allocate for n items of k
// entries, so that a caller can count them before it runs.
func Bytes(n, k int) int64 {
	return int64(n)*int64(roomFor(k))*(8+8+4) + int64(n)*(4+8+8) + int64((n+LockBlock-1)/LockBlock)*8
}

// roomFor returns the entries an item's buffer holds for lists of k.
func roomFor(k int) int {
	if k <= sortedK {
		return k
	}
	return k + max(k/2, 1)
}

func newLists(n, k int, byIndex bool) *Lists {
	room := roomFor(k)
	s := &Lists{k: k, room: room, val: make([]float64, n*room), Aux: make([]float64, n*room), Idx: make([]int32, n*room),
		cnt: make([]int32, n), bv: make([]float64, n), bk: make([]uint64, n), mu: make([]sync.Mutex, (n+LockBlock-1)/LockBlock),
		byIndex: byIndex}
	for i := range s.bv {
		s.Reset(i)
	}
	return s
}

// Bound returns a value that every entry item i does not hold is at least:
// the worst kept at its last cut, or in its full sorted list (+Inf
// before). Cheap, for the passes' sinks, under i's lock.
func (s *Lists) Bound(i int) float64 { return s.bv[i] }

// worse orders the entries of item i by value, then by key.
func (s *Lists) worse(i int, a float64, ai int32, b float64, bi int32) bool {
	return a > b || (a == b && s.key(i, ai) > s.key(i, bi))
}

// key is the tie key of index j in item i's list: j itself (NewByIndex)
// or tieKey(i, j) (New).
func (s *Lists) key(i int, j int32) uint64 {
	if s.byIndex {
		return uint64(uint32(j))
	}
	return tieKey(i, j)
}

// tieKey mixes an item and an index into a pseudo-random 64-bit key
// (SplitMix64's finaliser).
func tieKey(i int, j int32) uint64 {
	z := uint64(i)<<32 ^ uint64(uint32(j))
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Beats reports whether (v, j) would enter item i's list: whether it beats
// the bound, ties broken as Offer breaks them. The caller holds i's lock.
func (s *Lists) Beats(i int, v float64, j int32) bool {
	return v < s.bv[i] || v == s.bv[i] && s.key(i, j) < s.bk[i]
}

// Offer adds (v, j, aux) to item i's list if it beats the bound; the
// caller holds i's lock.
func (s *Lists) Offer(i int, v float64, j int32, aux float64) {
	if s.Beats(i, v, j) {
		s.add(i, v, j, aux)
	}
}

// add puts (v, j, aux), which Beats has admitted, into item i's list:
// appended to the buffer, or inserted in order when the list is sorted.
func (s *Lists) add(i int, v float64, j int32, aux float64) {
	if s.room == s.k {
		s.insert(i, v, j, aux)
		return
	}
	t := i*s.room + int(s.cnt[i])
	s.val[t], s.Idx[t], s.Aux[t] = v, j, aux
	if s.cnt[i]++; int(s.cnt[i]) == s.room {
		s.cut(i)
	}
}

// insert adds (v, j, aux) to item i's sorted list (room = k), dropping its
// worst entry when full, and makes the worst the bound once full.
func (s *Lists) insert(i int, v float64, j int32, aux float64) {
	k, base, m := s.k, i*s.room, int(s.cnt[i])
	val, idx, ax := s.val[base:base+k], s.Idx[base:base+k], s.Aux[base:base+k]
	t := min(m, k-1)
	for ; t > 0 && (val[t-1] > v || val[t-1] == v && s.key(i, idx[t-1]) > s.key(i, j)); t-- {
		val[t], idx[t], ax[t] = val[t-1], idx[t-1], ax[t-1]
	}
	val[t], idx[t], ax[t] = v, j, aux
	if m < k {
		m++
		s.cnt[i] = int32(m)
	}
	if m == k {
		s.bv[i], s.bk[i] = val[k-1], s.key(i, idx[k-1])
	}
}

// Settle cuts item i's list to its k best, if it holds more, and sets its
// bound if it holds exactly k uncut.
func (s *Lists) Settle(i int) {
	if c := int(s.cnt[i]); c > s.k || c == s.k && math.IsInf(s.bv[i], 1) {
		s.cut(i)
	}
}

// cut keeps the k best of item i's entries (partial selection, expected
// O(room)) and makes the worst of them the bound.
func (s *Lists) cut(i int) {
	base := i * s.room
	n := int(s.cnt[i])
	val, idx, aux := s.val[base:base+n], s.Idx[base:base+n], s.Aux[base:base+n]
	worseAt := func(a, b int) bool { return s.worse(i, val[a], idx[a], val[b], idx[b]) }
	swap := func(a, b int) {
		val[a], val[b] = val[b], val[a]
		idx[a], idx[b] = idx[b], idx[a]
		aux[a], aux[b] = aux[b], aux[a]
	}
	// Quickselect: afterwards entries [0, k) are the k best.
	lo, hi := 0, n-1
	for lo < hi {
		mid := lo + (hi-lo)/2 // median of three as the pivot, moved to hi
		if worseAt(lo, mid) {
			swap(lo, mid)
		}
		if worseAt(mid, hi) {
			swap(mid, hi)
			if worseAt(lo, mid) {
				swap(lo, mid)
			}
		}
		swap(mid, hi)
		p := lo
		for q := lo; q < hi; q++ {
			if worseAt(hi, q) { // q better than the pivot
				swap(p, q)
				p++
			}
		}
		swap(p, hi)
		switch {
		case p == s.k-1 || p == s.k:
			lo = hi // [0, p) better than p: done
		case p < s.k:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
	s.cnt[i] = int32(s.k)
	w := 0
	for q := 1; q < s.k; q++ {
		if worseAt(q, w) {
			w = q
		}
	}
	s.bv[i], s.bk[i] = val[w], s.key(i, idx[w])
}

// Reset empties item i's list.
func (s *Lists) Reset(i int) {
	s.cnt[i], s.bv[i], s.bk[i] = 0, math.Inf(1), s.key(i, 0)
}

// Cap makes item i, whose list is empty, refuse every offer of value v or
// more (ties too): its list then keeps the k smallest values below v. Limit
// stays +Inf until k are kept, so that every value offered and not kept is
// at least min(v, Limit(i)); Reset lifts the cap.
func (s *Lists) Cap(i int, v float64) {
	s.bv[i], s.bk[i] = v, 0
}

// CopyRow copies item i's settled list from o (same n and k).
func (s *Lists) CopyRow(o *Lists, i int) {
	o.Settle(i)
	n := int(o.cnt[i])
	copy(s.val[i*s.room:], o.val[i*o.room:i*o.room+n])
	copy(s.Aux[i*s.room:], o.Aux[i*o.room:i*o.room+n])
	copy(s.Idx[i*s.room:], o.Idx[i*o.room:i*o.room+n])
	s.cnt[i], s.bv[i], s.bk[i] = o.cnt[i], o.bv[i], o.bk[i]
}

// Each calls f(j, v, aux) for the entries of item i's settled list.
func (s *Lists) Each(i int, f func(j int, v, aux float64)) {
	s.Settle(i)
	for t := i * s.room; t < i*s.room+int(s.cnt[i]); t++ {
		f(int(s.Idx[t]), s.val[t], s.Aux[t])
	}
}

// Entries returns the range [t0, t1) of item i's settled list in val, idx
// and aux.
func (s *Lists) Entries(i int) (t0, t1 int) {
	s.Settle(i)
	return i * s.room, i*s.room + int(s.cnt[i])
}

// Limit returns the value an entry must beat to enter item i's settled
// list: the largest it keeps when the list is full, +Inf otherwise (the
// list then holds every finite value offered). Every value offered and not
// kept is at least Limit(i).
func (s *Lists) Limit(i int) float64 {
	s.Settle(i)
	if int(s.cnt[i]) < s.k {
		return math.Inf(1)
	}
	return s.bv[i]
}

// Thresholds returns Limit(i) for every item of s.
func (s *Lists) Thresholds() []float64 {
	tau := make([]float64, len(s.cnt))
	for i := range tau {
		tau[i] = s.Limit(i)
	}
	return tau
}

// Stripe returns the lock of items [l·LockBlock, (l+1)·LockBlock): Offer's
// caller holds the lock of the item it offers to.
func (s *Lists) Stripe(l int) *sync.Mutex { return &s.mu[l] }

// Max keeps, for each of n vectors, the largest kernel value
// κ(v, y) with another vector y seen by a pass over all entries (the
// nearest y): it
// bounds the slope of the RBF mixture wherever the float32 error of a
// kernel value with v matters (rbfErr32). Passes fill a tile's maxima
// locally and merge them under striped locks.
type Max struct {
	K  []float64
	mu []sync.Mutex // one per lockBlock vectors
}

func NewMax(n int) *Max {
	return &Max{K: make([]float64, n), mu: make([]sync.Mutex, (n+LockBlock-1)/LockBlock)}
}

// raise sets k[i0+j] = max(k[i0+j], v[j]).
func (m *Max) Raise(i0 int, v []float64) {
	for j := 0; j < len(v); {
		l := (i0 + j) / LockBlock
		end := min(len(v), (l+1)*LockBlock-i0)
		m.mu[l].Lock()
		for ; j < end; j++ {
			m.K[i0+j] = max(m.K[i0+j], v[j])
		}
		m.mu[l].Unlock()
	}
}
