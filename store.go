package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store is the one store behind all four surfaces: five collections of immutable
// records behind a single RWMutex. Every mutation is first validated against the current
// state, then turned into a change with its ids and times filled in, and only then
// applied; apply cannot fail, so a reader never sees half a write, and a journal of
// changes replays to the same state.
type Store struct {
	mu       sync.RWMutex
	users    table[User]
	posts    table[Post]
	comments table[Comment]
	products table[Product]
	orders   table[Order]

	feed feed

	// clock is the source of creation times; tests replace it.
	clock func() time.Time

	journal *journal // nil: memory only
	broken  error    // set when the journal failed: writes are refused
}

// table is one collection: records by id plus the ids in ascending order, which is the
// order every list is served in. Ids only grow, so an insert appends.
type table[T any] struct {
	byID   map[int64]*T
	ids    []int64
	lastID int64
}

func (t *table[T]) get(id int64) (*T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

func (t *table[T]) put(id int64, v *T) {
	if t.byID == nil {
		t.byID = make(map[int64]*T)
	}
	if _, ok := t.byID[id]; !ok {
		if n := len(t.ids); n > 0 && t.ids[n-1] > id {
			i, _ := slices.BinarySearch(t.ids, id)
			t.ids = slices.Insert(t.ids, i, id)
		} else {
			t.ids = append(t.ids, id)
		}
	}
	t.byID[id] = v
	t.lastID = max(t.lastID, id)
}

func (t *table[T]) remove(id int64) {
	if _, ok := t.byID[id]; !ok {
		return
	}
	delete(t.byID, id)
	if i, ok := slices.BinarySearch(t.ids, id); ok {
		t.ids = slices.Delete(t.ids, i, i+1)
	}
}

// all returns the records in id order.
func (t *table[T]) all() []*T {
	out := make([]*T, len(t.ids))
	for i, id := range t.ids {
		out[i] = t.byID[id]
	}
	return out
}

func (t *table[T]) nextID() int64 { return t.lastID + 1 }

// change is one committed mutation, with everything decided: ids, times, normalised
// values. Applying a change is deterministic and cannot fail.
type change struct {
	Op       string   `json:"op"`
	Users    []*User  `json:"users,omitempty"`
	Post     *Post    `json:"post,omitempty"`
	Comment  *Comment `json:"comment,omitempty"`
	Order    *Order   `json:"order,omitempty"`
	Product  *Product `json:"product,omitempty"`
	DeleteID int64    `json:"deleteId,omitempty"`

	// created marks a change that creates records subscribers hear of.
	created bool
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

// removeSet is what deleting a user takes with it.
type removeSet struct {
	posts, comments []int64
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{clock: time.Now} }

// now is the time a record is created: UTC, whole seconds, so every surface shows the
// same instant in its own format (RFC 3339 on HTTP, "yyyy-MM-dd HH:mm:ss" on gRPC).
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Second) }

// apply performs c on the store. The caller holds the write lock.
func (s *Store) apply(c *change) {
	switch c.Op {
	case opPutUsers:
		for _, u := range c.Users {
			s.users.put(u.ID, u)
		}
	case opDeleteUser:
		rm := s.cascade(c.DeleteID)
		for _, id := range rm.comments {
			s.comments.remove(id)
		}
		for _, id := range rm.posts {
			s.posts.remove(id)
		}
		s.users.remove(c.DeleteID)
	case opPutPost:
		s.posts.put(c.Post.ID, c.Post)
	case opPutComment:
		s.comments.put(c.Comment.ID, c.Comment)
	case opPutOrder:
		s.orders.put(c.Order.ID, c.Order)
	case opPutProduct:
		s.products.put(c.Product.ID, c.Product)
	default:
		panic("store: unknown change " + c.Op)
	}
}

// cascade lists what deleting user id removes: the user's posts, every comment on those
// posts and every comment the user wrote. Orders stay: they are sales records.
func (s *Store) cascade(userID int64) removeSet {
	var rm removeSet
	gone := map[int64]bool{}
	for _, id := range s.posts.ids {
		if s.posts.byID[id].UserID == userID {
			rm.posts = append(rm.posts, id)
			gone[id] = true
		}
	}
	for _, id := range s.comments.ids {
		c := s.comments.byID[id]
		if c.AuthorID == userID || gone[c.PostID] {
			rm.comments = append(rm.comments, id)
		}
	}
	return rm
}

// write makes one change: decide runs under the write lock, checks the input against
// the current state and returns the change (or an error, and nothing happens). The
// change is applied and, with a journal, written to disk before write returns, so a
// caller acknowledges only what survives a crash.
func (s *Store) write(decide func() (*change, error)) error {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return &Error{Kind: KindInternal, Message: s.broken.Error()}
	}
	c, err := decide()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var pending *pendingWrite
	if s.journal != nil {
		pending = s.journal.enqueue(c) // in apply order, as the lock is held
	}
	s.apply(c)
	if pending == nil {
		s.publish(c) // under the lock: subscribers hear of changes in commit order
	}
	s.mu.Unlock()
	if pending == nil {
		return nil
	}
	return pending.wait()
}

