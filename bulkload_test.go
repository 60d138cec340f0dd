package main

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSortedUsersSortLoaded sorts awkward keys (empty, zero bytes, bytes above 0x7f,
// long shared prefixes, equal keys) after a bulk load and checks the order against
// strings.Compare with ties by id.
func TestSortedUsersSortLoaded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"", "a", "b", "\x00", "\x00\x00", "\xff", "é", "z", strings.Repeat("x", 14), strings.Repeat("x", 15), strings.Repeat("x", 16), "user1234567@example.com"}
	key := func() string {
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for _, n := range []int{0, 1, 2, 10, 1000, 20000} {
		for _, byEmail := range []bool{false, true} {
			o := &sortedUsers{byEmail: byEmail}
			var users []*User
			for i := range n {
				u := &User{ID: int64(rng.IntN(n+1) + 1), nameKey: key(), emailKey: key()}
				if i%3 == 0 && i > 0 { // an equal key, a different id
					u.nameKey, u.emailKey = users[i-1].nameKey, users[i-1].emailKey
				}
				users = append(users, u)
			}
			o.loaded = slices.Clone(users)
			o.sortLoaded()
			var got []*User
			o.each(func(u *User) bool { got = append(got, u); return true })
			want := slices.Clone(users)
			slices.SortStableFunc(want, o.compare)
			for i := range want {
				if o.compare(got[i], want[i]) != 0 {
					t.Fatalf("%d users by email=%v: position %d holds %q (id %d), want %q (id %d)",
						n, byEmail, i, o.key(got[i]), got[i].ID, o.key(want[i]), want[i].ID)
				}
			}
			if len(got) != n {
				t.Fatalf("%d users: %d in the order", n, len(got))
			}
		}
	}
}

// TestLoadReportsTheFirstError checks that a dataset large enough to be checked in
// parallel parts reports what checking one user at a time would: the first bad user
// by index, and for one user a bad or duplicate id before its fields.
func TestLoadReportsTheFirstError(t *testing.T) {
	const n = 3*minSpan + 17
	users := func(edit func([]User)) []User {
		us := make([]User, n)
		for i := range us {
			us[i] = User{ID: int64(i + 1), Name: fmt.Sprintf("User %d", i), Email: fmt.Sprintf("u%d@example.com", i)}
		}
		edit(us)
		return us
	}
	late, early := n-5, minSpan+3 // in different parts
	tests := []struct {
		name string
		edit func([]User)
		want string
	}{
		{"invalid, later part first", func(us []User) { us[late].Email = "x"; us[early].Name = " " },
			fmt.Sprintf("users[%d] (id %d): invalid input: name is required", early, early+1)},
		{"duplicate before invalid", func(us []User) { us[late].Email = "x"; us[early].ID = 1 },
			fmt.Sprintf("users[%d] (id 1): duplicate id", early)},
		{"invalid before duplicate", func(us []User) { us[late].ID = 1; us[early].Email = "x" },
			fmt.Sprintf("users[%d] (id %d): invalid input: email must be a valid email address", early, early+1)},
		{"duplicate and invalid", func(us []User) { us[early].ID, us[early].Email = 2, "x" },
			fmt.Sprintf("users[%d] (id 2): duplicate id", early)},
		{"bad id", func(us []User) { us[late].Email = "x"; us[early].ID, us[early].Email = -4, "x" },
			fmt.Sprintf("users[%d]: id must be an integer from 1 to 2147483647, not -4", early)},
		{"last", func(us []User) { us[n-1].ID = 7 }, fmt.Sprintf("users[%d] (id 7): duplicate id", n-1)},
	}
	for _, tt := range tests {
		s := NewStore()
		err := s.Load(&Dataset{Users: users(tt.edit)})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
		if len(s.Users()) != 0 {
			t.Errorf("%s: a refused dataset left users behind", tt.name)
		}
	}
}

// TestLoadIntoPopulatedStore loads a dataset into a store that holds records: they
// are added to those there, and a refused dataset leaves the store as it was.
func TestLoadIntoPopulatedStore(t *testing.T) {
	s := NewStore()
	s.clock = func() time.Time { return fixedTime }
	for _, name := range []string{"Mia", "Al", "Zoe"} {
		if _, err := s.CreateUser(name, strings.ToLower(name)+"@x.io"); err != nil {
			t.Fatal(err)
		}
	}
	bad := &Dataset{Users: []User{{ID: 10, Name: "Bo", Email: "bo@x.io"}}, Posts: []Post{{ID: 1, UserID: 1, Title: "T"}}}
	if err := s.Load(bad); err == nil || err.Error() != "posts[0] (id 1): userId 1 names no user" {
		t.Fatalf("err = %v", err)
	}
	ds := &Dataset{Users: []User{{ID: 10, Name: "Bo", Email: "bo@x.io"}, {ID: 8, Name: "Cy", Email: "cy@x.io"}},
		Posts: []Post{{ID: 1, UserID: 8, Title: "T"}}}
	if err := s.Load(ds); err != nil {
		t.Fatal(err)
	}
	page, total := s.UserPage(UserQuery{SortBy: "name", Page: 1, PageSize: 10})
	var names []string
	for _, u := range page {
		names = append(names, u.Name)
	}
	if total != 5 || strings.Join(names, ",") != "Al,Bo,Cy,Mia,Zoe" {
		t.Errorf("users by name: %v of %d", names, total)
	}
	if u, _ := s.CreateUser("Di", "di@x.io"); u.ID != 11 {
		t.Errorf("new id %d, want 11", u.ID)
	}
	if posts := s.PostsByUser(8, -1); len(posts) != 1 {
		t.Errorf("posts of user 8: %v", posts)
	}
	checkIndexes(t, s)
}

