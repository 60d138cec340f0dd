package main

import (
	"strings"
	"testing"
)

// TestEntityRulesAgree holds the create paths and the dataset loader to one set of
// entity rules (model.go): for each rule, a value written through the store's create
// call and the same value in a dataset are both refused, naming the same field with
// the same message, or both accepted and stored alike (the loader had
// accepted what the create paths refused).
func TestEntityRulesAgree(t *testing.T) {
	// base is the dataset both paths start from: the create path loads it first, the
	// loader gets it with the record under test added.
	base := func() *Dataset {
		return &Dataset{
			Users:    []User{{ID: 1, Name: "Ann", Email: "ann@example.com"}},
			Posts:    []Post{{ID: 1, UserID: 1, Title: "First", Content: "c"}},
			Products: []Product{{ID: 1, Name: "Lamp", Price: 10 * DecimalScale}},
		}
	}
	type ruleCase struct {
		name, field string // field "" : both paths accept
		create      func(s *Store) (stored string, err error)
		load        func(ds *Dataset) (stored func(s *Store) string)
	}
	user := func(name, email string) ruleCase {
		return ruleCase{
			create: func(s *Store) (string, error) {
				u, err := s.CreateUser(name, email)
				if err != nil {
					return "", err
				}
				return u.Name + "|" + u.Email, nil
			},
			load: func(ds *Dataset) func(s *Store) string {
				ds.Users = append(ds.Users, User{ID: 2, Name: name, Email: email})
				return func(s *Store) string { u, _ := s.User(2); return u.Name + "|" + u.Email }
			},
		}
	}
	post := func(title, content string) ruleCase {
		return ruleCase{
			create: func(s *Store) (string, error) {
				p, err := s.CreatePost(1, title, content)
				if err != nil {
					return "", err
				}
				return p.Title + "|" + p.Content, nil
			},
			load: func(ds *Dataset) func(s *Store) string {
				ds.Posts = append(ds.Posts, Post{ID: 2, UserID: 1, Title: title, Content: content})
				return func(s *Store) string { p, _ := s.Post(2); return p.Title + "|" + p.Content }
			},
		}
	}
	comment := func(text string) ruleCase {
		return ruleCase{
			create: func(s *Store) (string, error) {
				c, err := s.AddComment(1, 1, text)
				if err != nil {
					return "", err
				}
				return c.Text, nil
			},
			load: func(ds *Dataset) func(s *Store) string {
				ds.Comments = append(ds.Comments, Comment{ID: 1, PostID: 1, AuthorID: 1, Text: text})
				return func(s *Store) string { return s.CommentsOnPost(1)[0].Text }
			},
		}
	}
	order := func(customerName string, quantity int64) ruleCase {
		return ruleCase{
			create: func(s *Store) (string, error) {
				o, err := s.CreateOrder(1, NewOrder{ProductID: 1, Quantity: quantity, CustomerName: customerName})
				if err != nil {
					return "", err
				}
				return o.CustomerName, nil
			},
			load: func(ds *Dataset) func(s *Store) string {
				ds.Orders = append(ds.Orders, Order{ID: 1, UserID: 1, ProductID: 1, Quantity: quantity, CustomerName: customerName})
				return func(s *Store) string { o, _ := s.Order(1); return o.CustomerName }
			},
		}
	}
	named := func(name, field string, c ruleCase) ruleCase { c.name, c.field = name, field; return c }
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	cases := []ruleCase{
		named("user name empty", "name", user("  ", "a@example.com")),
		named("user name 101 characters", "name", user(long("é", 101), "a@example.com")),
		named("user name control character", "name", user("A\x1b[2J", "a@example.com")),
		named("user email invalid", "email", user("Bo", "not an address")),
		named("user email too long", "email", user("Bo", long("a", 250)+"@x.io")),
		named("user trimmed", "", user("  Bo  ", " bo@example.com ")),

		named("post title empty", "title", post(" ", "c")),
		named("post title 300 characters", "title", post(long("é", 300), "c")),
		named("post title two lines", "title", post("a\nb", "c")),
		named("post title bidi override", "title", post("a\u202eb", "c")),
		named("post content 200 kB", "content", post("T", long("a", 200_000))),
		named("post content 100,001 bytes", "content", post("T", long("a", 100_001))),
		named("post content control character", "content", post("T", "a\x07")),
		named("post title 200 characters, content 100,000 bytes", "", post(long("é", 200), long("a", 100_000))),
		named("post title trimmed", "", post("  T  ", " keeps its spaces ")),

		named("comment empty", "text", comment("")),
		named("comment invisible only", "text", comment("\u200b")),
		named("comment 10,001 bytes", "text", comment(long("a", 10_001))),
		named("comment control character", "text", comment("a\x00")),
		named("comment trimmed", "", comment("  nice\npost  ")),

		named("order customerName 500 characters", "customerName", order(long("é", 500), 1)),
		named("order customerName control character", "customerName", order("x\u009b", 1)),
		named("order customerName two lines", "customerName", order("a\nb", 1)),
		named("order quantity 0", "quantity", order("", 0)),
		named("order quantity 2^31", "quantity", order("", maxQuantity+1)),
		named("order customerName defaults to the user's", "", order("  ", 1)),
		named("order customerName trimmed", "", order(" Bo ", maxQuantity)),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewStore()
			if err := s.Load(base()); err != nil {
				t.Fatal(err)
			}
			created, createErr := c.create(s)
			ds := base()
			stored := c.load(ds)
			loaded := NewStore()
			loadErr := loaded.Load(ds)
			if c.field == "" {
				if createErr != nil || loadErr != nil {
					t.Fatalf("create: %v; load: %v; want both accepted", createErr, loadErr)
				}
				if got := stored(loaded); got != created {
					t.Fatalf("create stored %q, load stored %q", created, got)
				}
				return
			}
			e, ok := createErr.(*Error)
			if !ok || e.Kind != KindInvalid || len(e.Fields[c.field]) == 0 {
				t.Fatalf("create: %v, want a refusal of %s", createErr, c.field)
			}
			want := "(id " // the loader names the record, then the field as create did
			if loadErr == nil || !strings.Contains(loadErr.Error(), want) ||
				!strings.Contains(loadErr.Error(), c.field+" "+strings.Join(e.Fields[c.field], ", ")) {
				t.Fatalf("load: %v; create refused %s: %v", loadErr, c.field, e.Fields[c.field])
			}
		})
	}
}

// TestProductRules: products come only from datasets (no surface creates one), so the
// loader is their only path; it applies validateProduct.
func TestProductRules(t *testing.T) {
	for _, tt := range []struct {
		p    Product
		want string
	}{
		{Product{ID: 1, Name: " ", Price: 1}, "products[0] (id 1): name is required"},
		{Product{ID: 1, Name: strings.Repeat("é", 101), Price: 1}, "products[0] (id 1): name must be at most 100 characters"},
		{Product{ID: 1, Name: "P", Category: "a\nb", Price: 1}, "products[0] (id 1): category must be a single line without tabs"},
		{Product{ID: 1, Name: "P", Price: -1}, "products[0] (id 1): price must not be negative"},
		{Product{ID: 1, Name: " P ", Category: " Lamps ", Price: 1}, ""},
	} {
		s := NewStore()
		err := s.Load(&Dataset{Products: []Product{tt.p}})
		if tt.want == "" {
			if p, _ := s.Product(1); err != nil || p.Name != "P" || p.Category != "Lamps" {
				t.Errorf("%+v: %v, stored %+v", tt.p, err, p)
			}
			continue
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("%+v: %v, want %q", tt.p, err, tt.want)
		}
	}
}
