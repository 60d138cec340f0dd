package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"quartet/internal/jsonscan"
)

// Dataset is the format of -load (docs/data.md) and the demo data; every key is optional.
type Dataset struct {
	Users    []User    `json:"users"`
	Posts    []Post    `json:"posts"`
	Comments []Comment `json:"comments"`
	Products []Product `json:"products"`
	Orders   []Order   `json:"orders"`
}

//go:embed demo.json
var demoJSON []byte

// DemoDataset returns the embedded demo data.
func DemoDataset() *Dataset {
	ds, err := ReadDataset(bytes.NewReader(demoJSON))
	if err != nil {
		panic("demo.json: " + err.Error()) // the embedded file is tested; this is a build defect
	}
	return ds
}

// ReadDataset decodes a dataset; an unknown key, a misspelling, is refused, not dropped.
func ReadDataset(r io.Reader) (*Dataset, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" { // null would start empty
		return nil, fmt.Errorf("%s input: expected a JSON object", cmp.Or(string(t), "empty"))
	}
	if !utf8.Valid(data) { // as in a request body; encoding/json would store U+FFFD
		return nil, fmt.Errorf("not valid UTF-8 (byte %d)", invalidUTF8(data))
	}
	return decodeDataset(data)
}

// readAll reads r to the end, a file into a buffer of its size: io.ReadAll would grow
// its buffer step by step (bench/README.md). A device such as /dev/zero has no end.
func readAll(r io.Reader) ([]byte, error) {
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		info, err := f.Stat()
		if err != nil || !info.Mode().IsRegular() {
			return nil, cmp.Or(err, errors.New("not a regular file"))
		}
		buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
		_, err = buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	return io.ReadAll(r)
}

// invalidUTF8 is the offset of the first byte of data that starts no character.
func invalidUTF8(data []byte) (i int) {
	for r, n := utf8.DecodeRune(data); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(data[i:]) {
		i += n
	}
	return i
}

// decodeDataset decodes with package jsonscan what strict encoding/json would, but refuses a
// repeated key or an unpaired surrogate escape; encoding/json misses the start-up target.
func decodeDataset(data []byte) (*Dataset, error) {
	d := jsonscan.New(data, "dataset")
	var ds Dataset
	err := d.Object(jsonscan.Loc{}, datasetFields, func(name string) error {
		switch name {
		case "users":
			return jsonscan.List(d, name, &ds.Users, func(d *jsonscan.Scanner, at jsonscan.Loc, u *User) error {
				return decodeRecord(d, at, userFields, &u.ID, &u.Name, &u.Email, &u.CreatedAt)
			})
		case "posts":
			return jsonscan.List(d, name, &ds.Posts, func(d *jsonscan.Scanner, at jsonscan.Loc, p *Post) error {
				return decodeRecord(d, at, postFields, &p.ID, &p.UserID, &p.Title, &p.Content, &p.CreatedAt)
			})
		case "comments":
			return jsonscan.List(d, name, &ds.Comments, func(d *jsonscan.Scanner, at jsonscan.Loc, c *Comment) error {
				return decodeRecord(d, at, commentFields, &c.ID, &c.PostID, &c.AuthorID, &c.Text, &c.CreatedAt)
			})
		case "products":
			return jsonscan.List(d, name, &ds.Products, func(d *jsonscan.Scanner, at jsonscan.Loc, p *Product) error {
				return decodeRecord(d, at, productFields, &p.ID, &p.Name, &p.Price, &p.Category, &p.CreatedDate, &p.IsActive)
			})
		}
		// Object passes only the names in datasetFields.
		return jsonscan.List(d, name, &ds.Orders, func(d *jsonscan.Scanner, at jsonscan.Loc, o *Order) error {
			return decodeRecord(d, at, orderFields, &o.ID, &o.UserID, &o.ProductID, &o.CustomerName, &o.OrderDate, &o.Quantity)
		})
	})
	if err = cmp.Or(err, d.End()); err != nil { // End only looks for trailing data
		return nil, err
	}
	return &ds, nil
}

