// Package fairqueue shares a fixed number of slots among clients, each holding at
// most perClient. It is work-conserving within those bounds; a freed slot goes to
// the waiting client with the least service lately (start-time fair queuing: work
// is charged the time it held its slot, and idling earns no credit); a client has
// at most maxWaiting pieces of work waiting, more refused with ErrBusy; a caller
// whose context ends leaves at once; one client's work is granted in order.
package fairqueue

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrBusy refuses work of a client that already has as much waiting as it may.
var ErrBusy = errors.New("fairqueue: too much work waiting for this client")

// firstGuess is what a client's work is charged when granted before any of it was
// measured: about an ordinary request's cost, corrected when the work ends.
const firstGuess = 100 * time.Microsecond

// Queue grants slots to clients' work; make one with New.
type Queue struct {
	slots      int
	perClient  int
	maxWaiting int
	now        func() time.Time

	mu      sync.Mutex
	free    int
	clients map[string]*client // clients with work running or waiting
	backlog clientHeap         // clients with work waiting and under perClient, least tag first
	lastTag time.Duration      // the tag of the work last granted: the virtual time
}

type client struct {
	name    string
	waiting []*waiter // in the order they asked
	running int
	tag     time.Duration // virtual time at which its next work may start
	guess   time.Duration // what its next work is charged when granted
	index   int           // in the backlog heap; -1 when not in it
}

type waiter struct {
	ready   chan struct{} // closed when granted
	granted bool
	charged time.Duration // what the grant charged its client
}

// New returns a queue of slots slots, each client holding at most perClient and
// having at most maxWaiting pieces of work waiting; slots and perClient are >= 1.
func New(slots, perClient, maxWaiting int) *Queue {
	if slots < 1 || perClient < 1 {
		panic("fairqueue: slots and perClient must be at least 1")
	}
	return &Queue{slots: slots, perClient: min(perClient, slots), maxWaiting: max(maxWaiting, 0), now: time.Now,
		free: slots, clients: map[string]*client{}}
}

// Acquire waits for a slot for client's work and returns the function that gives
// it back once the work is done (later calls do nothing); or ErrBusy at once, or
// ctx's error when ctx ends first.
func (q *Queue) Acquire(ctx context.Context, name string) (release func(), err error) {
	q.mu.Lock()
	c := q.clients[name]
	if c == nil {
		c = &client{name: name, index: -1, tag: q.lastTag, guess: firstGuess}
		q.clients[name] = c
	}
	if q.free > 0 && q.backlog.Len() == 0 && c.running < q.perClient {
		q.free--
		charged := q.grantLocked(c)
		q.mu.Unlock()
		return q.releaser(c, charged), nil
	}
	if len(c.waiting) >= q.maxWaiting {
		q.forgetIfIdleLocked(c)
		q.mu.Unlock()
		return nil, ErrBusy
	}
	w := &waiter{ready: make(chan struct{})}
	if len(c.waiting) == 0 {
		c.tag = max(c.tag, q.lastTag)
	}
	c.waiting = append(c.waiting, w)
	q.eligibleLocked(c)
	q.dispatchLocked()
	q.mu.Unlock()

	select {
	case <-w.ready:
		return q.releaser(c, w.charged), nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if w.granted {
		// Granted as ctx ended: the slot is this caller's, and goes back.
		q.mu.Unlock()
		q.releaser(c, w.charged)()
		return nil, ctx.Err()
	}
	i := slices.Index(c.waiting, w)
	c.waiting = slices.Delete(c.waiting, i, i+1)
	if len(c.waiting) == 0 {
		c.waiting = nil
	}
	q.eligibleLocked(c)
	q.forgetIfIdleLocked(c)
	q.mu.Unlock()
	return nil, ctx.Err()
}

// grantLocked counts a slot as c's and charges c its guess now, so a client with
// much waiting does not take every free slot before its first work ends.
func (q *Queue) grantLocked(c *client) time.Duration {
	c.running++
	q.lastTag = max(q.lastTag, c.tag)
	c.tag += c.guess
	return c.guess
}

// releaser returns the function giving c's slot back, charging the time held in
// place of guess.
func (q *Queue) releaser(c *client, guess time.Duration) func() {
	start := q.now()
	var once sync.Once
	return func() {
		once.Do(func() {
			held := q.now().Sub(start)
			q.mu.Lock()
			c.tag += held - guess
			c.guess = (3*c.guess + held) / 4 // the next guess follows what work costs
			c.running--
			q.free++
			if c.index >= 0 {
				heap.Fix(&q.backlog, c.index)
			}
			q.eligibleLocked(c)
			q.dispatchLocked()
			q.forgetIfIdleLocked(c)
			q.mu.Unlock()
		})
	}
}

// dispatchLocked hands free slots to the waiting work of the least-tagged clients.
func (q *Queue) dispatchLocked() {
	for q.free > 0 && q.backlog.Len() > 0 {
		c := q.backlog[0]
		w := c.waiting[0]
		c.waiting[0] = nil
		c.waiting = c.waiting[1:]
		w.granted = true
		q.free--
		w.charged = q.grantLocked(c)
		close(w.ready)
		if len(c.waiting) == 0 {
			c.waiting = nil
		}
		q.eligibleLocked(c)
	}
}

// eligibleLocked keeps c in the backlog exactly while it has work waiting and
// fewer than perClient slots.
func (q *Queue) eligibleLocked(c *client) {
	want := len(c.waiting) > 0 && c.running < q.perClient
	switch {
	case want && c.index < 0:
		heap.Push(&q.backlog, c)
	case want:
		heap.Fix(&q.backlog, c.index)
	case c.index >= 0:
		heap.Remove(&q.backlog, c.index)
	}
}

// forgetIfIdleLocked drops c, and its charges, once it has no work running or
// waiting: back, it starts from lastTag, as after idling.
func (q *Queue) forgetIfIdleLocked(c *client) {
	if c.running == 0 && len(c.waiting) == 0 && q.clients[c.name] == c {
		delete(q.clients, c.name)
	}
}

// Stats is a moment's view of the queue.
type Stats struct {
	Running, Waiting, Clients int
}

// Stats returns how much work runs and waits, and for how many clients.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Running: q.slots - q.free, Clients: len(q.clients)}
	for _, c := range q.clients {
		s.Waiting += len(c.waiting)
	}
	return s
}

// clientHeap orders the clients with waiting work by tag.
type clientHeap []*client

func (h clientHeap) Len() int           { return len(h) }
func (h clientHeap) Less(i, j int) bool { return h[i].tag < h[j].tag }
func (h clientHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *clientHeap) Push(x any) {
	c := x.(*client)
	c.index = len(*h)
	*h = append(*h, c)
}
func (h *clientHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	c.index = -1
	*h = old[:len(old)-1]
	return c
}
