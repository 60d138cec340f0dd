package main

import (
	"errors"
	"slices"
	"sync"
	"time"

	"quartet/internal/journal"
)

// Store is the one store behind all four surfaces: five collections of immutable
// records, and the indexes their readers need, behind a single RWMutex. A mutation is
// validated against the current state, then turned into a change with its ids and
// times filled in, and only then applied; apply cannot fail, so a reader never sees
// half a write, and a journal of changes replays to the same state.
type Store struct {
	mu       sync.RWMutex
	users    table[User]
	posts    table[Post]
	comments table[Comment]
	products table[Product]
	orders   table[Order]

	postsByUser      ownerIndex
	commentsByPost   ownerIndex
	commentsByAuthor ownerIndex
	ordersByUser     ownerIndex
	ordersByProduct  ownerIndex
	usersByName      sortedUsers
	usersByEmail     sortedUsers

	// loading defers sorting to endLoad, so a bulk load sorts once; replacedInLoad
	// notes that the sorted user indexes hold a replaced user, for endLoad to rebuild.
	loading, replacedInLoad bool

	feed      feed
	published publishQueue     // the in-memory store's changes on their way to the feed
	clock     func() time.Time // the source of creation times; tests replace it
	journal   *journal.Journal // nil: memory only
	broken    error            // why writes are refused (the journal failed), nil while they are not
}

// change is one committed mutation with everything decided: ids, times, normalised
// values.
type change struct {
	Op       string   `json:"op"`
	Users    []*User  `json:"users,omitempty"`
	Post     *Post    `json:"post,omitempty"`
	Comment  *Comment `json:"comment,omitempty"`
	Order    *Order   `json:"order,omitempty"`
	Product  *Product `json:"product,omitempty"`
	DeleteID int64    `json:"deleteId,omitempty"`

	created bool // it creates records subscribers hear of
}

// The change operations.
const (
	opPutUsers   = "putUsers" // create or replace users
	opDeleteUser = "deleteUser"
	opPutPost    = "putPost"
	opPutComment = "putComment"
	opPutOrder   = "putOrder"
	opPutProduct = "putProduct"
)

// NewStore returns an empty store.
func NewStore() *Store {
	s := &Store{clock: time.Now, usersByEmail: sortedUsers{byEmail: true}, feed: feed{subs: map[*Subscription]struct{}{}}}
	s.published.published.L = &s.published.mu
	return s
}

// now is the time a record is created: UTC, whole seconds, so every surface shows the
// same instant in its own format (RFC 3339 on HTTP, "yyyy-MM-dd HH:mm:ss" on gRPC).
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Second) }

// apply performs c on the store. The caller holds the write lock.
func (s *Store) apply(c *change) {
	switch c.Op {
	case opPutUsers:
		for _, u := range c.Users {
			u.nameKey, u.emailKey = foldKey(u.Name), foldKey(u.Email)
			s.putUser(u)
		}
	case opDeleteUser:
		s.deleteUser(c.DeleteID)
	case opPutPost:
		s.putPost(c.Post)
	case opPutComment:
		s.putComment(c.Comment)
	case opPutOrder:
		s.putOrder(c.Order)
	case opPutProduct:
		s.products.put(c.Product.ID, c.Product, s.loading)
	default:
		panic("store: unknown change " + c.Op)
	}
}

// The put methods store a record in its table and its indexes, replacing the record
// with its id, if any. A user's keys must be set.

func (s *Store) putUser(u *User) {
	s.unsortUser(s.users.put(u.ID, u, s.loading))
	s.usersByName.add(u, s.loading)
	s.usersByEmail.add(u, s.loading)
}

// unsortUser takes u (nil: none) out of the sorted indexes, or during a bulk load
// notes that endLoad must rebuild them.
func (s *Store) unsortUser(u *User) {
	switch {
	case u == nil:
	case s.loading:
		s.replacedInLoad = true
	default:
		s.usersByName.remove(u)
		s.usersByEmail.remove(u)
	}
}

