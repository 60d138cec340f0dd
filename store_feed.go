package main

import (
	"errors"
	"sync"
)

// The change feed: created users and posts, pushed to subscribers in commit order.

// ErrSlowSubscriber ends a subscription whose buffer filled up: the store never waits
// for a reader, so one that falls behind is cut off rather than silently skipped.
var ErrSlowSubscriber = errors.New("subscriber fell behind and was disconnected")

// errFeedClosed ends every subscription when the store shuts down.
var errFeedClosed = errors.New("server is shutting down")

// Subscription receives created records (*User, *Post) on C. When the subscription is
// ended by the store, C carries the reason (an error) last; then C is closed.
type Subscription struct {
	C      <-chan any
	c      chan any // one slot more than the buffer, kept free for the final error
	want   func(any) bool
	notify func() // called after each send on c, and after c is closed; may be nil
	feed   *feed
	err    error // set under feed.mu before c is closed
}

// Err is why C was closed: ErrSlowSubscriber, the shutdown, or nil after Close.
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

// Subscribe starts a subscription to the created records want accepts (nil: all), with
// room for buffer pending ones. Records go straight into the subscriber's channel: no
// goroutine stands between the store and a reader. notify, when not nil, is called
// after each record or error is put on C and after C is closed, so that a reader can
// wait for notify instead of keeping a goroutine waiting on C; a subscription that
// starts after CloseFeed is closed at once, without it. want and notify run while the
// feed is held, between one write and the next one's publication: they must be quick
// and must not call the store.
func (s *Store) Subscribe(buffer int, want func(any) bool, notify func()) *Subscription {
	c := make(chan any, max(buffer, 1)+1)
	sub := &Subscription{C: c, c: c, want: want, notify: notify, feed: &s.feed}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.closed {
		sub.err = errFeedClosed
		c <- errFeedClosed
		close(c)
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
		s.feed.dropLocked(sub, errFeedClosed)
	}
}

// publishLocked hands v to every subscriber that wants it; the caller holds f.mu.
func (f *feed) publishLocked(v any) {
	for sub := range f.subs {
		switch {
		case sub.want != nil && !sub.want(v):
		case len(sub.c) < cap(sub.c)-1:
			sub.c <- v // cannot block: there is room, and only publish sends
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
	if err != nil {
		sub.c <- err // the slot kept free by publish
	}
	close(sub.c)
	if sub.notify != nil {
		sub.notify()
	}
}
