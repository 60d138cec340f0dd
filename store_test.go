package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestDeleteUserCascades(t *testing.T) {
	s := newTestStore(t)
	// Demo user 1 wrote posts 1 and 2 (comments 1-3 on them) and comments 4 and 8
	// elsewhere; orders 1 and 2 are hers.
	if ok, err := s.DeleteUser(1); !ok || err != nil {
		t.Fatalf("DeleteUser(1) = %v, %v", ok, err)
	}
	if _, ok := s.User(1); ok {
		t.Error("user 1 still there")
	}
	for _, p := range s.Posts() {
		if p.UserID == 1 {
			t.Errorf("post %d of user 1 survived", p.ID)
		}
	}
	for _, c := range s.Comments() {
		if c.AuthorID == 1 || c.PostID == 1 || c.PostID == 2 {
			t.Errorf("comment %d survived (author %d, post %d)", c.ID, c.AuthorID, c.PostID)
		}
	}
	if got := len(s.Comments()); got != 11-5 {
		t.Errorf("%d comments left, want 6", got)
	}
	for _, id := range []int64{1, 2} {
		if o, ok := s.Order(id); !ok || o.UserID != 1 {
			t.Errorf("order %d: %v %v; orders are sales records and stay", id, o, ok)
		}
	}
	if ok, _ := s.DeleteUser(1); ok {
		t.Error("second DeleteUser(1) = true")
	}
	// Ids are never reused.
	u, err := s.CreateUser("New", "new@example.com")
	if err != nil || u.ID != 7 {
		t.Fatalf("CreateUser after delete: %v %v, want id 7", u, err)
	}
}

func TestIDsAreNeverReused(t *testing.T) {
	s := NewStore()
	a, _ := s.CreateUser("A", "a@example.com")
	b, _ := s.CreateUser("B", "b@example.com")
	s.DeleteUser(b.ID)
	c, _ := s.CreateUser("C", "c@example.com")
	if a.ID != 1 || b.ID != 2 || c.ID != 3 {
		t.Errorf("ids %d %d %d, want 1 2 3", a.ID, b.ID, c.ID)
	}
}

func TestCreateUsersIsAllOrNothing(t *testing.T) {
	s := newTestStore(t)
	before := len(s.Users())
	_, err := s.CreateUsers([]NewUser{{"Ok", "ok@example.com"}, {"Bad", "not-an-email"}, {"Ok2", "ok2@example.com"}})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid || !strings.HasPrefix(e.Message, "user 1: ") {
		t.Fatalf("err = %v, want invalid naming user 1", err)
	}
	if got := len(s.Users()); got != before {
		t.Errorf("%d users after a failed batch, want %d", got, before)
	}
	users, err := s.CreateUsers([]NewUser{{"A", "a@example.com"}, {"B", "b@example.com"}})
	if err != nil || len(users) != 2 || users[0].ID != 7 || users[1].ID != 8 {
		t.Fatalf("CreateUsers = %v, %v", users, err)
	}
}

func TestUpdateUserChangesOnlyWhatIsGiven(t *testing.T) {
	s := newTestStore(t)
	name := "Alice J."
	u, err := s.UpdateUser(1, UserPatch{Name: &name})
	if err != nil || u.Name != name || u.Email != "alice@example.com" || !u.CreatedAt.Equal(mustUser(t, s, 1).CreatedAt) {
		t.Fatalf("UpdateUser = %+v, %v", u, err)
	}
	bad := "nope"
	if _, err := s.UpdateUser(1, UserPatch{Email: &bad}); err == nil {
		t.Fatal("invalid email accepted")
	}
	if got := mustUser(t, s, 1); got.Name != name || got.Email != "alice@example.com" {
		t.Errorf("failed update changed the store: %+v", got)
	}
	if _, err := s.UpdateUser(99, UserPatch{Name: &name}); err == nil || err.Error() != "user 99 not found" {
		t.Errorf("missing user: %v", err)
	}
}