// deleteUser removes user id, the user's posts, every comment on those posts and every
// comment the user wrote. Orders stay: they are sales records.
func (s *Store) deleteUser(id int64) {
	for _, postID := range slices.Clone(s.postsByUser[id]) {
		for _, commentID := range slices.Clone(s.commentsByPost[postID]) {
			s.removeComment(commentID)
		}
		if p, ok := s.posts.get(postID); ok {
			s.postsByUser.remove(p.UserID, postID)
			s.posts.remove(postID)
		}
	}
	for _, commentID := range slices.Clone(s.commentsByAuthor[id]) {
		s.removeComment(commentID)
	}
	if u, ok := s.users.get(id); ok {
		s.unsortUser(u)
		s.users.remove(id)
	}
}

func (s *Store) removeComment(id int64) {
	if c, ok := s.comments.get(id); ok {
		s.commentsByPost.remove(c.PostID, id)
		s.commentsByAuthor.remove(c.AuthorID, id)
		s.comments.remove(id)
	}
}

func (s *Store) putPost(p *Post) {
	if old := s.posts.put(p.ID, p, s.loading); old != nil {
		s.postsByUser.remove(old.UserID, old.ID)
	}
	s.postsByUser.add(p.UserID, p.ID, s.loading)
}

func (s *Store) putComment(c *Comment) {
	if old := s.comments.put(c.ID, c, s.loading); old != nil {
		s.commentsByPost.remove(old.PostID, old.ID)
		s.commentsByAuthor.remove(old.AuthorID, old.ID)
	}
	s.commentsByPost.add(c.PostID, c.ID, s.loading)
	s.commentsByAuthor.add(c.AuthorID, c.ID, s.loading)
}

func (s *Store) putOrder(o *Order) {
	if old := s.orders.put(o.ID, o, s.loading); old != nil {
		s.ordersByUser.remove(old.UserID, old.ID)
		s.ordersByProduct.remove(old.ProductID, old.ID)
	}
	if o.UserID != 0 {
		s.ordersByUser.add(o.UserID, o.ID, s.loading)
	}
	s.ordersByProduct.add(o.ProductID, o.ID, s.loading)
}

// write makes one change: decide runs under the write lock, checks the input against
// the current state and returns the change (or an error, and nothing happens). With a
// journal, the change is on disk before write returns, so a caller acknowledges only
// what survives a crash; one the journal fails to store is rolled back first.
func (s *Store) write(decide func() (*change, error)) error {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return errNotStored()
	}
	if s.journal != nil && s.journal.Refuses() != nil { // at its bound: snapshots have not kept up
		s.mu.Unlock()
		return &Error{Kind: KindExhausted, Message: journal.ErrBound.Error()}
	}
	c, err := decide()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var pending *journal.Pending
	if s.journal != nil {
		// In apply order, as the lock is held; undoFor before apply changes what it sees.
		pending = s.journal.Append(&journaled{s, c, s.undoFor(c)})
	}
	s.apply(c)
	// Queued under the lock, so in commit order; told after it, so that no reader or
	// writer waits while a thousand subscribers are told.
	publish := pending == nil && c.created
	if publish {
		s.published.add(c)
	}
	s.mu.Unlock()
	if publish {
		s.published.drain(s.publish)
	}
	if pending != nil && pending.Wait() != nil {
		return errNotStored() // the journal logged why
	}
	return nil
}

// publishQueue hands changes to the feed in commit order, outside the store's lock.
// Whichever writer finds no one publishing publishes everything queued until the queue
// is empty, so one goroutine at a time publishes; a writer that finds maxPendingPublish
// waiting waits for the publisher, so writers cannot outrun a slow fan-out. (The
// durable store's flusher publishes, in order, after the fsync.)
type publishQueue struct {
	mu         sync.Mutex
	published  sync.Cond // signalled, with mu, after each batch is published
	queue      []*change
	publishing bool
}

const maxPendingPublish = 1024

// add queues c; the caller holds the store's lock, so the order is commit order.
func (q *publishQueue) add(c *change) {
	q.mu.Lock()
	q.queue = append(q.queue, c)
	q.mu.Unlock()
}