// loadErrorOnePass is Load's checking done the plain way, one record after another,
// for FuzzLoadMatchesOnePass to hold Load to.
func loadErrorOnePass(ds *Dataset) error {
	seen := map[string]map[int64]bool{"users": {}, "posts": {}, "comments": {}, "products": {}, "orders": {}}
	check := func(coll string, i int, id int64) error {
		switch {
		case id <= 0 || id > 1<<31-1:
			return fmt.Errorf("%s[%d]: id must be an integer from 1 to 2147483647, not %d", coll, i, id)
		case seen[coll][id]:
			return fmt.Errorf("%s[%d] (id %d): duplicate id", coll, i, id)
		}
		seen[coll][id] = true
		return nil
	}
	for i := range ds.Users {
		u := &ds.Users[i]
		if err := check("users", i, u.ID); err != nil {
			return err
		}
		if _, _, err := validateUser(u.Name, u.Email); err != nil {
			return fmt.Errorf("users[%d] (id %d): %v", i, u.ID, err)
		}
	}
	for i, p := range ds.Posts {
		switch err := check("posts", i, p.ID); {
		case err != nil:
			return err
		case !seen["users"][p.UserID]:
			return fmt.Errorf("posts[%d] (id %d): userId %d names no user", i, p.ID, p.UserID)
		}
		if _, _, err := validatePost(p.Title, p.Content); err != nil {
			return recordError("posts", i, p.ID, err)
		}
	}
	for i, c := range ds.Comments {
		switch err := check("comments", i, c.ID); {
		case err != nil:
			return err
		case !seen["posts"][c.PostID]:
			return fmt.Errorf("comments[%d] (id %d): postId %d names no post", i, c.ID, c.PostID)
		case !seen["users"][c.AuthorID]:
			return fmt.Errorf("comments[%d] (id %d): authorId %d names no user", i, c.ID, c.AuthorID)
		}
		if _, err := validateComment(c.Text); err != nil {
			return recordError("comments", i, c.ID, err)
		}
	}
	for i, p := range ds.Products {
		switch err := check("products", i, p.ID); {
		case err != nil:
			return err
		}
		if _, _, err := validateProduct(p.Name, p.Category, p.Price); err != nil {
			return recordError("products", i, p.ID, err)
		}
	}
	for i, o := range ds.Orders {
		switch err := check("orders", i, o.ID); {
		case err != nil:
			return err
		case !seen["products"][o.ProductID]:
			return fmt.Errorf("orders[%d] (id %d): productId %d names no product", i, o.ID, o.ProductID)
		case o.UserID != 0 && !seen["users"][o.UserID]:
			return fmt.Errorf("orders[%d] (id %d): userId %d names no user", i, o.ID, o.UserID)
		}
		if _, err := validateOrder(o.CustomerName, o.Quantity); err != nil {
			return recordError("orders", i, o.ID, err)
		}
	}
	return nil
}

// FuzzLoadMatchesOnePass holds Load to checking one record after another: the same
// error, or the dataset loaded whole with its users in order by name and by email.
func FuzzLoadMatchesOnePass(f *testing.F) {
	f.Add(demoJSON)
	f.Add([]byte(`{"users":[{"id":2,"name":" B ","email":"b@x.io"},{"id":1,"name":"a","email":"A@x.io"}],"posts":[{"id":1,"userId":2,"title":"T"}],` +
		`"products":[{"id":1,"name":"P","price":1}],"orders":[{"id":1,"userId":1,"productId":1,"quantity":1},{"id":2,"productId":1,"quantity":2}]}`))
	f.Add([]byte(`{"users":[{"id":1,"name":"A","email":"a@x.io"},{"id":1,"name":"","email":"b@x.io"}]}`))
	f.Add([]byte(`{"users":[{"id":3,"name":"A","email":"a@x.io"},{"id":-1,"name":"B","email":"b"}],"comments":[{"id":1,"postId":1,"authorId":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ReadDataset(bytes.NewReader(data))
		if err != nil {
			return
		}
		want := loadErrorOnePass(ds)
		s := NewStore()
		err = s.Load(ds)
		if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
			t.Fatalf("Load: %v, checked one by one: %v", err, want)
		}
		if err != nil {
			return
		}
		users := s.Users()
		if len(users) != len(ds.Users) || len(s.Posts()) != len(ds.Posts) || len(s.Orders()) != len(ds.Orders) {
			t.Fatal("loaded counts differ from the dataset")
		}
		checkIndexes(t, s) // the orders and owner indexes agree with scans
	})
}

// recordError names the record a validate function refused, and each bad field with
// what is wrong with it: "posts[3] (id 4): title is required".
func recordError(coll string, i int, id int64, err error) error {
	fields := asError(err).Fields
	names := slices.Sorted(maps.Keys(fields))
	parts := make([]string, len(names))
	for k, name := range names {
		parts[k] = name + " " + strings.Join(fields[name], ", ")
	}
	return fmt.Errorf("%s[%d] (id %d): %s", coll, i, id, strings.Join(parts, "; "))
}