func mustUser(t *testing.T, s *Store, id int64) *User {
	t.Helper()
	u, ok := s.User(id)
	if !ok {
		t.Fatalf("no user %d", id)
	}
	return u
}

func TestCreateOrderRules(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.CreateOrder(42, NewOrder{ProductID: 1, Quantity: 1}); asError(err).Kind != KindNotFound {
		t.Errorf("unknown user: %v", err)
	}
	_, err := s.CreateOrder(1, NewOrder{ProductID: 999, Quantity: 0})
	if e := asError(err); e.Kind != KindInvalid || len(e.Fields["productId"]) == 0 || len(e.Fields["quantity"]) == 0 {
		t.Errorf("bad order: %#v", err)
	}
	o, err := s.CreateOrder(1, NewOrder{ProductID: 2, Quantity: 3})
	if err != nil || o.CustomerName != "Alice Johnson" || o.UserID != 1 || !o.OrderDate.Equal(fixedTime) {
		t.Errorf("CreateOrder = %+v, %v", o, err)
	}
	if got := s.OrdersByProduct(2); len(got) != 3 || got[2].ID != o.ID {
		t.Errorf("orders of product 2: %v", got)
	}
}

// waiting reads the records sub has waiting, and reports whether it has ended.
func waiting(sub *Subscription) (records []any, ended bool) {
	for {
		v, ok, end := sub.Next()
		if !ok {
			return records, end
		}
		records = append(records, v)
	}
}

func TestFeedPublishesCreations(t *testing.T) {
	s := newTestStore(t)
	sub := s.Subscribe(8, nil, nil)
	users := s.Subscribe(8, func(v any) bool { _, ok := v.(*User); return ok }, nil)
	u, _ := s.CreateUser("Fed", "fed@example.com")
	p, _ := s.CreatePost(u.ID, "Title", "Body")
	s.UpdateUser(u.ID, UserPatch{})                          // not a creation
	s.CreateOrder(u.ID, NewOrder{ProductID: 1, Quantity: 1}) // not on the feed
	if got, ended := waiting(sub); len(got) != 2 || got[0] != u || got[1] != p || ended {
		t.Errorf("events %+v (ended %v), want user %d and post %d", got, ended, u.ID, p.ID)
	}
	if got, _ := waiting(users); len(got) != 1 || got[0] != u {
		t.Errorf("the users-only subscription got %+v", got)
	}
	sub.Close()
	if got, ended := waiting(sub); len(got) != 0 || !ended { // no error as the last record
		t.Errorf("after Close: %v, ended %v", got, ended)
	}
	sub.Close() // twice is fine
}

