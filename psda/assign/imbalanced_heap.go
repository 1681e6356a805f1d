package assign

// This file holds the price heap of the imbalanced solver (imbalanced.go).

// priceHeap is a binary min-heap of columns keyed by key(j), with positions
// so that a column whose key rose can be moved down.
type priceHeap struct {
	a   []int
	pos []int // position of column j in a, or −1
	key func(j int) float64
}

func newPriceHeap(n int, key func(int) float64) *priceHeap {
	h := &priceHeap{a: make([]int, 0, n), pos: make([]int, n), key: key}
	for j := range h.pos {
		h.pos[j] = -1
	}
	return h
}

func (h *priceHeap) len() int { return len(h.a) }

// min returns the smallest key, or +Inf when the heap is empty.
func (h *priceHeap) min() float64 {
	if len(h.a) == 0 {
		return inf
	}
	return h.key(h.a[0])
}

func (h *priceHeap) push(j int) {
	h.a = append(h.a, j)
	h.pos[j] = len(h.a) - 1
	h.up(len(h.a) - 1)
}

// pop removes and returns the column with the smallest key.
func (h *priceHeap) pop() int {
	j := h.a[0]
	last := len(h.a) - 1
	h.swap(0, last)
	h.a = h.a[:last]
	h.pos[j] = -1
	h.down(0)
	return j
}

// fix restores the order after the key of column j rose.
func (h *priceHeap) fix(j int) {
	if i := h.pos[j]; i >= 0 {
		h.down(i)
	}
}

func (h *priceHeap) swap(i, k int) {
	h.a[i], h.a[k] = h.a[k], h.a[i]
	h.pos[h.a[i]], h.pos[h.a[k]] = i, k
}

func (h *priceHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !(h.key(h.a[i]) < h.key(h.a[p])) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *priceHeap) down(i int) {
	for {
		m := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h.a) && h.key(h.a[c]) < h.key(h.a[m]) {
				m = c
			}
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}
