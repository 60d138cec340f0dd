package admission

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBusy refuses work of a client that already has as much waiting as it may.
var ErrBusy = errors.New("admission: too much work waiting for this client")

// firstGuess is what a client's work is charged when granted before any of it was
// measured: about an ordinary request's cost, corrected when the work ends.
const firstGuess = 100 * time.Microsecond

// loneGrace is how long after another client's work a client is still held to its
// share: a client that sends one request at a time keeps its share between two.
const loneGrace = time.Second

// Queue shares slots among clients' work. Each client holds at most perClient; it
// is work-conserving within those bounds; a freed slot goes to the waiting client
// with the least service lately (start-time fair queuing: work is charged the time
// it held its slot, and idling earns no credit); a client has at most maxWaiting
// pieces of work waiting, more refused with ErrBusy; a caller whose context ends
// leaves at once; one client's work is granted in order.
//
// A client alone, with no other client's work for loneGrace, has nobody to share
// with: its work is admitted with an atomic add, held to no slot, until another
// client comes (lone). Its work then counts against the slots, but for at most all
// of them less perClient, so that the newcomer finds its share at once.
type Queue struct {
	slots      int
	perClient  int
	maxWaiting int
	now        func() time.Time

	lone atomic.Pointer[lone] // set while one client has the service to itself

	mu          sync.Mutex
	free        int
	clients     map[string]*client // clients with work running or waiting, lone's aside
	backlog     clientHeap         // clients with work waiting and under perClient, least tag first
	lastTag     time.Duration      // the tag of the work last granted: the virtual time
	sharedUntil time.Time          // no lone client before: another client had work until loneGrace before
}

type client struct {
	name     string
	waiting  []*waiter // in the order they asked
	running  int
	borrowed int           // of running, work from a lone spell that holds no slot
	tag      time.Duration // virtual time at which its next work may start
	guess    time.Duration // what its next work is charged when granted
	index    int           // in the backlog heap; -1 when not in it
}

type waiter struct {
	ready   chan struct{} // closed when granted
	granted bool
	charged time.Duration // what the grant charged its client
}

// lone is the client with the service to itself. n counts its work running, and
// has closed set once the queue shares again: n is then the client's in the map.
type lone struct {
	q      *Queue
	client string
	n      atomic.Int64
	exit   func() // gives back one piece of work, made once
}

const closed = 1 << 62

