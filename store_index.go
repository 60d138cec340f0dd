package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// The store's indexes: each collection by id and in id order (table), the records
// each owner owns (ownerIndex), and the users sorted by name and by email
// (sortedUsers). apply keeps them in step with the records.

// table is one collection: records by id, and the same records in ascending id order,
// which is the order every list is served in. Ids only grow, so an insert appends.
type table[T any] struct {
	byID   map[int64]*T
	ids    []int64 // ascending
	recs   []*T    // recs[i] is the record with id ids[i]
	lastID int64
	loaded bool // ids appended out of order during a bulk load; sort before reading
	stale  bool // recs may hold a record replaced during the bulk load

	// view holds recs as []any, the form the query engines take lists in, made by
	// the first read after a change and shared by every read until the next change;
	// readers must not modify it. (An atomic.Value, not an atomic.Pointer, which may
	// not be copied: Store.adopt copies whole tables.)
	view atomic.Value
}

// changed drops the view; every method that changes recs calls it.
func (t *table[T]) changed() {
	if t.view.Load() != nil {
		t.view.Store([]any(nil))
	}
}

// sharedValues returns the view, made now if there is none. Callers hold the store's
// read lock at least: racing readers each make the same list, and one is kept.
func (t *table[T]) sharedValues() []any {
	if v, _ := t.view.Load().([]any); v != nil {
		return v
	}
	v := values(t.recs)
	t.view.Store(v)
	return v
}

func (t *table[T]) get(id int64) (*T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

// put stores v as record id and returns the record it replaced, nil if none. During a
// bulk load (loading) a new record is appended, for sortLoaded to put in order.
func (t *table[T]) put(id int64, v *T, loading bool) (old *T) {
	t.changed()
	if t.byID == nil {
		t.byID = make(map[int64]*T)
	}
	old = t.byID[id]
	t.byID[id] = v
	t.lastID = max(t.lastID, id)
	switch n := len(t.ids); {
	case old == nil && (loading || n == 0 || t.ids[n-1] < id):
		t.ids, t.recs = append(t.ids, id), append(t.recs, v)
		t.loaded = t.loaded || loading
	default:
		switch i, found := slices.BinarySearch(t.ids, id); {
		case found:
			t.recs[i] = v
		case loading: // replaced during a load, with the ids out of order
			t.stale = true
		default:
			t.ids, t.recs = slices.Insert(t.ids, i, id), slices.Insert(t.recs, i, v)
		}
	}
	return old
}

func (t *table[T]) remove(id int64) {
	if _, ok := t.byID[id]; !ok {
		return
	}
	t.changed()
	delete(t.byID, id)
	if i, ok := indexOf(t.ids, id); ok {
		t.ids, t.recs = slices.Delete(t.ids, i, i+1), slices.Delete(t.recs, i, i+1)
	}
}

// indexOf finds id in ids, which are sorted unless a bulk load appended out of order.
func indexOf(ids []int64, id int64) (int, bool) {
	if i, ok := slices.BinarySearch(ids, id); ok {
		return i, true
	}
	i := slices.Index(ids, id)
	return i, i >= 0
}

// sortLoaded restores id order after a bulk load. Records usually come in id order,
// so the common case is one pass that finds the ids sorted.
func (t *table[T]) sortLoaded() {
	if !t.loaded {
		return
	}
	t.changed()
	if t.stale || !slices.IsSorted(t.ids) {
		slices.Sort(t.ids)
		t.ids = slices.Compact(t.ids)
		t.recs = t.recs[:len(t.ids)]
		for i, id := range t.ids {
			t.recs[i] = t.byID[id]
		}
	}
	t.loaded, t.stale = false, false
}

// all returns the records in id order.
func (t *table[T]) all() []*T { return slices.Clone(t.recs) }

// reserve makes room for a bulk load of n more records.
func (t *table[T]) reserve(n int) {
	if t.byID == nil {
		t.byID = make(map[int64]*T, n)
	}
	t.ids, t.recs = slices.Grow(t.ids, n), slices.Grow(t.recs, n)
}

// newIDs returns the first of n ids for new records of the kind named (user, post,
// ...), or a conflict when the last of them would pass maxID.
func (t *table[T]) newIDs(n int, kind string) (int64, error) {
	if t.lastID > maxID-int64(n) {
		return 0, &Error{Kind: KindConflict, Message: fmt.Sprintf("no new %s id is left: ids end at %d", kind, maxID)}
	}
	return t.lastID + 1, nil
}

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
	i, found := indexOf(ids, id)
	switch {
	case !found:
	case len(ids) == 1:
		delete(x, owner)
	default:
		x[owner] = slices.Delete(ids, i, i+1)
	}
}

// sortLoaded restores ascending order after a bulk load; most lists are found in order.
func (x ownerIndex) sortLoaded() {
	for owner, ids := range x {
		for i := 1; i < len(ids); i++ {
			if ids[i-1] >= ids[i] {
				slices.Sort(ids)
				x[owner] = slices.Compact(ids)
				break
			}
		}
	}
}

// sortedUsers keeps users sorted case-insensitively by name or by email, ties by id,
// in sorted chunks of at most 2*chunkUsers: an insert or a removal moves at most one
// chunk's worth of pointers, and finding the k-th user walks the chunk lengths only.
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
	return cmp.Or(strings.Compare(o.key(a), o.key(b)), cmp.Compare(a.ID, b.ID))
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

// sortLoaded sorts and chunks after a bulk load (merging in users added before it),
// with each user's key beside it: comparing two then reads the keys' bytes without
// reaching through the users (about 2× faster, bench/README.md).
func (o *sortedUsers) sortLoaded() {
	if len(o.loaded) == 0 {
		return
	}
	all := o.loaded
	o.each(func(u *User) bool { all = append(all, u); return true })
	type keyedUser struct {
		key string
		u   *User
	}
	entries := make([]keyedUser, len(all))
	for i, u := range all {
		entries[i] = keyedUser{o.key(u), u}
	}
	slices.SortFunc(entries, func(a, b keyedUser) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.u.ID, b.u.ID)
	})
	for i, e := range entries {
		all[i] = e.u
	}
	o.chunks, o.loaded = nil, nil
	for len(all) > 0 {
		k := min(chunkUsers, len(all))
		o.chunks = append(o.chunks, all[:k:k])
		all = all[k:]
	}
}

// foldKey is the case-insensitive form users are searched and sorted by.
func foldKey(s string) string { return strings.ToLower(s) }