// The keys of each object, as the JSON tags spell them.
var (
	datasetFields = []string{"users", "posts", "comments", "products", "orders"}
	userFields    = []string{"id", "name", "email", "createdAt"}
	postFields    = []string{"id", "userId", "title", "content", "createdAt"}
	commentFields = []string{"id", "postId", "authorId", "text", "createdAt"}
	productFields = []string{"id", "name", "price", "category", "createdDate", "isActive"}
	orderFields   = []string{"id", "userId", "productId", "customerName", "orderDate", "quantity"}
)

// decodeRecord decodes an object whose keys are fields into dsts, each field's
// destination in the same order: an *int64, *string, *bool, *time.Time or json.Unmarshaler.
func decodeRecord(d *jsonscan.Scanner, at jsonscan.Loc, fields []string, dsts ...any) error {
	return d.Object(at, fields, func(name string) error {
		at := at.With(name)
		switch dst := dsts[slices.Index(fields, name)].(type) {
		case *int64:
			return d.Int64(at, dst)
		case *string:
			return d.String(at, dst)
		case *bool:
			return d.Bool(at, dst)
		case *time.Time:
			return d.Unmarshal(at, (*storedTime)(dst))
		default:
			return d.Unmarshal(at, dst.(json.Unmarshaler))
		}
	})
}

// storedTime reads a time every surface can write: JSON's years 0 to 9999, in UTC.
type storedTime time.Time

func (t *storedTime) UnmarshalJSON(b []byte) error {
	err := (*time.Time)(t).UnmarshalJSON(b)
	if y := (*time.Time)(t).UTC().Year(); err == nil && (y < 0 || y > 9999) {
		err = fmt.Errorf("%s is outside the years 0000 to 9999 in UTC", b)
	}
	return err
}

// Load fills the store from ds after checking all of it (docs/data.md): a dataset that
// breaks a rule is refused whole, naming the record. The store takes ds's records over,
// so a million users are neither copied nor allocated one by one: the caller drops ds.
func (s *Store) Load(ds *Dataset) error {
	// Checked and indexed in a store of their own, dropped if the dataset is refused.
	loaded := NewStore()
	if err := loaded.fill(ds, s.now()); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.users.byID)+len(s.posts.byID)+len(s.comments.byID)+len(s.products.byID)+len(s.orders.byID) == 0 {
		s.adopt(loaded) // the common case: the store starts empty
		return nil
	}
	s.beginLoad()
	s.restore(loaded.captureLocked())
	s.endLoad()
	return nil
}