// drain publishes what is queued, unless another goroutine already is: that one
// publishes this one's change too, and this one waits only while the queue is full.
func (q *publishQueue) drain(publish func(*change)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.publishing {
		if len(q.queue) < maxPendingPublish {
			return
		}
		q.published.Wait()
	}
	q.publishing = true
	for len(q.queue) > 0 {
		batch := q.queue
		q.queue = nil
		q.mu.Unlock()
		for i, c := range batch {
			publish(c)
			batch[i] = nil
		}
		q.mu.Lock()
		q.published.Broadcast()
	}
	q.publishing = false
	q.published.Broadcast()
}

// errNotStored answers a write the store could not make durable; the journal logged
// why, once, and no client sees it.
func errNotStored() *Error {
	return &Error{Kind: KindInternal, Message: "internal server error"}
}

// Degraded says why the store's durability is degraded while it still serves and
// stores every write it acknowledges (snapshots fail, docs/durability.md), or "".
func (s *Store) Degraded() string {
	if s.journal == nil {
		return ""
	}
	return s.journal.Health()
}

// Unavailable says why the store refuses writes, or "" when it accepts them.
func (s *Store) Unavailable() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.broken == nil {
		return ""
	}
	return s.broken.Error()
}

// undo is what rolls one applied change back: the records it replaced or removed,
// and the last ids before it.
type undo struct {
	lastIDs [5]int64
	records
}

// records are some of each table's records; a snapshot's body is their JSON.
type records struct {
	Users    []*User    `json:"users"`
	Posts    []*Post    `json:"posts"`
	Comments []*Comment `json:"comments"`
	Products []*Product `json:"products"`
	Orders   []*Order   `json:"orders"`
}

// putAll stores r's records, whose users' keys are set. The caller holds the write lock.
func (s *Store) putAll(r *records) {
	for _, u := range r.Users {
		s.putUser(u)
	}
	for _, p := range r.Posts {
		s.putPost(p)
	}
	for _, c := range r.Comments {
		s.putComment(c)
	}
	for _, p := range r.Products {
		s.products.put(p.ID, p, s.loading)
	}
	for _, o := range r.Orders {
		s.putOrder(o)
	}
}

// undoFor records what applying c will replace or remove; for a change that only
// creates records (most writes), only the last ids. The caller holds the write lock.
func (s *Store) undoFor(c *change) undo {
	u := undo{lastIDs: [5]int64{s.users.lastID, s.posts.lastID, s.comments.lastID, s.products.lastID, s.orders.lastID}}
	switch c.Op {
	case opPutUsers:
		for _, nu := range c.Users {
			u.Users = appendOld(u.Users, &s.users, nu.ID)
		}
	case opDeleteUser:
		u.Users = appendOld(u.Users, &s.users, c.DeleteID)
		// What the cascade removes (deleteUser); a comment listed twice is put back twice.
		u.Posts = lookup(&s.posts, s.postsByUser[c.DeleteID])
		for _, p := range u.Posts {
			u.Comments = append(u.Comments, lookup(&s.comments, s.commentsByPost[p.ID])...)
		}
		u.Comments = append(u.Comments, lookup(&s.comments, s.commentsByAuthor[c.DeleteID])...)
	case opPutPost:
		u.Posts = appendOld(u.Posts, &s.posts, c.Post.ID)
	case opPutComment:
		u.Comments = appendOld(u.Comments, &s.comments, c.Comment.ID)
	case opPutOrder:
		u.Orders = appendOld(u.Orders, &s.orders, c.Order.ID)
	case opPutProduct:
		u.Products = appendOld(u.Products, &s.products, c.Product.ID)
	}
	return u
}

// appendOld appends record id of t to olds, if there is one.
func appendOld[T any](olds []*T, t *table[T], id int64) []*T {
	if old, ok := t.get(id); ok {
		return append(olds, old)
	}
	return olds
}

