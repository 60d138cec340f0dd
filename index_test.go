package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// checkIndexes compares every index-backed read with a scan of all records.
func checkIndexes(t *testing.T, s *Store) {
	t.Helper()
	users, posts, comments, orders := s.Users(), s.Posts(), s.Comments(), s.Orders()
	idsOf := func(n int, id func(int) int64) []int64 {
		out := make([]int64, n)
		for i := range n {
			out[i] = id(i)
		}
		return out
	}
	for _, u := range users {
		var want []int64
		for _, p := range posts {
			if p.UserID == u.ID {
				want = append(want, p.ID)
			}
		}
		got := s.PostsByUser(u.ID, -1)
		if g := idsOf(len(got), func(i int) int64 { return got[i].ID }); !slices.Equal(g, want) && len(g)+len(want) > 0 {
			t.Fatalf("posts of user %d: %v, scan says %v", u.ID, g, want)
		}
		want = nil
		for _, o := range orders {
			if o.UserID == u.ID {
				want = append(want, o.ID)
			}
		}
		gotO, _ := s.OrdersByUser(u.ID)
		if g := idsOf(len(gotO), func(i int) int64 { return gotO[i].ID }); !slices.Equal(g, want) && len(g)+len(want) > 0 {
			t.Fatalf("orders of user %d: %v, scan says %v", u.ID, g, want)
		}
	}
	for _, p := range posts {
		var want []int64
		for _, c := range comments {
			if c.PostID == p.ID {
				want = append(want, c.ID)
			}
		}
		got := s.CommentsOnPost(p.ID)
		if g := idsOf(len(got), func(i int) int64 { return got[i].ID }); !slices.Equal(g, want) && len(g)+len(want) > 0 {
			t.Fatalf("comments on post %d: %v, scan says %v", p.ID, g, want)
		}
	}
	for _, pr := range s.Products() {
		var want []int64
		for _, o := range orders {
			if o.ProductID == pr.ID {
				want = append(want, o.ID)
			}
		}
		got := s.OrdersByProduct(pr.ID)
		if g := idsOf(len(got), func(i int) int64 { return got[i].ID }); !slices.Equal(g, want) && len(g)+len(want) > 0 {
			t.Fatalf("orders of product %d: %v, scan says %v", pr.ID, g, want)
		}
	}
	for _, by := range []string{"name", "email"} {
		want := slices.Clone(users)
		key := func(u *User) string { return strings.ToLower(u.Name) }
		if by == "email" {
			key = func(u *User) string { return strings.ToLower(u.Email) }
		}
		slices.SortStableFunc(want, func(a, b *User) int { return cmp.Or(strings.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID)) })
		got, total := s.UserPage(UserQuery{SortBy: by, Page: 1, PageSize: len(users) + 1})
		if total != len(users) || !slices.Equal(got, want) {
			t.Fatalf("users by %s disagree with a sort", by)
		}
	}
	for _, o := range []*sortedUsers{&s.usersByName, &s.usersByEmail} {
		for i, c := range o.chunks {
			if len(c) == 0 || len(c) > 2*chunkUsers {
				t.Fatalf("chunk %d of %d holds %d users", i, len(o.chunks), len(c))
			}
		}
	}
	for _, c := range comments { // no comment outlives its post or author
		if _, ok := s.Post(c.PostID); !ok {
			t.Fatalf("comment %d on missing post %d", c.ID, c.PostID)
		}
		if _, ok := s.User(c.AuthorID); !ok {
			t.Fatalf("comment %d by missing user %d", c.ID, c.AuthorID)
		}
	}
}