// fill loads ds into s, a new store, checking it as Load says; on an error s is dropped.
func (s *Store) fill(ds *Dataset, at time.Time) error {
	stamp := func(t time.Time) time.Time { return cmp.Or(t.UTC().Truncate(time.Second), at) }
	s.beginLoad()
	s.users.reserve(len(ds.Users))
	s.posts.reserve(len(ds.Posts))
	s.comments.reserve(len(ds.Comments))
	s.products.reserve(len(ds.Products))
	s.orders.reserve(len(ds.Orders))
	var sorts sync.WaitGroup // the user orders, sorted while the other lists are filled
	defer sorts.Wait()
	if err := s.fillUsers(ds.Users, stamp, &sorts); err != nil {
		return err
	}
	err := fillTable(&s.posts, "posts", ds.Posts, func(p *Post) int64 { return p.ID }, func(i int, p *Post) error {
		if _, ok := s.users.get(p.UserID); !ok {
			return fmt.Errorf("posts[%d] (id %d): userId %d names no user", i, p.ID, p.UserID)
		}
		title, content, err := validatePost(p.Title, p.Content)
		if err != nil {
			return err
		}
		p.Title, p.Content, p.CreatedAt = title, content, stamp(p.CreatedAt)
		s.postsByUser.add(p.UserID, p.ID, true)
		return nil
	})
	if err == nil {
		err = fillTable(&s.comments, "comments", ds.Comments, func(c *Comment) int64 { return c.ID }, func(i int, c *Comment) error {
			if _, ok := s.posts.get(c.PostID); !ok {
				return fmt.Errorf("comments[%d] (id %d): postId %d names no post", i, c.ID, c.PostID)
			}
			if _, ok := s.users.get(c.AuthorID); !ok {
				return fmt.Errorf("comments[%d] (id %d): authorId %d names no user", i, c.ID, c.AuthorID)
			}
			text, err := validateComment(c.Text)
			if err != nil {
				return err
			}
			c.Text, c.CreatedAt = text, stamp(c.CreatedAt)
			s.commentsByPost.add(c.PostID, c.ID, true)
			s.commentsByAuthor.add(c.AuthorID, c.ID, true)
			return nil
		})
	}
	if err == nil {
		err = fillTable(&s.products, "products", ds.Products, func(p *Product) int64 { return p.ID }, func(i int, p *Product) error {
			name, category, err := validateProduct(p.Name, p.Category, p.Price)
			if err != nil {
				return err
			}
			p.Name, p.Category, p.CreatedDate = name, category, stamp(p.CreatedDate)
			return nil
		})
	}
	if err == nil {
		err = fillTable(&s.orders, "orders", ds.Orders, func(o *Order) int64 { return o.ID }, func(i int, o *Order) error {
			if _, ok := s.products.get(o.ProductID); !ok {
				return fmt.Errorf("orders[%d] (id %d): productId %d names no product", i, o.ID, o.ProductID)
			}
			user, ok := s.users.get(o.UserID)
			if o.UserID != 0 && !ok {
				return fmt.Errorf("orders[%d] (id %d): userId %d names no user", i, o.ID, o.UserID)
			}
			name, err := validateOrder(o.CustomerName, o.Quantity)
			if err != nil {
				return err
			}
			o.OrderDate, o.CustomerName = stamp(o.OrderDate), name
			if o.UserID != 0 {
				o.CustomerName = cmp.Or(name, user.Name)
				s.ordersByUser.add(o.UserID, o.ID, true)
			}
			s.ordersByProduct.add(o.ProductID, o.ID, true)
			return nil
		})
	}
	if err != nil {
		return err
	}
	sorts.Wait()
	s.endLoad()
	return nil
}

// fillTable puts recs, whose ids idOf reads, into t, each checked, normalised and
// indexed by check; a domain error of check names the record and its bad fields.
func fillTable[T any](t *table[T], coll string, recs []T, idOf func(*T) int64, check func(i int, r *T) error) error {
	for i := range recs {
		r := &recs[i]
		id := idOf(r)
		switch {
		case id <= 0 || id > maxID:
			return idError(coll, i, id)
		case t.put(id, r, true) != nil:
			return fmt.Errorf("%s[%d] (id %d): duplicate id", coll, i, id)
		}
		if err := check(i, r); err != nil {
			if e, ok := err.(*Error); ok {
				// "posts[3] (id 4): title is required"
				return fmt.Errorf("%s[%d] (id %d): %s", coll, i, id, strings.TrimPrefix(e.Message, "invalid input: "))
			}
			return err
		}
	}
	return nil
}

func idError(coll string, i int, id int64) error {
	return fmt.Errorf("%s[%d]: id must be an integer from 1 to %d, not %d", coll, i, maxID, id)
}

