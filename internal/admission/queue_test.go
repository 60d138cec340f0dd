package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestQueue(slots, maxWaiting int) (*Queue, *fakeClock) {
	return newCappedTestQueue(slots, slots, maxWaiting)
}

// newCappedTestQueue returns a queue on a clock that moves only when told, shared
// from the start: no client has it to itself until the clock passes a year.
func newCappedTestQueue(slots, perClient, maxWaiting int) (*Queue, *fakeClock) {
	q, clock := newLoneTestQueue(slots, perClient, maxWaiting)
	q.sharedUntil = clock.now.AddDate(1, 0, 0)
	return q, clock
}

// newLoneTestQueue is newCappedTestQueue without the year: a lone client has the
// queue to itself at once.
func newLoneTestQueue(slots, perClient, maxWaiting int) (*Queue, *fakeClock) {
	q := NewQueue(slots, perClient, maxWaiting)
	clock := &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	q.now = clock.Now
	return q, clock
}

// acquireAsync starts an Acquire and returns a channel that yields its release once
// granted. It returns after the request is queued, so the order of calls is the
// order of arrival.
func acquireAsync(t *testing.T, q *Queue, ctx context.Context, name string) <-chan func() {
	t.Helper()
	before := q.Stats().Waiting
	got := make(chan func(), 1)
	go func() {
		release, err := q.Acquire(ctx, name)
		if err != nil {
			close(got)
			return
		}
		got <- release
	}()
	waitFor(t, func() bool { s := q.Stats(); return s.Waiting > before || len(got) > 0 })
	return got
}

// waitFor is testkit.Eventually for a condition that has nothing to say when it
// does not hold: the queue's fairness tests take turns through it thousands of times.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, func() error {
		if !cond() {
			return errors.New("the condition never held")
		}
		return nil
	})
}

func granted(ch <-chan func()) bool { return len(ch) > 0 }

// TestLoneClientGetsEverySlot: work-conserving, a single client (a reverse proxy)
// while it shares the queue runs as much at once as there are slots.
func TestLoneClientGetsEverySlot(t *testing.T) {
	q, _ := newTestQueue(4, 8)
	var releases []func()
	for range 4 {
		r, err := q.Acquire(t.Context(), "proxy")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	if s := q.Stats(); s.Running != 4 || s.Waiting != 0 {
		t.Errorf("stats %+v, want 4 running", s)
	}
	fifth := acquireAsync(t, q, t.Context(), "proxy")
	if granted(fifth) {
		t.Fatal("a fifth piece of work ran with four slots")
	}
	releases[0]()
	(<-fifth)()
	for _, r := range releases[1:] {
		r()
	}
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("after every release: %+v", s)
	}
}

