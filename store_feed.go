package main

import (
	"errors"
	"sync"
)

// The change feed: created users and posts, pushed to subscribers in commit order.

// ErrSlowSubscriber ends a subscription whose buffer filled up: the store never waits
// for a reader, so one that falls behind is cut off rather than silently skipped.
var ErrSlowSubscriber = errors.New("subscriber fell behind and was disconnected")

// Subscription receives created records (*User, *Post), read with Next. When the
// store cuts a slow subscriber off, the reason (ErrSlowSubscriber) is the last record
// read; a shutdown ends every subscription plainly, as Close does, since it is no
// failure of the subscription: a GraphQL subscriber gets complete, then the
// WebSocket's going-away close.
type Subscription struct {
	want   func(any) bool
	notify func() // called after each record is queued, and at the end; may be nil
	feed   *feed
	limit  int   // records that may wait to be read
	err    error // set under feed.mu when the subscription ends

	mu sync.Mutex
	// The records waiting to be read are queue[head:], the ending error
	// last. The queue grows as records wait, not before: most subscribers
	// read each record as it comes, and a server holds thousands of them.
	queue []any
	head  int
	ended bool // nothing more will be queued
}

// Next returns the oldest record not yet read, and ok true. When none is waiting
// it returns ok false, and ended true if none will come.
func (sub *Subscription) Next() (v any, ok, ended bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.head == len(sub.queue) {
		if cap(sub.queue) > smallQueue {
			sub.queue, sub.head = nil, 0 // a burst's room is not kept for good
		}
		return nil, false, sub.ended
	}
	v = sub.queue[sub.head]
	sub.queue[sub.head] = nil
	sub.head++
	if sub.head == len(sub.queue) {
		sub.queue, sub.head = sub.queue[:0], 0
	}
	return v, true, false
}

// smallQueue is the room a subscription's queue keeps once it is read empty.
const smallQueue = 8

// put queues v unless sub.limit records are waiting already, and reports whether it
// did. Room for v is made by moving what waits to the front before the queue
// grows, so a reader that keeps up slowly does not grow it past its limit.
func (sub *Subscription) put(v any) bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.queue)-sub.head >= sub.limit {
		return false
	}
	if len(sub.queue) == cap(sub.queue) && sub.head > 0 {
		n := copy(sub.queue, sub.queue[sub.head:])
		clear(sub.queue[n:])
		sub.queue, sub.head = sub.queue[:n], 0
	}
	sub.queue = append(sub.queue, v)
	return true
}

// end queues err, if any, as the last record.
func (sub *Subscription) end(err error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if err != nil {
		sub.queue = append(sub.queue, err)
	}
	sub.ended = true
}

// Err is why the subscription ended: ErrSlowSubscriber, or nil after Close, after the
// shutdown, or while it lasts.
func (sub *Subscription) Err() error {
	sub.feed.mu.Lock()
	defer sub.feed.mu.Unlock()
	return sub.err
}

// Close ends the subscription; it is safe to call more than once.
func (sub *Subscription) Close() { sub.feed.drop(sub, nil) }

type feed struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
}

// Subscribe starts a subscription to the created records want accepts (nil: all),
// of which at most buffer may wait to be read: one more ends the subscription with
// ErrSlowSubscriber. Records are queued straight from the store: no goroutine
// stands between the store and a reader. notify, when not nil, is called after
// each record is queued and after the subscription ends, so that a reader can wait
// for notify instead of polling; a subscription that starts after CloseFeed has
// ended at once, without it. want and notify run while the feed is held, between
// one write and the next one's publication: they must be quick and must not call
// the store.
func (s *Store) Subscribe(buffer int, want func(any) bool, notify func()) *Subscription {
	sub := &Subscription{want: want, notify: notify, feed: &s.feed, limit: max(buffer, 1)}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.closed {
		sub.end(nil)
		return sub
	}
	if s.feed.subs == nil {
		s.feed.subs = make(map[*Subscription]struct{})
	}
	s.feed.subs[sub] = struct{}{}
	return sub
}

// CloseFeed ends every subscription, for shutdown.
func (s *Store) CloseFeed() {
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	s.feed.closed = true
	for sub := range s.feed.subs {
		s.feed.dropLocked(sub, nil)
	}
}

// publishLocked hands v to every subscriber that wants it; the caller holds f.mu.
func (f *feed) publishLocked(v any) {
	for sub := range f.subs {
		switch {
		case sub.want != nil && !sub.want(v):
		case sub.put(v):
			if sub.notify != nil {
				sub.notify()
			}
		default:
			f.dropLocked(sub, ErrSlowSubscriber)
		}
	}
}

func (f *feed) drop(sub *Subscription, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(sub, err)
}

func (f *feed) dropLocked(sub *Subscription, err error) {
	if _, ok := f.subs[sub]; !ok {
		return
	}
	delete(f.subs, sub)
	sub.err = err
	sub.end(err)
	if sub.notify != nil {
		sub.notify()
	}
}