// TestFeedQueueStaysBounded: a reader that keeps up, however slowly, never makes
// its queue hold more than its buffer, and one read empty does not keep a burst's
// room.
func TestFeedQueueStaysBounded(t *testing.T) {
	s := newTestStore(t)
	const buffer = 16
	sub := s.Subscribe(buffer, nil, nil)
	defer sub.Close()
	for i := range 200 { // always buffer-1 behind
		if _, err := s.CreateUser(fmt.Sprint("Q", i), fmt.Sprintf("q%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
		if i >= buffer-2 {
			if _, ok, _ := sub.Next(); !ok {
				t.Fatalf("event %d: nothing to read", i)
			}
		}
		if sub.ended || cap(sub.queue) > buffer {
			t.Fatalf("event %d: ended %v, queue of %d for a buffer of %d", i, sub.ended, cap(sub.queue), buffer)
		}
	}
	if got, ended := waiting(sub); len(got) != buffer-2 || ended {
		t.Errorf("%d events left (ended %v), want %d", len(got), ended, buffer-2)
	}
	if cap(sub.queue) > smallQueue {
		t.Errorf("read empty, the queue keeps room for %d", cap(sub.queue))
	}
}

// TestReadsDoNotWaitForTheFeed: while subscribers are told of a write, the store
// serves reads. With the feed told under the write lock, a read waited as long as
// the telling: 1.2 ms for 1,000 subscriptions in the hostile check, on every read.
func TestReadsDoNotWaitForTheFeed(t *testing.T) {
	s := newTestStore(t)
	read := make(chan bool)
	sub := s.Subscribe(8, func(v any) bool {
		go func() { _, ok := s.User(1); read <- ok }()
		select {
		case <-read:
		case <-time.After(5 * time.Second):
			t.Error("a read waited while the feed was told of a write")
		}
		return true
	}, nil)
	defer sub.Close()
	if _, err := s.CreateUser("Reader", "reader@example.com"); err != nil {
		t.Fatal(err)
	}
	if got, _ := waiting(sub); len(got) != 1 {
		t.Errorf("%d events, want 1", len(got))
	}
}

// TestFeedReadWhileWritten: a reader woken by notify reads every record, in
// order, while writers publish; under -race this checks put and Next against
// each other.
func TestFeedReadWhileWritten(t *testing.T) {
	s := newTestStore(t)
	const writers, each = 4, 250
	wake := make(chan struct{}, 1)
	sub := s.Subscribe(writers*each, nil, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	got := make(chan []int64)
	go func() {
		var ids []int64
		for len(ids) < writers*each {
			v, ok, ended := sub.Next()
			switch {
			case ended:
				got <- ids
				return
			case !ok:
				<-wake
			default:
				ids = append(ids, v.(*User).ID)
			}
		}
		got <- ids
	}()
	createUsersAtOnce(t, s, writers, each)
	ids := <-got
	sub.Close()
	if len(ids) != writers*each || !slices.IsSorted(ids) {
		t.Errorf("read %d records (in order: %v), want %d in order", len(ids), slices.IsSorted(ids), writers*each)
	}
}

// createUsersAtOnce has writers goroutines create each users apiece, and waits
// for them.
func createUsersAtOnce(t *testing.T, s *Store, writers, each int) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.CreateUser(fmt.Sprint("W", w, "-", i), fmt.Sprintf("w%d-%d@example.com", w, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestFeedKeepsCommitOrder: writers racing each other are published in the order
// their changes were applied, which is the order of their ids.
func TestFeedKeepsCommitOrder(t *testing.T) {
	s := newTestStore(t)
	const writers, each = 4, 200
	sub := s.Subscribe(writers*each, nil, nil)
	createUsersAtOnce(t, s, writers, each)
	var last int64
	got, _ := waiting(sub)
	if len(got) != writers*each {
		t.Fatalf("%d events, want %d", len(got), writers*each)
	}
	for _, v := range got {
		u := v.(*User)
		if u.ID <= last {
			t.Fatalf("user %d published after user %d", u.ID, last)
		}
		last = u.ID
	}
}

// TestFeedNotifies: a subscription's notify is called after each record queued
// and after the subscription ends, by Close or for falling behind, and only then.
func TestFeedNotifies(t *testing.T) {
	s := newTestStore(t)
	var told, slowTold int
	sub := s.Subscribe(8, nil, func() { told++ })
	slow := s.Subscribe(1, nil, func() { slowTold++ })
	for i := range 2 {
		if _, err := s.CreateUser(fmt.Sprint("N", i), fmt.Sprintf("n%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := waiting(sub); told != 2 || len(got) != 2 {
		t.Errorf("told %d times with %d records waiting, want 2 and 2", told, len(got))
	}
	if got, _ := waiting(slow); slowTold != 2 || len(got) != 2 || got[1] != ErrSlowSubscriber {
		t.Errorf("the slow subscriber was told %d times, has %v waiting; want 2 (its record, then its end) and its record, then ErrSlowSubscriber", slowTold, got)
	}
	sub.Close()
	if told != 3 {
		t.Errorf("told %d times after Close, want 3", told)
	}
}

func TestFeedDropsSlowSubscriber(t *testing.T) {
	s := newTestStore(t)
	slow, fast := s.Subscribe(2, nil, nil), s.Subscribe(10, nil, nil)
	for i := range 5 {
		if _, err := s.CreateUser(fmt.Sprint("U", i), fmt.Sprintf("u%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, ended := waiting(slow)
	if len(got) != 3 || got[2] != ErrSlowSubscriber || !ended {
		t.Errorf("slow subscriber got %v (ended %v); want 2 users, then the error", got, ended)
	}
	if got, _ := waiting(fast); len(got) != 5 {
		t.Errorf("fast subscriber has %d events, want 5", len(got))
	}
	// A shutdown ends the others plainly: it is no failure of theirs.
	s.CloseFeed()
	got, ended = waiting(fast)
	if len(got) != 0 || !ended { // no error as the last record
		t.Errorf("CloseFeed: events %v (ended %v); want none, ended, no error", got, ended)
	}
	if got, ended := waiting(s.Subscribe(1, nil, nil)); len(got) != 0 || !ended {
		t.Errorf("subscribing after CloseFeed: events %v, ended %v; want none, ended", got, ended)
	}
}

// TestConcurrentReadWrite runs writers and readers together under -race and checks that
// the store ends as the writers were told.
func TestConcurrentReadWrite(t *testing.T) {
	s := newTestStore(t)
	var wg sync.WaitGroup
	created := make([][]int64, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				u, err := s.CreateUser(fmt.Sprintf("W%d-%d", w, i), fmt.Sprintf("w%d.%d@example.com", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				name := u.Name + "!"
				if _, err := s.UpdateUser(u.ID, UserPatch{Name: &name}); err != nil {
					t.Error(err)
				}
				if _, err := s.CreatePost(u.ID, "t", "c"); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					s.DeleteUser(u.ID)
				} else {
					created[w] = append(created[w], u.ID)
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				users := s.Users()
				for i := 1; i < len(users); i++ {
					if users[i-1].ID >= users[i].ID {
						t.Error("users out of id order")
					}
				}
				s.UserPage(UserQuery{Page: 1, PageSize: 10, Search: "w", SortBy: "name"})
				for _, p := range s.Posts() {
					if _, ok := s.User(p.UserID); !ok {
						// A post may outlive this read only if its user was deleted in between;
						// the post must then be gone too.
						if _, still := s.Post(p.ID); still {
							if _, ok := s.User(p.UserID); !ok {
								t.Errorf("post %d outlived user %d", p.ID, p.UserID)
							}
						}
					}
				}
			}
		})
	}
	wg.Wait()
	want := 6
	for _, ids := range created {
		want += len(ids)
		for _, id := range ids {
			if u := mustUser(t, s, id); !strings.HasSuffix(u.Name, "!") {
				t.Errorf("user %d lost its update", id)
			}
		}
	}
	if got := len(s.Users()); got != want {
		t.Errorf("%d users, want %d", got, want)
	}
}

func TestDemoDataset(t *testing.T) {
	ds := DemoDataset()
	if len(ds.Users) < 5 || len(ds.Posts) < 8 || len(ds.Products) < 12 || len(ds.Orders) < 10 {
		t.Errorf("demo dataset too small: %d users %d posts %d products %d orders", len(ds.Users), len(ds.Posts), len(ds.Products), len(ds.Orders))
	}
	categories, inactive := map[string]bool{}, 0
	for _, p := range ds.Products {
		categories[p.Category] = true
		if !p.IsActive {
			inactive++
		}
	}
	commented := map[int64]bool{}
	for _, c := range ds.Comments {
		commented[c.PostID] = true
	}
	if len(categories) < 3 || inactive == 0 || len(commented) < 8 {
		t.Errorf("demo: %d categories, %d inactive products, %d posts with comments", len(categories), inactive, len(commented))
	}
	if err := NewStore().Load(ds); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesBadDatasets(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"duplicate id", `{"users":[{"id":1,"name":"A","email":"a@x.io"},{"id":1,"name":"B","email":"b@x.io"}]}`, "users[1] (id 1): duplicate id"},
		{"zero id", `{"products":[{"id":0,"name":"P","price":1}]}`, "products[0]: id must be an integer from 1 to 2147483647, not 0"},
		// Every surface carries ids as 32-bit integers (gRPC int32, GraphQL Int, Edm.Int32).
		{"id past 32 bits", `{"users":[{"id":2147483647,"name":"A","email":"a@x.io"},{"id":2147483648,"name":"B","email":"b@x.io"}]}`, "users[1]: id must be an integer from 1 to 2147483647, not 2147483648"},
		{"post id past 32 bits", `{"users":[{"id":1,"name":"A","email":"a@x.io"}],"posts":[{"id":4294967297,"userId":1,"title":"T"}]}`, "posts[0]: id must be an integer from 1 to 2147483647, not 4294967297"},
		{"order id past 32 bits", `{"products":[{"id":4,"name":"P","price":1}],"orders":[{"id":2147483648,"productId":4,"quantity":1}]}`, "orders[0]: id must be an integer from 1 to 2147483647, not 2147483648"},
		{"dangling post", `{"posts":[{"id":1,"userId":9,"title":"T"}]}`, "posts[0] (id 1): userId 9 names no user"},
		{"dangling comment post", `{"users":[{"id":1,"name":"A","email":"a@x.io"}],"comments":[{"id":3,"postId":2,"authorId":1,"text":"x"}]}`, "comments[0] (id 3): postId 2 names no post"},
		{"dangling comment author", `{"users":[{"id":1,"name":"A","email":"a@x.io"}],"posts":[{"id":1,"userId":1,"title":"T"}],"comments":[{"id":1,"postId":1,"authorId":5,"text":"x"}]}`, "comments[0] (id 1): authorId 5 names no user"},
		{"dangling order product", `{"orders":[{"id":1,"productId":4,"quantity":1}]}`, "orders[0] (id 1): productId 4 names no product"},
		{"dangling order user", `{"products":[{"id":4,"name":"P","price":1}],"orders":[{"id":1,"userId":3,"productId":4,"quantity":1}]}`, "orders[0] (id 1): userId 3 names no user"},
		{"invalid user", `{"users":[{"id":2,"name":"A","email":"nope"}]}`, "users[0] (id 2): invalid input: email must be a valid email address"},
		{"bad quantity", `{"products":[{"id":4,"name":"P","price":1}],"orders":[{"id":1,"productId":4,"quantity":0}]}`, "orders[0] (id 1): quantity must be between 1 and 2147483647"},
		{"negative price", `{"products":[{"id":4,"name":"P","price":-1}]}`, "products[0] (id 4): price must not be negative"},
	}
	for _, tt := range tests {
		ds, err := ReadDataset(strings.NewReader(tt.json))
		if err != nil {
			t.Fatalf("%s: read: %v", tt.name, err)
		}
		s := NewStore()
		err = s.Load(ds)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
		if len(s.Users())+len(s.Products())+len(s.Posts()) != 0 {
			t.Errorf("%s: a refused dataset left records behind", tt.name)
		}
	}
}

func TestReadDatasetErrors(t *testing.T) {
	tests := []struct{ json, want string }{
		{``, "empty input: expected a JSON object"},
		{`{"users":[`, "malformed JSON: unexpected end of input"},
		{`{"usres":[]}`, `json: unknown field "usres"`},
		{`{"users":[{"id":"1"}]}`, "users[0].id must be an integer, not string (byte 16)"},
		{`{"products":[{"id":1,"price":1.23456}]}`, "1.23456 has more than 4 decimal places"},
		{`{} {}`, "unexpected data after the dataset object"},
		// A repeated key, which encoding/json would let the last win, refuses the file.
		{`{"users":[{"id":1,"name":"A","email":"a@x.io"}],"Users":[]}`, `dataset: repeated key "Users" (byte 48)`},
		{`{"users":[{"id":1,"name":"A","email":"a@x.io"},{"id":2,"name":"B","NAME":"C"}]}`, `users[1]: repeated key "NAME" (byte 66)`},
		{`{"orders":[{"id":1,"quantity":1,"quantity":null}]}`, `orders[0]: repeated key "quantity"`},
		// An unpaired surrogate escape, which encoding/json would read as U+FFFD.
		{`{"users":[{"id":1,"name":"Zo\ud800e","email":"a@x.io"}]}`, `users[0].name: unpaired surrogate escape \ud800 names no character (byte 28)`},
		{`{"posts":[{"id":1,"userId":1,"title":"T","content":"\n\\\udfff"}]}`, `posts[0].content: unpaired surrogate escape \udfff names no character (byte 56)`},
		// A value of the wrong kind may nest as deep as a request body: 64 levels.
		{`{"users":[{"id":1,"name":` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `}]}`, "users[0].name must be a string, not array (byte 25)"},
		{`{"users":[{"id":1,"name":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}]}`, "users[0].name: arrays and objects nested deeper than 64 levels at byte 86"},
		{`{"users":[{"id":1,"createdAt":{"a":` + strings.Repeat("[", 20000) + `}}]}`, "users[0].createdAt: arrays and objects nested deeper than 64 levels at byte 95"},
	}
	for _, tt := range tests {
		_, err := ReadDataset(strings.NewReader(tt.json))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.json, err, tt.want)
		}
	}
}

func TestLoadContinuesIDs(t *testing.T) {
	ds, err := ReadDataset(strings.NewReader(`{"users":[{"id":40,"name":"A","email":"a@x.io"},{"id":7,"name":"B","email":"b@x.io"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	if err := s.Load(ds); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.CreateUser("C", "c@x.io"); u.ID != 41 {
		t.Errorf("new id %d, want 41", u.ID)
	}
	if users := s.Users(); users[0].ID != 7 || users[1].ID != 40 {
		t.Errorf("users not in id order: %d %d", users[0].ID, users[1].ID)
	}
}

// FuzzLoadDataset feeds arbitrary bytes to the dataset reader and loader: no panic, and
// a dataset that loads has every reference resolving.
func FuzzLoadDataset(f *testing.F) {
	f.Add(demoJSON)
	f.Add([]byte(`{"users":[{"id":1,"name":"A","email":"a@x.io"}],"posts":[{"id":1,"userId":1,"title":"T"}]}`))
	f.Add([]byte(`{"products":[{"id":1,"name":"P","price":1e3}],"orders":[{"id":2,"productId":1,"quantity":3}]}`))
	f.Add([]byte(`{"products":[{"id":1,"name":"P","price":-0.00001}]}`))
	if seed, err := os.ReadFile("testdata/dataset-small.json"); err == nil {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ReadDataset(bytes.NewReader(data))
		if err != nil {
			return
		}
		s := NewStore()
		if err := s.Load(ds); err != nil {
			return
		}
		for _, p := range s.Posts() {
			if _, ok := s.User(p.UserID); !ok {
				t.Fatalf("post %d references missing user %d", p.ID, p.UserID)
			}
		}
		for _, o := range s.Orders() {
			if _, ok := s.Product(o.ProductID); !ok {
				t.Fatalf("order %d references missing product %d", o.ID, o.ProductID)
			}
		}
		if len(s.Users()) != len(ds.Users) || len(s.Orders()) != len(ds.Orders) {
			t.Fatal("loaded counts differ from the dataset")
		}
	})
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want Decimal
		out  string
	}{
		{"19.99", 199900, "19.99"}, {"0", 0, "0"}, {"5", 50000, "5"}, {"0.5", 5000, "0.5"},
		{"-3.25", -32500, "-3.25"}, {"1e2", 1000000, "100"}, {"1.5E-2", 150, "0.015"},
		{"999.9900", 9999900, "999.99"}, {"0.0001", 1, "0.0001"}, {"12.3400e1", 1234000, "123.4"},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err != nil || d != tt.want || d.String() != tt.out {
			t.Errorf("ParseDecimal(%q) = %d (%s), %v; want %d (%s)", tt.in, d, d, err, tt.want, tt.out)
		}
	}
	for _, bad := range []string{"", "-", ".", "1.00001", "abc", "1e99", "99999999999999999", "1..2", "0x10", "--1", "1e"} {
		if d, err := ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) = %d, want an error", bad, d)
		}
	}
}

// TestValuesSharedUntilChange: the []any list of a collection is made once and
// shared by every read until the collection changes; a change (create, update,
// delete) gives the next read a new list with it, and leaves the list readers
// already hold as it was.
func TestValuesSharedUntilChange(t *testing.T) {
	s := newTestStore(t)
	first := s.UserValues()
	if again := s.UserValues(); &again[0] != &first[0] || len(again) != len(first) {
		t.Fatal("two reads with no change between them made two lists")
	}
	if p := s.ProductValues(); len(p) == 0 || &s.ProductValues()[0] != &p[0] {
		t.Fatal("products: two reads with no change between them made two lists")
	}
	held := slices.Clone(first)
	name := "Zoë Shared"
	steps := []struct {
		name   string
		change func() error
		check  func(list []any) bool
	}{
		{"create", func() error { _, err := s.CreateUser("Ada Shared", "ada.shared@example.com"); return err },
			func(l []any) bool { return l[len(l)-1].(*User).Name == "Ada Shared" }},
		{"update", func() error { _, err := s.UpdateUser(1, UserPatch{Name: &name}); return err },
			func(l []any) bool { return l[0].(*User).Name == name }},
		{"delete", func() error { _, err := s.DeleteUser(1); return err },
			func(l []any) bool { return l[0].(*User).ID != 1 }},
	}
	for _, st := range steps {
		before := s.UserValues()
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if after := s.UserValues(); !st.check(after) {
			t.Errorf("%s: the list read after it does not show it", st.name)
		}
		if st.check(before) {
			t.Errorf("%s: the list read before it changed under its reader", st.name)
		}
	}
	if !slices.Equal(first, held) {
		t.Error("the first list changed under its reader")
	}
}

// TestIDsEndAt32Bits: a store whose ids reached maxID refuses new records with a
// conflict and stays as it was, since no surface could carry a larger id.
func TestIDsEndAt32Bits(t *testing.T) {
	ds, err := ReadDataset(strings.NewReader(`{
		"users":[{"id":2147483646,"name":"A","email":"a@x.io"}],
		"posts":[{"id":2147483647,"userId":2147483646,"title":"T"}],
		"comments":[{"id":2147483647,"postId":2147483647,"authorId":2147483646,"text":"x"}],
		"products":[{"id":4,"name":"P","price":1}],
		"orders":[{"id":2147483647,"productId":4,"quantity":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	if err := s.Load(ds); err != nil {
		t.Fatal(err)
	}
	conflict := func(what string, err error) {
		t.Helper()
		if e := asError(err); err == nil || e.Kind != KindConflict || !strings.Contains(e.Message, "ids end at 2147483647") {
			t.Errorf("%s: %v, want a conflict naming the last id", what, err)
		}
	}
	_, err = s.CreateUsers([]NewUser{{"B", "b@x.io"}, {"C", "c@x.io"}})
	conflict("two users", err)
	_, err = s.CreatePost(2147483646, "T", "")
	conflict("post", err)
	_, err = s.AddComment(2147483647, 2147483646, "y")
	conflict("comment", err)
	_, err = s.CreateOrder(2147483646, NewOrder{ProductID: 4, Quantity: 1})
	conflict("order", err)
	if n := len(s.Users()); n != 1 {
		t.Fatalf("%d users after refused creations, want 1", n)
	}
	u, err := s.CreateUser("B", "b@x.io") // the last id is still free
	if err != nil || u.ID != 2147483647 {
		t.Fatalf("last user: %v, %v", u, err)
	}
	_, err = s.CreateUser("C", "c@x.io")
	conflict("user past the last id", err)
}

// TestReadsDoNotWaitForAFanOut holds one writer inside its fan-out to subscribers
// (their want runs while the feed is held) and checks that a second writer, and a
// reader behind it, are not held up by it: the feed is told outside the store's lock.
// The events still reach subscribers in commit order.
func TestReadsDoNotWaitForAFanOut(t *testing.T) {
	s := NewStore()
	inFanOut, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sub := s.Subscribe(8, func(any) bool {
		once.Do(func() { close(inFanOut); <-release })
		return true
	}, nil)
	firstDone := make(chan error, 1)
	go func() { _, err := s.CreateUser("First", "first@example.com"); firstDone <- err }()
	<-inFanOut
	secondDone := make(chan *User, 1)
	go func() {
		u, err := s.CreateUser("Second", "second@example.com")
		if err != nil {
			t.Error(err)
		}
		secondDone <- u
	}()
	// A failure guard, not a timing: on failure the second writer never returns.
	select {
	case u := <-secondDone:
		if got, ok := s.User(u.ID); !ok || got.Name != "Second" {
			t.Errorf("read after the second write: %v %v", got, ok)
		}
	case <-time.After(10 * time.Second):
		t.Error("a second writer waits for the first one's fan-out, holding the store's lock")
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"First", "Second"} {
		v, ok, _ := sub.Next()
		if u, _ := v.(*User); !ok || u.Name != want {
			t.Fatalf("next event: %v %v, want user %s", v, ok, want)
		}
	}
}

// TestPublishQueueOrder has many writers create users at once and checks that a
// subscriber hears of them in id order, which is commit order.
func TestPublishQueueOrder(t *testing.T) {
	s := NewStore()
	sub := s.Subscribe(1000, nil, nil)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := s.CreateUser("U", fmt.Sprintf("u%d-%d@example.com", w, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var last int64
	for n := 0; ; n++ {
		v, ok, _ := sub.Next()
		if !ok {
			if n != 800 {
				t.Errorf("%d events, want 800", n)
			}
			break
		}
		if id := v.(*User).ID; id <= last {
			t.Fatalf("event for user %d after user %d", id, last)
		} else {
			last = id
		}
	}
}

// TestPublishQueueIsBounded holds the fan-out of the first event and has one writer
// create users one after another: once maxPendingPublish changes wait to be
// published, the writer waits for the publisher instead of queuing more. Released,
// every event reaches the subscriber, in order. synctest.Wait returns once every
// goroutine but the test's waits for the others, which is when the writer is stuck
// (or, were the queue unbounded, done), and when the released publisher is idle.
func TestPublishQueueIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewStore()
		inFanOut, held := make(chan struct{}), make(chan struct{})
		release := sync.OnceFunc(func() { close(held) })
		defer release() // a failure lets the goroutines end, so it reads as itself
		var once sync.Once
		sub := s.Subscribe(3*maxPendingPublish, func(any) bool {
			once.Do(func() { close(inFanOut); <-held })
			return true
		}, nil)
		go s.CreateUser("First", "first@example.com")
		<-inFanOut
		const n = 2 * maxPendingPublish
		done := make(chan error, 1)
		go func() {
			for i := range n {
				if _, err := s.CreateUser("U", fmt.Sprintf("u%d@example.com", i)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the writer finished (%v) with the publisher held", err)
		default:
		}
		if p := len(s.published.queue); p != maxPendingPublish {
			t.Fatalf("the writer waits with %d changes pending, want %d", p, maxPendingPublish)
		}
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var last int64
		for count := 0; count < n+1; count++ {
			v, ok, _ := sub.Next()
			if !ok {
				t.Fatalf("%d events, want %d", count, n+1)
			}
			if id := v.(*User).ID; id <= last {
				t.Fatalf("event for user %d after user %d", id, last)
			} else {
				last = id
			}
		}
	})
}