// TestLoneSpell: a client with no other beside it has the queue to itself: its
// work is granted at once, past every slot, without waiting. A newcomer ends the
// spell and finds its share at once; the lone client's work then counts against
// the slots (all of them less a client's share at most), its new work waits for
// its share, and the spell comes back only when the newcomer has been gone for
// loneGrace.
func TestLoneSpell(t *testing.T) {
	q, clock := newLoneTestQueue(4, 2, 8)
	var a []func()
	for range 10 {
		r, err := q.Acquire(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		a = append(a, r)
	}
	if s := q.Stats(); s != (Stats{Running: 10, Clients: 1}) || q.lone.Load() == nil {
		t.Fatalf("a alone: %+v, want 10 running in a lone spell", s)
	}
	b, err := q.Acquire(t.Context(), "b") // a newcomer: at once
	if err != nil {
		t.Fatal(err)
	}
	if q.lone.Load() != nil {
		t.Fatal("the spell goes on beside b")
	}
	aNext := acquireAsync(t, q, t.Context(), "a")
	b2 := acquireAsync(t, q, t.Context(), "b") // b's second share: the last slot
	if !granted(b2) || granted(aNext) {
		t.Fatalf("b's second: granted %v; a's next: granted %v; want b's at once and a's waiting", granted(b2), granted(aNext))
	}
	for _, r := range a[:9] {
		r() // the borrowed work first: no slot is freed for a, which holds more than its share
	}
	if granted(aNext) {
		t.Fatal("a's new work granted while it held more than its share")
	}
	a[9]() // a holds one: its next is granted in the slot freed
	release := <-aNext
	(<-b2)()
	b()
	clock.Advance(loneGrace / 2)
	if r, err := q.Acquire(t.Context(), "a"); err != nil || q.lone.Load() != nil {
		t.Fatalf("a within loneGrace of b: %v, lone %v; want a shared slot", err, q.lone.Load() != nil)
	} else {
		r()
	}
	clock.Advance(loneGrace)
	release()
	r, err := q.Acquire(t.Context(), "a")
	if l := q.lone.Load(); err != nil || l == nil || l.client != "a" {
		t.Fatalf("a after b was gone for loneGrace: %v, want a lone spell", err)
	}
	r()
	if s := q.Stats(); s != (Stats{Clients: 1}) {
		t.Errorf("at the end: %+v", s)
	}
}

// TestLoneSpellGrantsWaitingWork: a client left alone with work waiting has it
// all granted at once when the spell begins.
func TestLoneSpellGrantsWaitingWork(t *testing.T) {
	q, clock := newCappedTestQueue(1, 1, 8)
	hold, _ := q.Acquire(t.Context(), "a")
	var waiting []<-chan func()
	for range 3 {
		waiting = append(waiting, acquireAsync(t, q, t.Context(), "a"))
	}
	q.mu.Lock()
	q.sharedUntil = clock.Now() // as if the last other client left just now
	q.mu.Unlock()
	hold()
	for _, w := range waiting {
		(<-w)()
	}
	if s := q.Stats(); s.Running != 0 || s.Waiting != 0 {
		t.Errorf("at the end: %+v", s)
	}
}

// TestPerClientCap: a client holds at most perClient slots; its further work waits
// while another client's takes a free slot at once, and gets the first slot its
// own work gives back.
func TestPerClientCap(t *testing.T) {
	q, _ := newCappedTestQueue(4, 2, 8)
	a1, _ := q.Acquire(t.Context(), "a")
	a2, _ := q.Acquire(t.Context(), "a")
	a3 := acquireAsync(t, q, t.Context(), "a")
	if granted(a3) {
		t.Fatal("a third slot for a client capped at two")
	}
	b, err := q.Acquire(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Stats(); s.Running != 3 || s.Waiting != 1 {
		t.Errorf("stats %+v, want 3 running (one slot free) and 1 waiting", s)
	}
	b()
	if granted(a3) {
		t.Fatal("b's slot went to a, which holds two")
	}
	a1()
	(<-a3)()
	a2()
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("at the end: %+v", s)
	}
}

// TestBusy: past maxWaiting a client is refused at once, while another client still
// queues.
func TestBusy(t *testing.T) {
	q, _ := newTestQueue(1, 2)
	hold, _ := q.Acquire(t.Context(), "a")
	w1 := acquireAsync(t, q, t.Context(), "a")
	w2 := acquireAsync(t, q, t.Context(), "a")
	if _, err := q.Acquire(t.Context(), "a"); !errors.Is(err, ErrBusy) {
		t.Errorf("third waiting: %v, want ErrBusy", err)
	}
	b := acquireAsync(t, q, t.Context(), "b")
	hold()
	for _, ch := range []<-chan func(){b, w1, w2} {
		(<-ch)()
	}
}

// TestNewcomerGoesFirst: a client with one request waiting is served before a
// client that has many waiting, however long the latter has waited.
func TestNewcomerGoesFirst(t *testing.T) {
	q, clock := newTestQueue(1, 100)
	hold, _ := q.Acquire(t.Context(), "flood")
	var flood []<-chan func()
	for range 10 {
		flood = append(flood, acquireAsync(t, q, t.Context(), "flood"))
	}
	clock.Advance(20 * time.Millisecond)
	light := acquireAsync(t, q, t.Context(), "light")
	hold()
	release := <-light
	for _, f := range flood {
		if granted(f) {
			t.Fatal("the flood went before the newcomer")
		}
	}
	release()
	for _, f := range flood {
		clock.Advance(time.Millisecond)
		(<-f)()
	}
}

// TestCostWeighsTurns: two clients that always have work waiting share the slot in
// inverse proportion to what their work costs: one whose work takes ten times as
// long is granted about a tenth as often.
func TestCostWeighsTurns(t *testing.T) {
	q, clock := newTestQueue(1, 1000)
	cost := map[string]time.Duration{"heavy": 10 * time.Millisecond, "light": time.Millisecond}
	hold, _ := q.Acquire(t.Context(), "heavy")
	pending := map[string][]<-chan func(){}
	for range 200 {
		for _, name := range []string{"heavy", "light"} {
			pending[name] = append(pending[name], acquireAsync(t, q, t.Context(), name))
		}
	}
	clock.Advance(cost["heavy"])
	hold()
	count := map[string]int{}
	for range 110 {
		var name string
		var release func()
		waitFor(t, func() bool {
			for _, n := range []string{"heavy", "light"} {
				if granted(pending[n][0]) {
					name, release = n, <-pending[n][0]
					pending[n] = pending[n][1:]
					return true
				}
			}
			return false
		})
		count[name]++
		clock.Advance(cost[name])
		release()
	}
	if count["light"] < 90 || count["heavy"] > 20 {
		t.Errorf("grants %v: want about 100 light to 10 heavy", count)
	}
	for len(pending["heavy"])+len(pending["light"]) > 0 { // whichever is granted next
		waitFor(t, func() bool {
			for _, n := range []string{"heavy", "light"} {
				if len(pending[n]) > 0 && granted(pending[n][0]) {
					(<-pending[n][0])()
					pending[n] = pending[n][1:]
					return true
				}
			}
			return false
		})
	}
}

// TestCancelLeavesTheQueue: a waiter whose context ends leaves at once, its place
// counted out, and the next waiter gets the slot.
func TestCancelLeavesTheQueue(t *testing.T) {
	q, _ := newTestQueue(1, 1)
	hold, _ := q.Acquire(t.Context(), "a")
	ctx, cancel := context.WithCancel(t.Context())
	gone := acquireAsync(t, q, ctx, "b")
	cancel()
	if _, ok := <-gone; ok {
		t.Fatal("a cancelled waiter was granted")
	}
	if s := q.Stats(); s.Waiting != 0 {
		t.Errorf("after the cancel: %+v", s)
	}
	next := acquireAsync(t, q, t.Context(), "b") // b's one waiting place is free again
	hold()
	(<-next)()
	if s := q.Stats(); s != (Stats{}) {
		t.Errorf("at the end: %+v", s)
	}
}

// TestRandomSchedules drives the queue with random arrivals, cancellations,
// releases and lone spells from several clients and checks after each step: no
// more slots held than there are; no slot free while work that may take it waits;
// no client past its share; no lone spell beside another client; each client's
// work granted in the order it asked; and at the end everything that was not
// cancelled ran (liveness).
func TestRandomSchedules(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomSchedule(t, seed) })
	}
}

