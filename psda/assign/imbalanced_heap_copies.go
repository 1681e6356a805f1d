package assign

import "slices"

// copyHeap keeps the h copies of each column of the implicit-copy auction
// in a binary min-heap by (price, copy index), so that a bid reads the
// cheapest and second cheapest copy of a column in O(1) and a raised price
// costs O(log h). A scan of the copies made every bid O(h), and with one or
// a few columns (h = nr/nc copies each) the auction O(nr²/nc): 2.2 s for
// 10,000 rows on two columns, 0.055 s with the heap. Ordering ties by copy index picks the copy
// the scan picked (the lowest index among the cheapest), so the auction
// runs as before. Prices only rise during the auction, so sifting down is
// the only repair needed. Columns of at most scanCopies copies are
// scanned instead: there a heap's branches cost more than the scan (the
// 15000 × 2000 Stage 1, h = 8, measured 1.4× slower with the heap in one
// run on a loaded machine).
type copyHeap struct {
	price []float64
	h     int
	heap  []int // per column j, heap[j*h : j*h+h] holds copy offsets t
	pos   []int // pos[j*h+t]: the index of t in column j's heap
}

// newCopyHeap returns the heaps of nc columns of h copies over price, whose
// entries must all be equal (the auction starts them at 0).
func newCopyHeap(price []float64, nc, h int) *copyHeap {
	q := &copyHeap{price: price, h: h}
	if h <= scanCopies {
		return q
	}
	q.heap, q.pos = make([]int, nc*h), make([]int, nc*h)
	for k := range q.heap {
		q.heap[k], q.pos[k] = k%h, k%h // equal prices: index order is a heap
	}
	return q
}

// less orders copies t and u of the column starting at base.
func (q *copyHeap) less(base, t, u int) bool {
	a, b := q.price[base+t], q.price[base+u]
	return a < b || (a == b && t < u)
}

// scanCopies is the most copies per column that copyHeap scans.
const scanCopies = 16

// min2 returns column j's cheapest copy, its price, and the second lowest
// price (+Inf when the column has one copy).
func (q *copyHeap) min2(j int) (t int, p1, p2 float64) {
	if q.heap == nil {
		p1, p2 = inf, inf
		for u, x := range q.price[j*q.h : j*q.h+q.h] {
			if x < p2 {
				if x < p1 {
					p2, p1, t = p1, x, u
				} else {
					p2 = x
				}
			}
		}
		return t, p1, p2
	}
	base, hp := j*q.h, q.heap[j*q.h:j*q.h+q.h]
	p2 = inf
	for _, c := range hp[1:min(3, len(hp))] {
		p2 = min(p2, q.price[base+c])
	}
	return hp[0], q.price[base+hp[0]], p2
}

// raised restores column k/h's heap after price[k] rose. Time O(log h).
func (q *copyHeap) raised(k int) {
	if q.heap == nil {
		return
	}
	h := q.h
	base, t := k-k%h, k%h
	hp := q.heap[base : base+h]
	i := q.pos[k]
	for {
		l, m := 2*i+1, i
		if l < h && q.less(base, hp[l], hp[m]) {
			m = l
		}
		if r := l + 1; r < h && q.less(base, hp[r], hp[m]) {
			m = r
		}
		if m == i {
			break
		}
		hp[i], hp[m] = hp[m], hp[i]
		q.pos[base+hp[i]] = i
		i = m
	}
	hp[i] = t
	q.pos[k] = i
}

// rebuild restores column j's heap after any change of its prices (the
// auction lowers them between its phases): the copies sorted by (price,
// index), which is a heap. Time O(h·log h).
func (q *copyHeap) rebuild(j int) {
	if q.heap == nil {
		return
	}
	h := q.h
	base := j * h
	hp := q.heap[base : base+h]
	slices.SortFunc(hp, func(t, u int) int {
		switch {
		case q.less(base, t, u):
			return -1
		case q.less(base, u, t):
			return 1
		}
		return 0
	})
	for i, t := range hp {
		q.pos[base+t] = i
	}
}