// TestIndexesMatchScans applies random mutations and checks after each batch that the
// indexes agree with scans, also after a restart from disk.
func TestIndexesMatchScans(t *testing.T) {
	testkit.SkipIfShort(t, "applies thousands of random mutations with restarts from disk")
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, 8<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"ann", "Bob", "anna", "ANN", "carl", "Dana", "bob"}
	pick := func(list []int64) int64 {
		if len(list) == 0 {
			return 1
		}
		return list[rng.IntN(len(list))]
	}
	for round := range 30 {
		for range 40 {
			users, posts := s.Users(), s.Posts()
			uids := make([]int64, len(users))
			for i, u := range users {
				uids[i] = u.ID
			}
			pids := make([]int64, len(posts))
			for i, p := range posts {
				pids[i] = p.ID
			}
			n := names[rng.IntN(len(names))]
			switch rng.IntN(7) {
			case 0, 1:
				s.CreateUser(n, fmt.Sprintf("%s%d@Example.com", n, rng.IntN(50)))
			case 2:
				s.UpdateUser(pick(uids), UserPatch{Name: &n})
			case 3:
				s.DeleteUser(pick(uids))
			case 4:
				s.CreatePost(pick(uids), "t", "c")
			case 5:
				s.AddComment(pick(pids), pick(uids), "x")
			case 6:
				s.CreateOrder(pick(uids), NewOrder{ProductID: int64(1 + rng.IntN(13)), Quantity: 1})
			}
		}
		checkIndexes(t, s)
		if round%10 == 9 {
			s.Close()
			s = openTestDurable(t, dir, nil, 8<<10)
			checkIndexes(t, s)
		}
	}
	s.Close()
}

func TestLoadOutOfOrderKeepsIndexes(t *testing.T) {
	ds := DemoDataset()
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(ds.Users), reflect.Swapper(ds.Users))
	rng.Shuffle(len(ds.Posts), func(i, j int) { ds.Posts[i], ds.Posts[j] = ds.Posts[j], ds.Posts[i] })
	rng.Shuffle(len(ds.Comments), func(i, j int) { ds.Comments[i], ds.Comments[j] = ds.Comments[j], ds.Comments[i] })
	rng.Shuffle(len(ds.Orders), func(i, j int) { ds.Orders[i], ds.Orders[j] = ds.Orders[j], ds.Orders[i] })
	s := NewStore()
	if err := s.Load(ds); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s)
	if users := s.Users(); users[0].ID != 1 || users[5].ID != 6 {
		t.Error("users not in id order after a shuffled load")
	}
}

// TestSortedUsersAcrossChunks drives the sorted user indexes well past one chunk with inserts,
// renames and deletes (and a bulk load in between), and checks every page against a
// sort of all users.
func TestSortedUsersAcrossChunks(t *testing.T) {
	s := NewStore()
	rng := rand.New(rand.NewPCG(5, 6))
	// Words are short and few, so keys tie; some start with a long shared prefix.
	word := func() string {
		w := fmt.Sprintf("%c%c%c", 'a'+rng.IntN(6), 'A'+rng.IntN(6), 'a'+rng.IntN(6))
		if rng.IntN(4) == 0 {
			w = "Prefix" + w[:1+rng.IntN(3)]
		}
		return w
	}
	var ids []int64
	check := func() {
		t.Helper()
		users := s.Users()
		for _, by := range []string{"name", "email"} {
			want := slices.Clone(users)
			key := func(u *User) string { return strings.ToLower(u.Name) }
			if by == "email" {
				key = func(u *User) string { return strings.ToLower(u.Email) }
			}
			slices.SortFunc(want, func(a, b *User) int { return cmp.Or(strings.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID)) })
			for _, size := range []int{1, 7, 100} {
				for page := 1; (page-1)*size <= len(want); page += 1 + rng.IntN(40) {
					got, total := s.UserPage(UserQuery{SortBy: by, Page: page, PageSize: size})
					lo := min((page-1)*size, len(want))
					if total != len(want) || !slices.Equal(got, want[lo:min(lo+size, len(want))]) {
						t.Fatalf("by %s, page %d of %d: wrong users", by, page, size)
					}
				}
			}
		}
	}
	for round := range 4 {
		for range 1500 {
			switch op := rng.IntN(10); {
			case op < 6 || len(ids) == 0:
				u, err := s.CreateUser(word()+" "+word(), word()+"@"+word()+".io")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, u.ID)
			case op < 8:
				name := word()
				s.UpdateUser(ids[rng.IntN(len(ids))], UserPatch{Name: &name})
			default:
				k := rng.IntN(len(ids))
				s.DeleteUser(ids[k])
				ids = slices.Delete(ids, k, k+1)
			}
		}
		check()
		if round == 1 { // a bulk load on top of a populated store merges into the orders
			var more []User
			for i := range 700 {
				more = append(more, User{ID: int64(100000 + round*1000 + i), Name: word(), Email: word() + "@x.io"})
			}
			if err := s.Load(&Dataset{Users: more}); err != nil {
				t.Fatal(err)
			}
			check()
		}
	}
	if n := len(s.usersByName.chunks); n < 4 {
		t.Errorf("only %d chunks: the test did not reach splitting", n)
	}
}