func randomSchedule(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	slots := 1 + rng.IntN(3)
	q, clock := newLoneTestQueue(slots, 1+rng.IntN(slots), 1+rng.IntN(4))
	type result struct {
		release func()
		err     error
	}
	type job struct {
		client string
		seq    int
		done   chan result
		cancel context.CancelFunc
	}
	var pending []*job // not yet answered
	var running []func()
	lastGranted := map[string]int{}
	// settle waits until every pending job is either answered or counted as
	// waiting, then takes the answers in.
	settle := func() {
		waitFor(t, func() bool {
			answered := 0
			for _, j := range pending {
				answered += len(j.done)
			}
			return q.Stats().Waiting == len(pending)-answered
		})
		kept := pending[:0]
		for _, j := range pending {
			select {
			case r := <-j.done:
				switch {
				case r.err == nil:
					if j.seq < lastGranted[j.client] {
						t.Fatalf("client %s: work %d granted after %d", j.client, j.seq, lastGranted[j.client])
					}
					lastGranted[j.client] = j.seq
					running = append(running, r.release)
				case errors.Is(r.err, ErrBusy), errors.Is(r.err, context.Canceled):
				default:
					t.Fatal(r.err)
				}
				j.cancel()
			default:
				kept = append(kept, j)
			}
		}
		pending = kept
		s := q.Stats()
		if s.Running != len(running) {
			t.Fatalf("%d running, %d by the test", s.Running, len(running))
		}
		q.mu.Lock()
		idle := q.free > 0 && q.backlog.Len() > 0
		counted := 0
		for _, c := range q.clients {
			counted += c.running - c.borrowed
			if c.running-c.borrowed > max(q.perClient, q.slots-q.perClient) {
				t.Fatalf("client %s holds %d slots, more than %d", c.name, c.running-c.borrowed, q.perClient)
			}
		}
		if counted > slots || counted != slots-q.free {
			t.Fatalf("%d slots counted as held, %d free, of %d", counted, q.free, slots)
		}
		if q.lone.Load() != nil && len(q.clients) > 0 {
			t.Fatalf("a lone spell beside %d other clients", len(q.clients))
		}
		q.mu.Unlock()
		if idle {
			t.Fatalf("a slot is free while work that may take it waits (%+v)", s)
		}
	}
	for seq := 1; seq <= 300; seq++ {
		switch op := rng.IntN(10); {
		case op < 5:
			ctx, cancel := context.WithCancel(t.Context())
			j := &job{fmt.Sprint("c", rng.IntN(4)), seq, make(chan result, 1), cancel}
			pending = append(pending, j)
			go func() {
				r, err := q.Acquire(ctx, j.client)
				j.done <- result{r, err}
			}()
		case op < 6 && len(pending) > 0:
			pending[rng.IntN(len(pending))].cancel()
		case op < 7:
			clock.Advance(loneGrace) // a client left alone may have the queue to itself
		case len(running) > 0:
			i := rng.IntN(len(running))
			clock.Advance(time.Duration(rng.IntN(5000)) * time.Microsecond)
			running[i]()
			running = append(running[:i], running[i+1:]...)
		}
		settle()
	}
	for len(running) > 0 || len(pending) > 0 {
		for _, r := range running {
			r()
		}
		running = nil
		settle()
	}
	if s := q.Stats(); s.Running != 0 || s.Waiting != 0 {
		t.Errorf("at the end: %+v", s)
	}
}

