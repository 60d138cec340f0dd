package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Store is the one store behind all four surfaces: five collections of immutable
// records behind a single RWMutex. Every mutation is first validated against the current
// state, then turned into a change with its ids and times filled in, and only then
// applied; apply cannot fail, so a reader never sees half a write, and a journal of
// changes replays to the same state.
//
// Beside the collections the store keeps the indexes its readers need, updated by apply:
// who owns which posts, comments and orders, and the users in name and email order, so
// no read sorts or scans more than its answer needs.
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

	// loading defers keeping the sorted indexes sorted until endLoad, so a bulk load sorts once
	// instead of inserting a million times; replacedInLoad notes that a load replaced
	// a user, leaving a stale entry in the sorted indexes for endLoad to drop.
	loading, replacedInLoad bool

	feed feed

	// clock is the source of creation times; tests replace it.
	clock func() time.Time

	journal *journal // nil: memory only
	broken  error    // set when the journal failed: writes are refused, and this is why
}

// table is one collection: records by id, and the same records in ascending id order,
// which is the order every list is served in. Ids only grow, so an insert appends.
type table[T any] struct {
	byID   map[int64]*T
	ids    []int64 // ascending
	recs   []*T    // recs[i] is the record with id ids[i]
	lastID int64
	loaded bool // ids appended out of order during a bulk load; sort before reading
	stale  bool // recs may hold a record replaced during the bulk load
}

