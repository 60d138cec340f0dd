package graphql

import (
	"container/list"
	"sync"
)

// lru is a cache whose entries' costs (estimated bytes) share a budget, least
// recently used out first. An entry over a sixteenth of the budget is not
// kept, so that one cannot empty the cache. It is safe for concurrent use.
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

// get returns the value kept under k, which becomes the most recently used.
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

// put keeps v under k, evicting as the budget requires. A k already kept keeps
// its value (two callers that made it at once keep one).
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