// BenchmarkAcquireRelease is the queue's cost to a lone client's request.
func BenchmarkAcquireRelease(b *testing.B) {
	q := NewQueue(4, 4, 256)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, _ := q.Acquire(ctx, "127.0.0.1")
		r()
	}
}

// BenchmarkAcquireReleaseParallel is the same from many goroutines of a few clients,
// with more work than slots, so that most of it queues.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	q := NewQueue(2, 2, 1<<20)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		name := fmt.Sprint("10.0.0.", n.Add(1)%4)
		for pb.Next() {
			r, _ := q.Acquire(ctx, name)
			r()
		}
	})
}

// TestRandomFairness: clients with random costs that always have work waiting
// are each given about the same time in the slot (start-time fair queuing), so a
// client's grants go as the inverse of its work's cost, whatever the mix.
func TestRandomFairness(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			q, clock := newTestQueue(1, 1000)
			names := []string{"c0", "c1", "c2", "c3", "c4"}[:2+rng.IntN(4)]
			cost := map[string]time.Duration{}
			pending := map[string][]<-chan func(){}
			hold, _ := q.Acquire(t.Context(), "holder")
			for _, n := range names {
				cost[n] = time.Duration(1+rng.IntN(10)) * time.Millisecond
				for range 201 { // more than the grants: backlogged to the end
					pending[n] = append(pending[n], acquireAsync(t, q, t.Context(), n))
				}
			}
			hold()
			served := map[string]time.Duration{}
			for range 200 {
				var name string
				var release func()
				waitFor(t, func() bool {
					for _, n := range names {
						if len(pending[n]) > 0 && granted(pending[n][0]) {
							name, release = n, <-pending[n][0]
							pending[n] = pending[n][1:]
							return true
						}
					}
					return false
				})
				clock.Advance(cost[name])
				served[name] += cost[name]
				release()
			}
			var least, most time.Duration = 1 << 62, 0
			for _, n := range names {
				least, most = min(least, served[n]), max(most, served[n])
			}
			// Each client's share of the slot's time is equal within one piece of
			// the dearest work, and a tenth of the total besides.
			var total time.Duration
			for _, d := range served {
				total += d
			}
			if most-least > 10*time.Millisecond+total/10 {
				t.Errorf("costs %v: time served %v, want about equal", cost, served)
			}
			for left := 1; left > 0; { // liveness: everything waiting is granted in the end
				waitFor(t, func() bool {
					left = 0
					for _, n := range names {
						left += len(pending[n])
						if len(pending[n]) > 0 && granted(pending[n][0]) {
							(<-pending[n][0])()
							pending[n] = pending[n][1:]
							return true
						}
					}
					return left == 0
				})
			}
		})
	}
}
