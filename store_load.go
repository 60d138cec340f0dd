package main

import (
	"slices"
	"sync"
)

// Bulk loads: a dataset, a snapshot or a journal replay fills the store with every
// index appended to, and sorts each once at the end (see beginLoad).

// beginLoad and endLoad bracket a bulk load (a dataset, a snapshot, a journal replay):
// in between, tables and indexes are appended to, and endLoad sorts them once.
// The caller holds the write lock.
func (s *Store) beginLoad() { s.loading = true }

func (s *Store) endLoad() {
	s.loading = false
	s.users.sortLoaded()
	s.posts.sortLoaded()
	s.comments.sortLoaded()
	s.products.sortLoaded()
	s.orders.sortLoaded()
	for _, x := range []ownerIndex{s.postsByUser, s.commentsByPost, s.commentsByAuthor, s.ordersByUser, s.ordersByProduct} {
		x.sortLoaded()
	}
	// A user replaced or deleted during the load left its old record in the sorted indexes:
	// they are rebuilt from the current users then. The two sorts are the bulk of a
	// large load; they run side by side.
	var wg sync.WaitGroup
	for _, o := range []*sortedUsers{&s.usersByName, &s.usersByEmail} {
		if s.replacedInLoad {
			o.chunks, o.loaded = nil, slices.Clone(s.users.recs)
		}
		wg.Go(o.sortLoaded)
	}
	wg.Wait()
	s.replacedInLoad = false
}

// The put methods of a bulk load (the caller is in one): a record with a new id is
// appended with one lookup and one insert, a record that replaces another goes the
// usual way. A user's keys must be set (see setKeys).

func (s *Store) putLoadedUser(u *User) {
	if !s.users.insertLoaded(u.ID, u) {
		s.putUser(u)
		return
	}
	s.usersByName.loaded = append(s.usersByName.loaded, u)
	s.usersByEmail.loaded = append(s.usersByEmail.loaded, u)
}

func (s *Store) putLoadedPost(p *Post) {
	if !s.posts.insertLoaded(p.ID, p) {
		s.putPost(p)
		return
	}
	s.postsByUser.add(p.UserID, p.ID, true)
}

func (s *Store) putLoadedComment(c *Comment) {
	if !s.comments.insertLoaded(c.ID, c) {
		s.putComment(c)
		return
	}
	s.commentsByPost.add(c.PostID, c.ID, true)
	s.commentsByAuthor.add(c.AuthorID, c.ID, true)
}

func (s *Store) putLoadedProduct(p *Product) {
	if !s.products.insertLoaded(p.ID, p) {
		s.products.put(p.ID, p, true)
	}
}

func (s *Store) putLoadedOrder(o *Order) {
	if !s.orders.insertLoaded(o.ID, o) {
		s.putOrder(o)
		return
	}
	if o.UserID != 0 {
		s.ordersByUser.add(o.UserID, o.ID, true)
	}
	s.ordersByProduct.add(o.ProductID, o.ID, true)
}

// setKeys sets the users' case-folded keys, on every processor at once.
func setKeys(users []*User) {
	var wg sync.WaitGroup
	for _, part := range splitWork(len(users)) {
		wg.Go(func() {
			for _, u := range users[part.lo:part.hi] {
				u.nameKey, u.emailKey = foldKey(u.Name), foldKey(u.Email)
			}
		})
	}
	wg.Wait()
}

// hasRecords reports whether any collection holds a record.
func (s *Store) hasRecords() bool {
	return len(s.users.byID)+len(s.posts.byID)+len(s.comments.byID)+len(s.products.byID)+len(s.orders.byID) > 0
}

// adopt moves the records and indexes of from, a store just bulk-loaded, into s,
// which holds no records (and so no index entries either); s keeps its own last ids
// where they are larger, as a load would.
func (s *Store) adopt(from *Store) {
	lastIDs := [...]int64{s.users.lastID, s.posts.lastID, s.comments.lastID, s.products.lastID, s.orders.lastID}
	s.users, s.posts, s.comments, s.products, s.orders = from.users, from.posts, from.comments, from.products, from.orders
	s.users.lastID = max(s.users.lastID, lastIDs[0])
	s.posts.lastID = max(s.posts.lastID, lastIDs[1])
	s.comments.lastID = max(s.comments.lastID, lastIDs[2])
	s.products.lastID = max(s.products.lastID, lastIDs[3])
	s.orders.lastID = max(s.orders.lastID, lastIDs[4])
	s.postsByUser, s.commentsByPost, s.commentsByAuthor = from.postsByUser, from.commentsByPost, from.commentsByAuthor
	s.ordersByUser, s.ordersByProduct = from.ordersByUser, from.ordersByProduct
	s.usersByName, s.usersByEmail = from.usersByName, from.usersByEmail
}
