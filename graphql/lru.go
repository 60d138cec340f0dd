package graphql

import (
	"container/list"
	"sync"
)

// lru is a cache bounded by a budget that its entries' costs share: each
// entry is put with a cost (its estimated bytes, or 1 to bound entries), and
// keeping one past the budget evicts the least recently used. An entry
// costing more than a sixteenth of the budget is not kept, so that one entry
// cannot empty the cache. The document cache (cache.go) and the automatic
// persisted queries (persisted.go) are both one. It is safe for concurrent use.
type lru[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64      // the sum of the costs of the entries
	order  *list.List // of *lruEntry[K, V], most recently used at the front
	byKey  map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
	cost  int64
}

func newLRU[K comparable, V any](budget int64) *lru[K, V] {
	return &lru[K, V]{budget: budget, order: list.New(), byKey: make(map[K]*list.Element)}
}

// get returns the value kept under k, and whether there is one; it becomes
// the most recently used.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).value, true
}

// put keeps v under k, evicting the least recently used entries as the
// budget requires. When k is already kept, its value stays (two callers
// that made the same value at once keep one) and becomes the most recent.
func (c *lru[K, V]) put(k K, v V, cost int64) {
	if cost > c.budget/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&lruEntry[K, V]{key: k, value: v, cost: cost})
	c.used += cost
	for c.used > c.budget {
		e := c.order.Remove(c.order.Back()).(*lruEntry[K, V])
		delete(c.byKey, e.key)
		c.used -= e.cost
	}
}
