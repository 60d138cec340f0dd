package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The store's writes and reads of its records. (The Store, its write path and its
// change feed are in store.go.)

// NewUser is the input to CreateUsers.
type NewUser struct {
	Name  string
	Email string
}

// CreateUsers validates every input and then stores them all at once, or none; with
// more than one, the error of the first invalid input names its 0-based position.
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
		next, err := s.users.newIDs(len(users), "user")
		if err != nil {
			return nil, err
		}
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
	Name, Email *string
	// Require, when set, is checked against the current record inside the write (an
	// If-Match): no other write can come between the check and the change.
	Require func(current *User) error
}

// UpdateUser changes the supplied fields of user id.
func (s *Store) UpdateUser(id int64, p UserPatch) (*User, error) {
	var u User
	err := s.write(func() (*change, error) {
		old, err := s.requireUser(id, p.Require)
		if err != nil {
			return nil, err
		}
		u = User{ID: old.ID, Name: old.Name, Email: old.Email, CreatedAt: old.CreatedAt}
		if p.Name != nil {
			u.Name = *p.Name
		}
		if p.Email != nil {
			u.Email = *p.Email
		}
		if u.Name, u.Email, err = validateUser(u.Name, u.Email); err != nil {
			return nil, err
		}
		return &change{Op: opPutUsers, Users: []*User{&u}}, nil
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// requireUser returns user id if it exists and passes require (nil: nothing to pass).
func (s *Store) requireUser(id int64, require func(*User) error) (*User, error) {
	old, ok := s.users.get(id)
	if !ok {
		return nil, userNotFound(id)
	}
	if require != nil {
		if err := require(old); err != nil {
			return nil, err
		}
	}
	return old, nil
}

// DeleteUser removes user id with its posts and comments (see cascade). It reports
// whether the user existed; the error is a storage failure.
func (s *Store) DeleteUser(id int64) (bool, error) { return s.DeleteUserIf(id, nil) }

// DeleteUserIf is DeleteUser when require, checked against the current record inside
// the write (as UserPatch.Require), passes; nil requires nothing. require's error is
// returned as it is.
func (s *Store) DeleteUserIf(id int64, require func(current *User) error) (bool, error) {
	err := s.write(func() (*change, error) {
		if _, err := s.requireUser(id, require); err != nil {
			return nil, err
		}
		return &change{Op: opDeleteUser, DeleteID: id}, nil
	})
	if e, ok := errors.AsType[*Error](err); ok && e.Kind == KindNotFound {
		return false, nil
	}
	return err == nil, err
}

func userNotFound(id int64) *Error { return notFound("user %d not found", id) }

// Reads. Each takes the read lock once and returns records that never change.

// User returns user id.
func (s *Store) User(id int64) (*User, bool) { return readRecord(s, &s.users, id) }

// Users returns every user in id order.
func (s *Store) Users() []*User { return readTable(s, &s.users) }

// UsersAfter returns up to n users with ids above after, in id order: a list read a
// page at a time, which users deleted or added meanwhile do not shift.
func (s *Store) UsersAfter(after int64, n int) []*User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _ := slices.BinarySearch(s.users.ids, after+1)
	return slices.Clone(s.users.recs[i:min(i+n, len(s.users.recs))])
}

// UserQuery selects a page of users.
type UserQuery struct {
	Search   string // keep users whose name or email contains it, case-insensitively
	SortBy   string // "name", "email", or "" for id order
	Page     int    // 1-based
	PageSize int
}

// UserPage answers q: search, then sort, then count, then page (docs/rest.md). The sorted
// indexes are kept by the store, so no request sorts.
func (s *Store) UserPage(q UserQuery) (items []*User, total int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var order *sortedUsers
	switch q.SortBy {
	case "name":
		order = &s.usersByName
	case "email":
		order = &s.usersByEmail
	}
	n := len(s.users.recs)
	skip := -1
	if q.Page >= 1 && q.Page-1 <= n/max(q.PageSize, 1) { // (page-1)*pageSize may not fit an int
		skip = (q.Page - 1) * q.PageSize
	}
	items = []*User{}
	if q.Search == "" {
		switch {
		case skip < 0 || skip >= n:
		case order != nil:
			items = order.page(skip, q.PageSize)
		default:
			items = slices.Clone(s.users.recs[skip:min(skip+q.PageSize, n)])
		}
		return items, n
	}
	needle := foldKey(q.Search)
	match := func(u *User) bool {
		if strings.Contains(u.nameKey, needle) || strings.Contains(u.emailKey, needle) {
			if total >= skip && skip >= 0 && len(items) < q.PageSize {
				items = append(items, u)
			}
			total++
		}
		return true
	}
	if order != nil {
		order.each(match)
	} else {
		for _, u := range s.users.recs {
			match(u)
		}
	}
	return items, total
}

// CreatePost stores a new post by user userID.
func (s *Store) CreatePost(userID int64, title, content string) (*Post, error) {
	title, content, err := validatePost(title, content)
	if err != nil {
		return nil, err
	}
	var p *Post
	err = s.write(func() (*change, error) {
		if _, ok := s.users.get(userID); !ok {
			return nil, userNotFound(userID)
		}
		id, err := s.posts.newIDs(1, "post")
		if err != nil {
			return nil, err
		}
		p = &Post{ID: id, UserID: userID, Title: title, Content: content, CreatedAt: s.now()}
		return &change{Op: opPutPost, Post: p, created: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// AddAuthoredComment stores a new comment by authorID on post postID, and returns it
// with its author as the comment was made.
func (s *Store) AddAuthoredComment(postID, authorID int64, text string) (AuthoredComment, error) {
	text, err := validateComment(text)
	if err != nil {
		return AuthoredComment{}, err
	}
	var c AuthoredComment
	err = s.write(func() (*change, error) {
		if _, ok := s.posts.get(postID); !ok {
			return nil, notFound("post %d not found", postID)
		}
		author, ok := s.users.get(authorID)
		if !ok {
			return nil, userNotFound(authorID)
		}
		id, err := s.comments.newIDs(1, "comment")
		if err != nil {
			return nil, err
		}
		c.Comment = &Comment{ID: id, PostID: postID, AuthorID: authorID, Text: text, CreatedAt: s.now()}
		c.Author = author
		return &change{Op: opPutComment, Comment: c.Comment}, nil
	})
	if err != nil {
		return AuthoredComment{}, err
	}
	return c, nil
}

// NewOrder is the input to CreateOrder, and the JSON body of POST
// /api/users/{userId}/orders.
type NewOrder struct {
	ProductID    int64  `json:"productId"`
	Quantity     int64  `json:"quantity"`
	CustomerName string `json:"customerName"` // defaults to the user's name
}

// CreateOrder stores a new order placed by user userID.
func (s *Store) CreateOrder(userID int64, in NewOrder) (*Order, error) {
	name, invalid := validateOrder(in.CustomerName, in.Quantity)
	var o *Order
	err := s.write(func() (*change, error) {
		u, ok := s.users.get(userID)
		if !ok {
			return nil, userNotFound(userID)
		}
		var bad fieldProblems
		if invalid != nil {
			bad = maps.Clone(asError(invalid).Fields)
		}
		if _, ok := s.products.get(in.ProductID); !ok {
			bad.add("productId", "must name an existing product")
		}
		if err := bad.err(); err != nil {
			return nil, err
		}
		if name == "" {
			name = u.Name
		}
		id, err := s.orders.newIDs(1, "order")
		if err != nil {
			return nil, err
		}
		o = &Order{ID: id, UserID: userID, ProductID: in.ProductID, CustomerName: name, OrderDate: s.now(), Quantity: in.Quantity}
		return &change{Op: opPutOrder, Order: o}, nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Post returns post id.
func (s *Store) Post(id int64) (*Post, bool) { return readRecord(s, &s.posts, id) }

// PostsByUser returns user userID's posts in id order, at most limit of them
// (limit < 0: all).
func (s *Store) PostsByUser(userID int64, limit int) []*Post {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := s.postsByUser[userID]
	if limit >= 0 && limit < len(ids) {
		ids = ids[:limit]
	}
	return lookup(&s.posts, ids)
}

// AuthoredComment is a comment with its author, read together under one lock. Read
// apart, the author could be deleted in between: the delete removes the author's
// comments too, but after this one was read.
type AuthoredComment struct {
	*Comment
	Author *User
}

// AuthoredCommentsOnPost returns the comments on post postID in id order, each with
// its author.
func (s *Store) AuthoredCommentsOnPost(postID int64) []AuthoredComment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := s.commentsByPost[postID]
	out := make([]AuthoredComment, len(ids))
	for i, id := range ids {
		c := s.comments.byID[id]
		out[i] = AuthoredComment{c, s.users.byID[c.AuthorID]} // the cascade keeps an author for every comment
	}
	return out
}

// Product returns product id.
func (s *Store) Product(id int64) (*Product, bool) { return readRecord(s, &s.products, id) }

// UserValues, PostValues, ProductValues and OrderValues are the records in id order
// as []any, the form the query engines take lists in. The list is shared by every
// caller until the collection next changes: callers must not modify it.
func (s *Store) UserValues() []any    { return tableValues(s, &s.users) }
func (s *Store) PostValues() []any    { return tableValues(s, &s.posts) }
func (s *Store) ProductValues() []any { return tableValues(s, &s.products) }
func (s *Store) OrderValues() []any   { return tableValues(s, &s.orders) }

func tableValues[T any](s *Store, t *table[T]) []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return t.sharedValues()
}

// values converts records to []any, the form the query engines take lists in.
func values[T any](recs []*T) []any {
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = r
	}
	return out
}

// Order returns order id.
func (s *Store) Order(id int64) (*Order, bool) { return readRecord(s, &s.orders, id) }

func readRecord[T any](s *Store, t *table[T], id int64) (*T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return t.get(id)
}

func readTable[T any](s *Store, t *table[T]) []*T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return t.all()
}

// OrdersByUser returns the orders placed by user userID in id order; ok is false when
// there is no such user.
func (s *Store) OrdersByUser(userID int64) (orders []*Order, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.users.get(userID); !ok {
		return nil, false
	}
	return lookup(&s.orders, s.ordersByUser[userID]), true
}

// OrdersByProduct returns the orders of product productID in id order.
func (s *Store) OrdersByProduct(productID int64) []*Order {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return lookup(&s.orders, s.ordersByProduct[productID])
}

// lookup returns the records with the given ids, never nil.
func lookup[T any](t *table[T], ids []int64) []*T {
	out := make([]*T, len(ids))
	for i, id := range ids {
		out[i] = t.byID[id]
	}
	return out
}
