package graphql

import (
	"fmt"
	"sync"
	"testing"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU[string, int](160) // entries of cost 10: room for 16
	for i := range 16 {
		c.put(fmt.Sprint(i), i, 10)
	}
	if v, ok := c.get("0"); !ok || v != 0 { // "0" is now the most recent, "1" the least
		t.Fatalf(`get("0") = %d, %v; want 0, true`, v, ok)
	}
	c.put("16", 16, 10)
	if _, ok := c.get("1"); ok {
		t.Error(`"1", the least recently used, was not evicted`)
	}
	for _, k := range []string{"0", "2", "16"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%q was evicted", k)
		}
	}
	if c.len() != 16 || c.cost() != 160 {
		t.Errorf("len %d cost %d, want 16 and 160", c.len(), c.cost())
	}
}

func TestLRUCostsShareTheBudget(t *testing.T) {
	c := newLRU[int, string](1600)
	for i := range 16 {
		c.put(i, "small", 100)
	}
	c.put(100, "big", 100) // one in, one out
	if c.cost() > 1600 {
		t.Errorf("cost %d, over the budget of 1,600", c.cost())
	}
	c.put(101, "too big", 101) // over a sixteenth of the budget: not kept
	if _, ok := c.get(101); ok {
		t.Error("an entry over a sixteenth of the budget was kept")
	}
	if _, ok := c.get(0); ok {
		t.Error("the least recently used entry stayed past the budget")
	}
}

func TestLRUPutKeepsTheFirstValue(t *testing.T) {
	c := newLRU[string, string](1000)
	c.put("k", "first", 10)
	c.put("k", "second", 10)
	if v, _ := c.get("k"); v != "first" || c.len() != 1 || c.cost() != 10 {
		t.Errorf("after two puts: %q, len %d, cost %d; want first, 1, 10", v, c.len(), c.cost())
	}
	// A repeated put makes the entry the most recent.
	c2 := newLRU[string, string](48)
	for _, k := range []string{"x", "y", "z"} {
		c2.put(k, k, 3)
	}
	c2.put("x", "x", 3)
	for i := range 14 {
		c2.put(fmt.Sprint(i), "", 3) // 3*16 = 48: the 14th evicts one, the least recent
	}
	if _, ok := c2.get("y"); ok {
		t.Error(`"y", the least recently used, was not evicted`)
	}
	if _, ok := c2.get("x"); !ok {
		t.Error(`"x", put again after "y", was evicted before it`)
	}
}

func TestLRUConcurrentUse(t *testing.T) {
	c := newLRU[int, int](64 * 16)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := (g*1000 + i) % 200
				c.put(k, k, 16)
				if v, ok := c.get(k); ok && v != k {
					t.Errorf("get(%d) = %d", k, v)
				}
			}
		})
	}
	wg.Wait()
	if c.cost() > c.budget || int64(c.len())*16 != c.cost() {
		t.Errorf("len %d cost %d budget %d", c.len(), c.cost(), c.budget)
	}
}

// cost returns the sum of the costs of the entries kept.
func (c *lru[K, V]) cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// len returns the number of entries kept.
func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Len returns the number of queries held, pinned ones included.
func (c *PersistedQueries) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.learnt.len() + len(c.pinned)
}