func (t *table[T]) get(id int64) (*T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

func (t *table[T]) put(id int64, v *T, loading bool) {
	if t.byID == nil {
		t.byID = make(map[int64]*T)
	}
	_, exists := t.byID[id]
	t.byID[id] = v
	t.lastID = max(t.lastID, id)
	switch n := len(t.ids); {
	case loading && !exists:
		t.ids, t.recs = append(t.ids, id), append(t.recs, v)
		t.loaded = true
	case loading: // replaced during a load
		// The ids are in order unless this load appended some out of order; then
		// sortLoaded fixes recs up.
		if i, found := slices.BinarySearch(t.ids, id); found {
			t.recs[i] = v
		} else {
			t.stale = true
		}
	case !exists && (n == 0 || t.ids[n-1] < id):
		t.ids, t.recs = append(t.ids, id), append(t.recs, v)
	default:
		i, found := slices.BinarySearch(t.ids, id)
		if found {
			t.recs[i] = v
		} else {
			t.ids, t.recs = slices.Insert(t.ids, i, id), slices.Insert(t.recs, i, v)
		}
	}
}

func (t *table[T]) remove(id int64) {
	if _, ok := t.byID[id]; !ok {
		return
	}
	delete(t.byID, id)
	i, ok := slices.BinarySearch(t.ids, id)
	if !ok && t.loaded { // a bulk load may have appended out of order
		i = slices.Index(t.ids, id)
		ok = i >= 0
	}
	if ok {
		t.ids, t.recs = slices.Delete(t.ids, i, i+1), slices.Delete(t.recs, i, i+1)
	}
}

// sortLoaded restores id order after a bulk load. Records usually come in id order,
// so the common case is one pass that finds the ids sorted; an unsorted load sorts
// ids and records together, and only one that also replaced records (see put) looks
// every id up again.
func (t *table[T]) sortLoaded() {
	if !t.loaded {
		return
	}
	switch {
	case t.stale:
		slices.Sort(t.ids)
		t.ids = slices.Compact(t.ids)
		t.recs = t.recs[:len(t.ids)]
		for i, id := range t.ids {
			t.recs[i] = t.byID[id]
		}
	case !slices.IsSorted(t.ids):
		t.sortByID()
	}
	t.loaded, t.stale = false, false
}

// sortByID sorts ids and recs together by id.
func (t *table[T]) sortByID() {
	type entry struct {
		id  int64
		rec *T
	}
	entries := make([]entry, len(t.ids))
	for i, id := range t.ids {
		entries[i] = entry{id, t.recs[i]}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
	for i, e := range entries {
		t.ids[i], t.recs[i] = e.id, e.rec
	}
}

// insertLoaded adds v with a new id during a bulk load and reports true; if id is
// taken it changes nothing and reports false. Unlike put it does not look id up twice.
func (t *table[T]) insertLoaded(id int64, v *T) bool {
	if _, taken := t.byID[id]; taken {
		return false
	}
	if t.byID == nil {
		t.byID = make(map[int64]*T)
	}
	t.byID[id] = v
	t.lastID = max(t.lastID, id)
	t.ids, t.recs = append(t.ids, id), append(t.recs, v)
	t.loaded = true
	return true
}

// all returns the records in id order.
func (t *table[T]) all() []*T { return slices.Clone(t.recs) }

func (t *table[T]) nextID() int64 { return t.lastID + 1 }

// ownerIndex lists, per owner id, the ids of the records it owns in ascending order.
type ownerIndex map[int64][]int64

func (x *ownerIndex) add(owner, id int64, loading bool) {
	if *x == nil {
		*x = make(ownerIndex)
	}
	ids := (*x)[owner]
	if n := len(ids); loading || n == 0 || ids[n-1] < id {
		(*x)[owner] = append(ids, id)
	} else if i, found := slices.BinarySearch(ids, id); !found {
		(*x)[owner] = slices.Insert(ids, i, id)
	}
}

func (x ownerIndex) remove(owner, id int64) {
	ids := x[owner]
	i, found := slices.BinarySearch(ids, id)
	if !found { // appended out of order during a bulk load
		i = slices.Index(ids, id)
		found = i >= 0
	}
	if found {
		if len(ids) == 1 {
			delete(x, owner)
		} else {
			x[owner] = slices.Delete(ids, i, i+1)
		}
	}
}

// sortLoaded restores ascending order after a bulk load. Records mostly come in id
// order, so most lists are found in order and left alone.
func (x ownerIndex) sortLoaded() {
	for owner, ids := range x {
		if !isIncreasing(ids) {
			slices.Sort(ids)
			x[owner] = slices.Compact(ids)
		}
	}
}

// isIncreasing reports whether ids ascend strictly: sorted, with no id twice.
func isIncreasing(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

// sortedUsers keeps users sorted case-insensitively by name or by email, ties by id,
// for the pages of ?sortBy=name and ?sortBy=email. It holds them in sorted chunks of
// at most 2*chunkUsers users: an insert or a removal moves at most one chunk's worth
// of pointers, however many users there are, and finding the k-th user walks the
// chunk lengths only. (One sorted slice of a million users would move megabytes on
// every create; a balanced tree would cost a node per user.)
type sortedUsers struct {
	chunks  [][]*User // each sorted and non-empty; all in order one after the other
	byEmail bool
	loaded  []*User // a bulk load's users, unsorted until sortLoaded
}

const chunkUsers = 128

func (o *sortedUsers) key(u *User) string {
	if o.byEmail {
		return u.emailKey
	}
	return u.nameKey
}

func (o *sortedUsers) compare(a, b *User) int {
	if c := strings.Compare(o.key(a), o.key(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// chunkFor returns the chunk u belongs in: the first whose last user is not before
// it, or the last chunk.
func (o *sortedUsers) chunkFor(u *User) int {
	i := sort.Search(len(o.chunks), func(i int) bool {
		c := o.chunks[i]
		return o.compare(c[len(c)-1], u) >= 0
	})
	return min(i, len(o.chunks)-1)
}

func (o *sortedUsers) add(u *User, loading bool) {
	if loading {
		o.loaded = append(o.loaded, u)
		return
	}
	if len(o.chunks) == 0 {
		o.chunks = [][]*User{{u}}
		return
	}
	ci := o.chunkFor(u)
	c := o.chunks[ci]
	i, _ := slices.BinarySearchFunc(c, u, o.compare)
	c = slices.Insert(c, i, u)
	if len(c) <= 2*chunkUsers {
		o.chunks[ci] = c
		return
	}
	half := len(c) / 2
	// The left half is capped, so a later insert into it cannot run into the right.
	o.chunks[ci] = c[:half:half]
	o.chunks = slices.Insert(o.chunks, ci+1, slices.Clone(c[half:]))
}

func (o *sortedUsers) remove(u *User) {
	if len(o.chunks) == 0 {
		return
	}
	ci := o.chunkFor(u)
	c := o.chunks[ci]
	i, found := slices.BinarySearchFunc(c, u, o.compare)
	switch {
	case !found:
	case len(c) == 1:
		o.chunks = slices.Delete(o.chunks, ci, ci+1)
	default:
		o.chunks[ci] = slices.Delete(c, i, i+1)
	}
}

// page returns up to size users from position skip on.
func (o *sortedUsers) page(skip, size int) []*User {
	out := []*User{}
	for _, c := range o.chunks {
		if skip >= len(c) {
			skip -= len(c)
			continue
		}
		for _, u := range c[skip:] {
			if len(out) == size {
				return out
			}
			out = append(out, u)
		}
		skip = 0
	}
	return out
}

// each calls fn with the users in order until fn returns false.
func (o *sortedUsers) each(fn func(*User) bool) {
	for _, c := range o.chunks {
		for _, u := range c {
			if !fn(u) {
				return
			}
		}
	}
}

// sortLoaded sorts and chunks after a bulk load (merging in users added before it).
func (o *sortedUsers) sortLoaded() {
	if len(o.loaded) == 0 {
		return
	}
	all := o.loaded
	o.each(func(u *User) bool { all = append(all, u); return true })
	slices.SortFunc(all, o.compare)
	o.chunks, o.loaded = nil, nil
	for len(all) > 0 {
		k := min(chunkUsers, len(all))
		o.chunks = append(o.chunks, all[:k:k])
		all = all[k:]
	}
}

// foldKey is the case-insensitive form users are searched and sorted by.
func foldKey(s string) string { return strings.ToLower(s) }

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

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		clock:        time.Now,
		usersByEmail: sortedUsers{byEmail: true},
	}
}

// now is the time a record is created: UTC, whole seconds, so every surface shows the
// same instant in its own format (RFC 3339 on HTTP, "yyyy-MM-dd HH:mm:ss" on gRPC).
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Second) }

// apply performs c on the store. The caller holds the write lock.
func (s *Store) apply(c *change) {
	switch c.Op {
	case opPutUsers:
		for _, u := range c.Users {
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

func (s *Store) putUser(u *User) {
	if old, ok := s.users.get(u.ID); ok {
		if s.loading {
			s.replacedInLoad = true
		} else {
			s.usersByName.remove(old)
			s.usersByEmail.remove(old)
		}
	}
	u.nameKey, u.emailKey = foldKey(u.Name), foldKey(u.Email)
	s.users.put(u.ID, u, s.loading)
	s.usersByName.add(u, s.loading)
	s.usersByEmail.add(u, s.loading)
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
		if s.loading {
			s.replacedInLoad = true
		} else {
			s.usersByName.remove(u)
			s.usersByEmail.remove(u)
		}
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
	if old, ok := s.posts.get(p.ID); ok {
		s.postsByUser.remove(old.UserID, old.ID)
	}
	s.posts.put(p.ID, p, s.loading)
	s.postsByUser.add(p.UserID, p.ID, s.loading)
}

func (s *Store) putComment(c *Comment) {
	if old, ok := s.comments.get(c.ID); ok {
		s.commentsByPost.remove(old.PostID, old.ID)
		s.commentsByAuthor.remove(old.AuthorID, old.ID)
	}
	s.comments.put(c.ID, c, s.loading)
	s.commentsByPost.add(c.PostID, c.ID, s.loading)
	s.commentsByAuthor.add(c.AuthorID, c.ID, s.loading)
}

func (s *Store) putOrder(o *Order) {
	if old, ok := s.orders.get(o.ID); ok {
		s.ordersByUser.remove(old.UserID, old.ID)
		s.ordersByProduct.remove(old.ProductID, old.ID)
	}
	s.orders.put(o.ID, o, s.loading)
	if o.UserID != 0 {
		s.ordersByUser.add(o.UserID, o.ID, s.loading)
	}
	s.ordersByProduct.add(o.ProductID, o.ID, s.loading)
}

// beginLoad and endLoad bracket a bulk load (a dataset, a snapshot, a journal replay):
// in between, orders and indexes are appended to, and endLoad sorts them once.
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

// reserve makes room for a bulk load of n more records of each kind.
func (t *table[T]) reserve(n int) {
	if t.byID == nil {
		t.byID = make(map[int64]*T, n)
	}
	t.ids, t.recs = slices.Grow(t.ids, n), slices.Grow(t.recs, n)
}

// write makes one change: decide runs under the write lock, checks the input against
// the current state and returns the change (or an error, and nothing happens). The
// change is applied and, with a journal, written to disk before write returns, so a
// caller acknowledges only what survives a crash. A change the journal fails to store
// is rolled back (see journal.fail) before its writer is answered.
func (s *Store) write(decide func() (*change, error)) error {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return errNotStored()
	}
	c, err := decide()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var pending *pendingWrite
	if s.journal != nil {
		// In apply order, as the lock is held; with what undoes c, taken before
		// apply changes what it would record.
		pending = s.journal.enqueue(c, s.undoFor(c))
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

// errNotStored answers a write the store could not make durable. What went wrong
// (a path, an OS error) is logged once, by the journal, and never shown to a client.
func errNotStored() *Error {
	return &Error{Kind: KindInternal, Message: "internal server error"}
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
	lastIDs  [5]int64
	users    []*User
	posts    []*Post
	comments []*Comment
	orders   []*Order
	products []*Product
}

// undoFor records what applying c will replace or remove. The caller holds the write
// lock. A change that only creates records (most writes) records nothing but the
// last ids, and allocates nothing.
func (s *Store) undoFor(c *change) undo {
	u := undo{lastIDs: [5]int64{s.users.lastID, s.posts.lastID, s.comments.lastID, s.products.lastID, s.orders.lastID}}
	switch c.Op {
	case opPutUsers:
		for _, nu := range c.Users {
			if old, ok := s.users.get(nu.ID); ok {
				u.users = append(u.users, old)
			}
		}
	case opDeleteUser:
		if old, ok := s.users.get(c.DeleteID); ok {
			u.users = append(u.users, old)
		}
		// What the cascade removes (see deleteUser); a comment may be listed twice,
		// and putting it back twice is harmless.
		u.posts = lookup(&s.posts, s.postsByUser[c.DeleteID])
		for _, p := range u.posts {
			u.comments = append(u.comments, lookup(&s.comments, s.commentsByPost[p.ID])...)
		}
		u.comments = append(u.comments, lookup(&s.comments, s.commentsByAuthor[c.DeleteID])...)
	case opPutPost:
		if old, ok := s.posts.get(c.Post.ID); ok {
			u.posts = append(u.posts, old)
		}
	case opPutComment:
		if old, ok := s.comments.get(c.Comment.ID); ok {
			u.comments = append(u.comments, old)
		}
	case opPutOrder:
		if old, ok := s.orders.get(c.Order.ID); ok {
			u.orders = append(u.orders, old)
		}
	case opPutProduct:
		if old, ok := s.products.get(c.Product.ID); ok {
			u.products = append(u.products, old)
		}
	}
	return u
}

// rollback undoes c, which must be the latest change applied and not undone: the
// records c put are removed, then those it replaced or removed are put back. The
// caller holds the write lock.
func (s *Store) rollback(c *change, u *undo) {
	switch c.Op {
	case opPutUsers:
		for _, nu := range c.Users {
			s.usersByName.remove(nu)
			s.usersByEmail.remove(nu)
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
	for _, x := range u.users {
		s.putUser(x)
	}
	for _, x := range u.posts {
		s.putPost(x)
	}
	for _, x := range u.comments {
		s.putComment(x)
	}
	for _, x := range u.orders {
		s.putOrder(x)
	}
	for _, x := range u.products {
		s.products.put(x.ID, x, false)
	}
	s.users.lastID, s.posts.lastID, s.comments.lastID, s.products.lastID, s.orders.lastID = u.lastIDs[0], u.lastIDs[1], u.lastIDs[2], u.lastIDs[3], u.lastIDs[4]
}

// publish tells subscribers about the records c created.
func (s *Store) publish(c *change) {
	if !c.created {
		return
	}
	switch c.Op {
	case opPutUsers:
		for _, u := range c.Users {
			s.feed.publish(u)
		}
	case opPutPost:
		s.feed.publish(c.Post)
	}
}

// errStoreClosed refuses the writes that come after Close (a call a bounded shutdown
// cut, still running): with the journal closed, nothing would ever answer them.
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
	// Require, when set, is checked against the current record inside the write (an
	// If-Match): no other write can come between the check and the change.
	Require func(current *User) error
}

// UpdateUser changes the supplied fields of user id.
func (s *Store) UpdateUser(id int64, p UserPatch) (*User, error) {
	var u User
	err := s.write(func() (*change, error) {
		old, ok := s.users.get(id)
		if !ok {
			return nil, userNotFound(id)
		}
		if p.Require != nil {
			if err := p.Require(old); err != nil {
				return nil, err
			}
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
func (s *Store) DeleteUser(id int64) (bool, error) { return s.DeleteUserIf(id, nil) }

// DeleteUserIf is DeleteUser when require, checked against the current record inside
// the write (as UserPatch.Require), passes; nil requires nothing. require's error is
// returned as it is.
func (s *Store) DeleteUserIf(id int64, require func(current *User) error) (bool, error) {
	err := s.write(func() (*change, error) {
		old, ok := s.users.get(id)
		if !ok {
			return nil, userNotFound(id)
		}
		if require != nil {
			if err := require(old); err != nil {
				return nil, err
			}
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
	title, content, err := validatePost(title, content)
	if err != nil {
		return nil, err
	}
	var p *Post
	err = s.write(func() (*change, error) {
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
	c, err := s.AddAuthoredComment(postID, authorID, text)
	return c.Comment, err
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
		c.Comment = &Comment{ID: s.comments.nextID(), PostID: postID, AuthorID: authorID, Text: text, CreatedAt: s.now()}
		c.Author = author
		return &change{Op: opPutComment, Comment: c.Comment}, nil
	})
	if err != nil {
		return AuthoredComment{}, err
	}
	return c, nil
}

// NewOrder is the input to CreateOrder.
type NewOrder struct {
	ProductID    int64
	Quantity     int64
	CustomerName string // defaults to the user's name
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

// UserPage answers q: search, then sort, then count, then page (spec 4.2). The sorted
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
	ids := s.postsByUser[userID]
	if limit >= 0 && limit < len(ids) {
		ids = ids[:limit]
	}
	return lookup(&s.posts, ids)
}

// CommentsOnPost returns the comments on post postID in id order.
func (s *Store) CommentsOnPost(postID int64) []*Comment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return lookup(&s.comments, s.commentsByPost[postID])
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

// UserValues, PostValues, ProductValues and OrderValues are the records in id order
// as []any, the form the query engines (GraphQL's, OData's) take lists in, made in
// one copy rather than two.
func (s *Store) UserValues() []any    { return tableValues(s, &s.users) }
func (s *Store) PostValues() []any    { return tableValues(s, &s.posts) }
func (s *Store) ProductValues() []any { return tableValues(s, &s.products) }
func (s *Store) OrderValues() []any   { return tableValues(s, &s.orders) }

func tableValues[T any](s *Store, t *table[T]) []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return values(t.recs)
}

// values converts records to []any, the form the query engines (GraphQL's, OData's)
// take lists in.
func values[T any](recs []*T) []any {
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = r
	}
	return out
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

// The change feed: created users and posts, pushed to subscribers in commit order.

// ErrSlowSubscriber ends a subscription whose buffer filled up: the store never waits
// for a reader, so one that falls behind is cut off rather than silently skipped.
var ErrSlowSubscriber = errors.New("subscriber fell behind and was disconnected")

// errFeedClosed ends every subscription when the store shuts down.
var errFeedClosed = errors.New("server is shutting down")

// Subscription receives created records (*User, *Post) on C. When the subscription is
// ended by the store, C carries the reason (an error) last; then C is closed.
type Subscription struct {
	C    <-chan any
	c    chan any // one slot more than the buffer, kept free for the final error
	want func(any) bool
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

// Subscribe starts a subscription to the created records want accepts (nil: all), with
// room for buffer pending ones. Records go straight into the subscriber's channel: no
// goroutine stands between the store and a reader.
func (s *Store) Subscribe(buffer int, want func(any) bool) *Subscription {
	c := make(chan any, max(buffer, 1)+1)
	sub := &Subscription{C: c, c: c, want: want, feed: &s.feed}
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

func (f *feed) publish(v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		switch {
		case sub.want != nil && !sub.want(v):
		case len(sub.c) < cap(sub.c)-1:
			sub.c <- v // cannot block: there is room, and only publish sends
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
}

// StoreStats are the figures /metrics reports about the store.
type StoreStats struct {
	Users, Posts, Comments, Products, Orders int
	Durable                                  bool  // false: memory only, the journal figures are 0
	JournalWrites, JournalFsyncs             int64 // changes written, and the fsyncs (batches) that made them durable
}

// Stats returns the number of records in each table and the journal's counters.
func (s *Store) Stats() StoreStats {
	s.mu.RLock()
	st := StoreStats{Users: len(s.users.byID), Posts: len(s.posts.byID), Comments: len(s.comments.byID),
		Products: len(s.products.byID), Orders: len(s.orders.byID)}
	j := s.journal
	s.mu.RUnlock()
	if j != nil {
		st.Durable, st.JournalWrites, st.JournalFsyncs = true, j.writes.Load(), j.syncs.Load()
	}
	return st
}