// enter counts one more piece of work, unless the spell is over.
func (l *lone) enter() bool {
	for {
		n := l.n.Load()
		if n&closed != 0 {
			return false
		}
		if l.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (l *lone) leave() {
	if l.n.Add(-1)&closed != 0 {
		l.q.releaseByName(l.client, 0, 0) // counted as the client's when the spell ended
	}
}

// NewQueue returns a queue of slots slots, each client holding at most perClient and
// having at most maxWaiting pieces of work waiting; slots and perClient are >= 1.
func NewQueue(slots, perClient, maxWaiting int) *Queue {
	if slots < 1 || perClient < 1 {
		panic("admission: slots and perClient must be at least 1")
	}
	return &Queue{slots: slots, perClient: min(perClient, slots), maxWaiting: max(maxWaiting, 0), now: time.Now,
		free: slots, clients: map[string]*client{}}
}

// TryLone admits client's work at once if client has the queue to itself, and
// reports whether it did; release gives the work back.
func (q *Queue) TryLone(name string) (release func(), ok bool) {
	if q == nil {
		return nil, false
	}
	if l := q.lone.Load(); l != nil && l.client == name && l.enter() {
		return l.exit, true
	}
	return nil, false
}

// Acquire waits for a slot for client's work and returns the function that gives
// it back once the work is done (call it once); or ErrBusy at once, or ctx's error
// when ctx ends first.
func (q *Queue) Acquire(ctx context.Context, name string) (release func(), err error) {
	if release, ok := q.TryLone(name); ok {
		return release, nil
	}
	q.mu.Lock()
	now := q.now()
	if l := q.lone.Load(); l != nil {
		if l.client == name && l.enter() {
			q.mu.Unlock()
			return l.exit, nil
		}
		q.shareLocked(l, now)
	}
	c := q.clients[name]
	if (len(q.clients) == 0 || c != nil && len(q.clients) == 1) && !now.Before(q.sharedUntil) {
		l := q.loneLocked(name, c)
		l.n.Add(1)
		q.mu.Unlock()
		return l.exit, nil
	}
	if c == nil {
		c = &client{name: name, index: -1, tag: q.lastTag, guess: firstGuess}
		q.clients[name] = c
	}
	if q.free > 0 && q.backlog.Len() == 0 && c.running < q.perClient {
		q.free--
		charged := q.grantLocked(c)
		q.mu.Unlock()
		return q.releaser(name, charged, now), nil
	}
	if len(c.waiting) >= q.maxWaiting {
		q.forgetIfIdleLocked(c, now)
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
		return q.releaser(name, w.charged, q.now()), nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if w.granted {
		// Granted as ctx ended: the slot is this caller's, and goes back.
		q.mu.Unlock()
		q.releaseByName(name, 0, 0)
		return nil, ctx.Err()
	}
	c = q.clients[name] // the waiting client is in the map: only a lone spell takes it out, granting its work
	i := slices.Index(c.waiting, w)
	c.waiting = slices.Delete(c.waiting, i, i+1)
	if len(c.waiting) == 0 {
		c.waiting = nil
	}
	q.eligibleLocked(c)
	q.forgetIfIdleLocked(c, q.now())
	q.mu.Unlock()
	return nil, ctx.Err()
}

// loneLocked gives the service to name, whose entry in the map (nil: none) has no
// other client beside it: its running work moves to the spell, and its waiting
// work is granted at once.
func (q *Queue) loneLocked(name string, c *client) *lone {
	l := &lone{q: q, client: name}
	l.exit = l.leave
	if c != nil {
		if c.index >= 0 {
			heap.Remove(&q.backlog, c.index)
		}
		delete(q.clients, name)
		q.free += c.running - c.borrowed
		l.n.Store(int64(c.running + len(c.waiting)))
		for _, w := range c.waiting {
			w.granted = true
			close(w.ready)
		}
	}
	q.lone.Store(l)
	return l
}

// shareLocked ends l's spell: its work becomes its client's in the map, counting
// against the slots for at most all of them less perClient.
func (q *Queue) shareLocked(l *lone, now time.Time) {
	running := int(l.n.Or(closed))
	q.lone.Store(nil)
	if running > 0 {
		counted := min(running, q.slots-q.perClient)
		q.clients[l.client] = &client{name: l.client, index: -1, tag: q.lastTag, guess: firstGuess, running: running, borrowed: running - counted}
		q.free -= counted
	}
	q.sharedUntil = now.Add(loneGrace)
}

// grantLocked counts a slot as c's and charges c its guess now, so a client with
// much waiting does not take every free slot before its first work ends.
func (q *Queue) grantLocked(c *client) time.Duration {
	c.running++
	q.lastTag = max(q.lastTag, c.tag)
	c.tag += c.guess
	return c.guess
}

// releaser returns the function giving name's slot, taken at start, back.
func (q *Queue) releaser(name string, guess time.Duration, start time.Time) func() {
	return func() { q.releaseByName(name, guess, q.now().Sub(start)) }
}

// releaseByName gives back a piece of name's work, charging the time it held its
// slot in place of the guess it was charged (none for work from a lone spell).
func (q *Queue) releaseByName(name string, guess, held time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.lone.Load(); l != nil && l.client == name {
		l.n.Add(-1) // a spell ends only under mu: this one is not over
		return
	}
	c := q.clients[name]
	c.running--
	if c.borrowed > 0 {
		c.borrowed--
	} else {
		q.free++
	}
	if held > 0 {
		c.tag += held - guess
		c.guess = (3*c.guess + held) / 4 // the next guess follows what work costs
	}
	if c.index >= 0 {
		heap.Fix(&q.backlog, c.index)
	}
	q.eligibleLocked(c)
	q.dispatchLocked()
	now := q.now()
	q.forgetIfIdleLocked(c, now)
	if len(q.clients) == 1 && !now.Before(q.sharedUntil) {
		for name, c := range q.clients {
			q.loneLocked(name, c)
		}
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
// waiting: back, it starts from lastTag, as after idling. The clients left had
// another beside them until now.
func (q *Queue) forgetIfIdleLocked(c *client, now time.Time) {
	if c.running == 0 && len(c.waiting) == 0 && q.clients[c.name] == c {
		delete(q.clients, c.name)
		if len(q.clients) > 0 {
			q.sharedUntil = now.Add(loneGrace)
		}
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
	s := Stats{Clients: len(q.clients)}
	if l := q.lone.Load(); l != nil {
		s.Running, s.Clients = int(l.n.Load()), 1
	}
	for _, c := range q.clients {
		s.Running += c.running
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