// fillUsers checks each user in parallel, then puts them in the table in order, which
// finds duplicate ids: the error is the first by index, as if checked one at a time.
// Once all are valid, the sorted user indexes are sorted in sorts, while tables fill.
func (s *Store) fillUsers(users []User, stamp func(time.Time) time.Time, sorts *sync.WaitGroup) error {
	bad, badErr := prepareUsers(users, stamp)
	if bad == len(users) {
		for _, o := range []*sortedUsers{&s.usersByName, &s.usersByEmail} {
			o.loaded = pointers(users)
			sorts.Go(o.sortLoaded)
		}
	}
	for i := range users[:min(bad+1, len(users))] {
		u := &users[i]
		if u.ID > 0 && s.users.put(u.ID, u, true) != nil {
			return fmt.Errorf("users[%d] (id %d): duplicate id", i, u.ID)
		}
		if i == bad {
			return badErr
		}
	}
	return nil
}

// prepareUsers checks and normalises each user in place, keys and time set, on every
// processor; it returns the first failing index and why (len(users) and nil if none).
func prepareUsers(users []User, stamp func(time.Time) time.Time) (int, error) {
	type failure struct {
		i   int
		err error
	}
	parts := splitWork(len(users))
	failures := make([]failure, len(parts))
	var wg sync.WaitGroup
	for p, part := range parts {
		wg.Go(func() {
			failures[p] = failure{i: len(users)}
			for i := part.lo; i < part.hi; i++ {
				u := &users[i]
				if u.ID <= 0 || u.ID > maxID {
					failures[p] = failure{i, idError("users", i, u.ID)}
					return
				}
				name, email, err := validateUser(u.Name, u.Email)
				if err != nil {
					failures[p] = failure{i, fmt.Errorf("users[%d] (id %d): %v", i, u.ID, err)}
					return
				}
				*u = User{ID: u.ID, Name: name, Email: email, CreatedAt: stamp(u.CreatedAt), nameKey: foldKey(name), emailKey: foldKey(email)}
			}
		})
	}
	wg.Wait()
	first := slices.MinFunc(failures, func(a, b failure) int { return cmp.Compare(a.i, b.i) })
	return first.i, first.err
}

// span is the half-open range [lo, hi) of a slice.
type span struct{ lo, hi int }

const minSpan = 4096 // the least work worth a goroutine of its own

// splitWork divides n items into one contiguous span per processor (fewer when n is small).
func splitWork(n int) []span {
	parts := max(min(runtime.GOMAXPROCS(0), n/minSpan), 1)
	spans := make([]span, parts)
	for p := range spans {
		spans[p] = span{p * n / parts, (p + 1) * n / parts}
	}
	return spans
}

// beginLoad and endLoad bracket a bulk load: in between, tables and indexes are
// appended to, and endLoad sorts them once. The caller holds the write lock.
func (s *Store) beginLoad() { s.loading = true }

func (s *Store) endLoad() {
	s.loading = false
	for _, x := range []interface{ sortLoaded() }{&s.users, &s.posts, &s.comments, &s.products, &s.orders,
		s.postsByUser, s.commentsByPost, s.commentsByAuthor, s.ordersByUser, s.ordersByProduct} {
		x.sortLoaded()
	}
	// A user replaced or deleted in the load left its old record in the sorted indexes:
	// they are rebuilt from the current users, the two sorts side by side.
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

// adopt moves the records and indexes of from, a store just bulk-loaded, into s,
// which holds no records; s keeps its own last ids where they are larger.
func (s *Store) adopt(from *Store) {
	from.users.lastID = max(from.users.lastID, s.users.lastID)
	from.posts.lastID = max(from.posts.lastID, s.posts.lastID)
	from.comments.lastID = max(from.comments.lastID, s.comments.lastID)
	from.products.lastID = max(from.products.lastID, s.products.lastID)
	from.orders.lastID = max(from.orders.lastID, s.orders.lastID)
	s.users, s.posts, s.comments, s.products, s.orders = from.users, from.posts, from.comments, from.products, from.orders
	s.postsByUser, s.commentsByPost, s.commentsByAuthor = from.postsByUser, from.commentsByPost, from.commentsByAuthor
	s.ordersByUser, s.ordersByProduct = from.ordersByUser, from.ordersByProduct
	s.usersByName, s.usersByEmail = from.usersByName, from.usersByEmail
}
