package crawlreport

import (
	"container/heap"
	"slices"
	"strings"
)

// counts are the figures of one table row: final URLs by status class.
type counts struct {
	urls, bytes                   int64
	s2xx, s3xx, s4xx, s5xx, other int64
	failed, robots, dead          int64
}

// add adds one URL's final figures.
func (c *counts) add(u final) {
	c.urls++
	c.bytes += u.bytes
	switch s := u.status; {
	case s >= 200 && s < 300:
		c.s2xx++
	case s >= 300 && s < 400:
		c.s3xx++
	case s >= 400 && s < 500:
		c.s4xx++
	case s >= 500 && s < 600:
		c.s5xx++
	case s > 0:
		c.other++
	case u.robots:
		c.robots++
	default:
		c.failed++
	}
	if u.dead {
		c.dead++
	}
}

// merge adds o's figures to c.
func (c *counts) merge(o counts) {
	c.urls += o.urls
	c.bytes += o.bytes
	c.s2xx += o.s2xx
	c.s3xx += o.s3xx
	c.s4xx += o.s4xx
	c.s5xx += o.s5xx
	c.other += o.other
	c.failed += o.failed
	c.robots += o.robots
	c.dead += o.dead
}

// row is one keyed row of a table; at is its index in the table's heap.
type row struct {
	key string
	counts
	at int
}

// table is a bounded set of rows keyed by string: at most max rows; a new
// key arriving when it is full evicts the row with the fewest URLs into
// other (Space-Saving), so the sum of rows and other is always exact.
type table struct {
	max     int
	rows    map[string]*row
	h       rowHeap
	other   counts
	evicted int64 // rows folded into other
}

func newTable(max int) *table { return &table{max: max, rows: map[string]*row{}} }

// add counts u under key.
func (t *table) add(key string, u final) {
	r := t.rows[key]
	if r == nil {
		if len(t.rows) >= t.max {
			min := heap.Pop(&t.h).(*row)
			delete(t.rows, min.key)
			t.other.merge(min.counts)
			t.evicted++
		}
		r = &row{key: key}
		t.rows[key] = r
		heap.Push(&t.h, r)
	}
	r.add(u)
	heap.Fix(&t.h, r.at)
}

// sorted returns the rows, most URLs first, then by key.
func (t *table) sorted() []*row {
	out := make([]*row, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *row) int {
		if a.urls != b.urls {
			if a.urls > b.urls {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// rowHeap is a min-heap of rows by URLs.
type rowHeap []*row

func (h rowHeap) Len() int           { return len(h) }
func (h rowHeap) Less(i, j int) bool { return h[i].urls < h[j].urls }
func (h rowHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i, j
}
func (h *rowHeap) Push(x any) {
	r := x.(*row)
	r.at = len(*h)
	*h = append(*h, r)
}
func (h *rowHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