// publish tells subscribers about the records c created.
func (s *Store) publish(c *change) {
	if !c.created {
		return
	}
	switch c.Op {
	case opPutUsers:
		for _, u := range c.Users {
			s.feed.publish(Event{User: u})
		}
	case opPutPost:
		s.feed.publish(Event{Post: c.Post})
	}
}

// Close flushes and closes the journal, if any.
func (s *Store) Close() error {
	if s.journal == nil {
		return nil
	}
	return s.journal.close()
}

// NewUser is the input to CreateUsers.
type NewUser struct {
	Name  string
	Email string
}

// CreateUsers validates every input and then stores them all at once, or none: the
// error of the first invalid input names its 0-based position when there is more than one.
func (s *Store) CreateUsers(in []NewUser) ([]*User, error) {
	if len(in) == 0 {
		return nil, nil
	}
	users := make([]*User, len(in))
	at := s.now()
	for i, nu := range in {
		name, email, err := validateUser(nu.Name, nu.Email)
		if err != nil {
			if len(in) > 1 {
				e := asError(err)
				return nil, &Error{Kind: e.Kind, Message: fmt.Sprintf("user %d: %s", i, e.Message), Fields: e.Fields}
			}
			return nil, err
		}
		users[i] = &User{Name: name, Email: email, CreatedAt: at}
	}
	err := s.write(func() (*change, error) {
		next := s.users.nextID()
		for i, u := range users {
			u.ID = next + int64(i)
		}
		return &change{Op: opPutUsers, Users: users, created: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return users, nil
}

// CreateUser stores one new user.
func (s *Store) CreateUser(name, email string) (*User, error) {
	users, err := s.CreateUsers([]NewUser{{name, email}})
	if err != nil {
		return nil, err
	}
	return users[0], nil
}

// UserPatch names the fields of a user to change; a nil field stays as it is.
type UserPatch struct {
	Name  *string
	Email *string
}

// UpdateUser changes the supplied fields of user id.
func (s *Store) UpdateUser(id int64, p UserPatch) (*User, error) {
	var u User
	err := s.write(func() (*change, error) {
		old, ok := s.users.get(id)
		if !ok {
			return nil, userNotFound(id)
		}
		u = *old
		if p.Name != nil {
			u.Name = *p.Name
		}
		if p.Email != nil {
			u.Email = *p.Email
		}
		name, email, err := validateUser(u.Name, u.Email)
		if err != nil {
			return nil, err
		}
		u.Name, u.Email = name, email
		return &change{Op: opPutUsers, Users: []*User{&u}}, nil
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// DeleteUser removes user id with its posts and comments (see cascade). It reports
// whether the user existed; the error is a storage failure.
func (s *Store) DeleteUser(id int64) (bool, error) {
	err := s.write(func() (*change, error) {
		if _, ok := s.users.get(id); !ok {
			return nil, userNotFound(id)
		}
		return &change{Op: opDeleteUser, DeleteID: id}, nil
	})
	if e, ok := errors.AsType[*Error](err); ok && e.Kind == KindNotFound {
		return false, nil
	}
	return err == nil, err
}

// CreatePost stores a new post by user userID.
func (s *Store) CreatePost(userID int64, title, content string) (*Post, error) {
	title = strings.TrimSpace(title)
	fields := map[string][]string{}
	if title == "" {
		fields["title"] = []string{"is required"}
	} else if len([]rune(title)) > 200 {
		fields["title"] = []string{"must be at most 200 characters"}
	}
	if len(content) > 100_000 {
		fields["content"] = []string{"must be at most 100000 bytes"}
	}
	if len(fields) > 0 {
		return nil, invalidFields(fields)
	}
	var p *Post
	err := s.write(func() (*change, error) {
		if _, ok := s.users.get(userID); !ok {
			return nil, userNotFound(userID)
		}
		p = &Post{ID: s.posts.nextID(), UserID: userID, Title: title, Content: content, CreatedAt: s.now()}
		return &change{Op: opPutPost, Post: p, created: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// AddComment stores a new comment by authorID on post postID.
func (s *Store) AddComment(postID, authorID int64, text string) (*Comment, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, invalidFields(map[string][]string{"text": {"is required"}})
	}
	if len(text) > 10_000 {
		return nil, invalidFields(map[string][]string{"text": {"must be at most 10000 bytes"}})
	}
	var c *Comment
	err := s.write(func() (*change, error) {
		if _, ok := s.posts.get(postID); !ok {
			return nil, notFound("post %d not found", postID)
		}
		if _, ok := s.users.get(authorID); !ok {
			return nil, userNotFound(authorID)
		}
		c = &Comment{ID: s.comments.nextID(), PostID: postID, AuthorID: authorID, Text: text, CreatedAt: s.now()}
		return &change{Op: opPutComment, Comment: c}, nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// NewOrder is the input to CreateOrder.
type NewOrder struct {
	ProductID    int64
	Quantity     int64
	CustomerName string // defaults to the user's name
}

// maxQuantity keeps quantities within the 32-bit integers every surface can carry.
const maxQuantity = 1<<31 - 1

// CreateOrder stores a new order placed by user userID.
func (s *Store) CreateOrder(userID int64, in NewOrder) (*Order, error) {
	var o *Order
	err := s.write(func() (*change, error) {
		u, ok := s.users.get(userID)
		if !ok {
			return nil, userNotFound(userID)
		}
		fields := map[string][]string{}
		if _, ok := s.products.get(in.ProductID); !ok {
			fields["productId"] = []string{"must name an existing product"}
		}
		if in.Quantity < 1 || in.Quantity > maxQuantity {
			fields["quantity"] = []string{"must be between 1 and 2147483647"}
		}
		name := strings.TrimSpace(in.CustomerName)
		if name == "" {
			name = u.Name
		} else if len([]rune(name)) > maxNameLength {
			fields["customerName"] = []string{"must be at most 100 characters"}
		}
		if len(fields) > 0 {
			return nil, invalidFields(fields)
		}
		o = &Order{ID: s.orders.nextID(), UserID: userID, ProductID: in.ProductID, CustomerName: name, OrderDate: s.now(), Quantity: in.Quantity}
		return &change{Op: opPutOrder, Order: o}, nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

func userNotFound(id int64) *Error { return notFound("user %d not found", id) }

// Reads. Each takes the read lock once and returns records that never change.

// User returns user id.
func (s *Store) User(id int64) (*User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.users.get(id)
}

// Users returns every user in id order.
func (s *Store) Users() []*User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.users.all()
}

// Post returns post id.
func (s *Store) Post(id int64) (*Post, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.posts.get(id)
}

// Posts returns every post in id order.
func (s *Store) Posts() []*Post {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.posts.all()
}

// PostsByUser returns user userID's posts in id order, at most limit of them
// (limit < 0: all).
func (s *Store) PostsByUser(userID int64, limit int) []*Post {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Post
	for _, id := range s.posts.ids {
		if limit >= 0 && len(out) >= limit {
			break
		}
		if p := s.posts.byID[id]; p.UserID == userID {
			out = append(out, p)
		}
	}
	return out
}

// CommentsOnPost returns the comments on post postID in id order.
func (s *Store) CommentsOnPost(postID int64) []*Comment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Comment
	for _, id := range s.comments.ids {
		if c := s.comments.byID[id]; c.PostID == postID {
			out = append(out, c)
		}
	}
	return out
}

// Comments returns every comment in id order.
func (s *Store) Comments() []*Comment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.comments.all()
}

// Product returns product id.
func (s *Store) Product(id int64) (*Product, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.products.get(id)
}

// Products returns every product in id order.
func (s *Store) Products() []*Product {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.products.all()
}

// Order returns order id.
func (s *Store) Order(id int64) (*Order, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.orders.get(id)
}

// Orders returns every order in id order.
func (s *Store) Orders() []*Order {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.orders.all()
}

// OrdersByUser returns the orders placed by user userID in id order; ok is false when
// there is no such user.
func (s *Store) OrdersByUser(userID int64) (orders []*Order, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.users.get(userID); !ok {
		return nil, false
	}
	out := []*Order{}
	for _, id := range s.orders.ids {
		if o := s.orders.byID[id]; o.UserID == userID {
			out = append(out, o)
		}
	}
	return out, true
}

// OrdersByProduct returns the orders of product productID in id order.
func (s *Store) OrdersByProduct(productID int64) []*Order {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Order
	for _, id := range s.orders.ids {
		if o := s.orders.byID[id]; o.ProductID == productID {
			out = append(out, o)
		}
	}
	return out
}

// The change feed: created users and posts, pushed to subscribers in commit order.

// Event is one created record: exactly one field is set.
type Event struct {
	User *User
	Post *Post
}

// ErrSlowSubscriber ends a subscription whose buffer filled up: the store never waits
// for a reader, so one that falls behind is cut off rather than silently skipped.
var ErrSlowSubscriber = errors.New("subscriber fell behind and was disconnected")

// errFeedClosed ends every subscription when the store shuts down.
var errFeedClosed = errors.New("server is shutting down")

// Subscription receives events on C until it is closed; then Err says why.
type Subscription struct {
	C    <-chan Event
	c    chan Event
	feed *feed
	err  error // set under feed.mu before c is closed
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

// Subscribe starts a subscription to created users and posts with room for buffer
// pending events.
func (s *Store) Subscribe(buffer int) *Subscription {
	c := make(chan Event, max(buffer, 1))
	sub := &Subscription{C: c, c: c, feed: &s.feed}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.closed {
		sub.err = errFeedClosed
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

func (f *feed) publish(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		select {
		case sub.c <- e:
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
	close(sub.c)
}