// rollback undoes c, the latest change applied: the records c put are removed, those
// it replaced or removed put back. The caller holds the write lock.
func (s *Store) rollback(c *change, u *undo) {
	switch c.Op {
	case opPutUsers:
		for _, nu := range c.Users {
			s.unsortUser(nu)
			s.users.remove(nu.ID)
		}
	case opPutPost:
		s.postsByUser.remove(c.Post.UserID, c.Post.ID)
		s.posts.remove(c.Post.ID)
	case opPutComment:
		s.removeComment(c.Comment.ID)
	case opPutOrder:
		s.ordersByUser.remove(c.Order.UserID, c.Order.ID)
		s.ordersByProduct.remove(c.Order.ProductID, c.Order.ID)
		s.orders.remove(c.Order.ID)
	case opPutProduct:
		s.products.remove(c.Product.ID)
	}
	s.putAll(&u.records)
	s.users.lastID, s.posts.lastID, s.comments.lastID, s.products.lastID, s.orders.lastID = u.lastIDs[0], u.lastIDs[1], u.lastIDs[2], u.lastIDs[3], u.lastIDs[4]
}

// publish tells subscribers about the records c created.
func (s *Store) publish(c *change) {
	if !c.created {
		return
	}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	for _, u := range c.Users {
		s.feed.publishLocked(u)
	}
	if c.Post != nil {
		s.feed.publishLocked(c.Post)
	}
}

// errStoreClosed refuses the writes after Close (calls a bounded shutdown cut).
var errStoreClosed = errors.New("the store is closed")

// Close flushes and closes the journal, if any; writes after it are refused.
func (s *Store) Close() error {
	if s.journal == nil {
		return nil
	}
	s.mu.Lock()
	if s.broken == nil {
		s.broken = errStoreClosed
	}
	s.mu.Unlock()
	return s.journal.Close()
}

// StoreStats are the figures /metrics reports about the store.
type StoreStats struct {
	Users, Posts, Comments, Products, Orders int
	Durable                                  bool          // false: memory only, Journal is zero
	Journal                                  journal.Stats // its writes, fsyncs, snapshot failures and bytes
}

// Stats returns the number of records in each table and the journal's counters.
func (s *Store) Stats() StoreStats {
	s.mu.RLock()
	st := StoreStats{Users: len(s.users.byID), Posts: len(s.posts.byID), Comments: len(s.comments.byID),
		Products: len(s.products.byID), Orders: len(s.orders.byID)}
	j := s.journal
	s.mu.RUnlock()
	if j != nil {
		st.Durable, st.Journal = true, j.Stats()
	}
	return st
}

// The change feed: created users and posts, pushed to subscribers in commit order.

// ErrSlowSubscriber ends a subscription whose buffer filled up: the store never waits
// for a reader, so one that falls behind is cut off rather than silently skipped.
var ErrSlowSubscriber = errors.New("subscriber fell behind and was disconnected")

// Subscription receives created records (*User, *Post), read with Next. A slow
// subscriber's last record is ErrSlowSubscriber; a shutdown ends every subscription
// plainly, as Close does.
type Subscription struct {
	want   func(any) bool
	notify func() // called after each record is queued, and at the end; may be nil
	feed   *feed
	limit  int // records that may wait to be read

	mu sync.Mutex
	// The records waiting to be read are queue[head:], the ending error last. It
	// grows as records wait, not before: most subscribers read each as it comes.
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
// did; what waits moves to the front before the queue grows.
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

// Close ends the subscription; it is safe to call more than once.
func (sub *Subscription) Close() {
	sub.feed.mu.Lock()
	defer sub.feed.mu.Unlock()
	sub.feed.dropLocked(sub, nil)
}

type feed struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
}

// Subscribe starts a subscription to the created records want accepts (nil: all), of
// which at most buffer may wait to be read: one more ends it with ErrSlowSubscriber.
// Records are queued straight from the store; notify, when not nil, is called after
// each and after the end, so a reader can wait for it instead of polling. A
// subscription that starts after CloseFeed has ended at once. want and notify run
// while the feed is held: they must be quick and must not call the store.
func (s *Store) Subscribe(buffer int, want func(any) bool, notify func()) *Subscription {
	sub := &Subscription{want: want, notify: notify, feed: &s.feed, limit: max(buffer, 1)}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.closed {
		sub.end(nil)
		return sub
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

func (f *feed) dropLocked(sub *Subscription, err error) {
	if _, ok := f.subs[sub]; !ok {
		return
	}
	delete(f.subs, sub)
	sub.end(err)
	if sub.notify != nil {
		sub.notify()
	}
}
