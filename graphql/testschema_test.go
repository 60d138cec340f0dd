package graphql

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testStore is the in-memory data behind the test schema. Objects are
// map[string]any so that the default resolver reads their fields.
type testStore struct {
	mu       sync.Mutex
	users    []map[string]any
	posts    []map[string]any
	comments []map[string]any
	userSubs []testFeed
}

func day(d, h int) time.Time { return time.Date(2024, 1, d, h, 0, 0, 0, time.UTC) }

func newTestStore() *testStore {
	st := &testStore{}
	for i, u := range []struct{ name, email, role string }{
		{"Alice", "alice@example.com", "ADMIN"},
		{"Bob", "bob@example.com", "MEMBER"},
		{"Carol", "carol@example.com", "GUEST"},
	} {
		st.users = append(st.users, map[string]any{"__typename": "User", "id": i + 1, "name": u.name, "email": u.email, "createdAt": day(1, 9+i), "role": u.role})
	}
	for i, p := range []struct {
		user        int
		title, text string
	}{
		{1, "Hello", "First post"},
		{1, "GraphQL", "Second post"},
		{2, "Bob's post", "Hi"},
		{1, "Third", "More"},
	} {
		st.posts = append(st.posts, map[string]any{"__typename": "Post", "id": i + 1, "userId": p.user, "title": p.title, "content": p.text, "createdAt": day(2, 9+i)})
	}
	for i, c := range []struct {
		post, author int
		text         string
	}{
		{1, 2, "Nice"},
		{1, 3, "Agreed"},
		{2, 2, "Cool"},
		{3, 1, "Welcome"},
	} {
		st.comments = append(st.comments, map[string]any{"id": i + 1, "postId": c.post, "authorId": c.author, "text": c.text, "createdAt": day(3, 9+i)})
	}
	return st
}

func (st *testStore) user(id int) map[string]any {
	for _, u := range st.users {
		if u["id"] == id {
			return u
		}
	}
	return nil
}

func (st *testStore) post(id int) map[string]any {
	for _, p := range st.posts {
		if p["id"] == id {
			return p
		}
	}
	return nil
}

func loadTestSDL(t testing.TB) string {
	t.Helper()
	sdl, err := os.ReadFile(filepath.Join("testdata", "schema.graphql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(sdl)
}

// newTestSchema builds the test schema bound to a fresh store.
func newTestSchema(t testing.TB) (*Schema, *testStore) {
	t.Helper()
	s, err := ParseSchema(loadTestSDL(t))
	if err != nil {
		t.Fatal(err)
	}
	st := newTestStore()
	bindTestSchema(s, st)
	return s, st
}

func bindTestSchema(s *Schema, st *testStore) {
	s.SetScalar("DateTime", ScalarFuncs{
		Serialize: func(v any) (any, error) {
			t, ok := v.(time.Time)
			if !ok {
				return nil, fmt.Errorf("DateTime cannot represent %T", v)
			}
			return t.UTC().Format(time.RFC3339), nil
		},
		ParseValue: func(v any) (any, error) {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("DateTime must be an RFC 3339 string")
			}
			return time.Parse(time.RFC3339, s)
		},
	})
	list := func(ms []map[string]any) []any {
		out := make([]any, len(ms))
		for i, m := range ms {
			out[i] = m
		}
		return out
	}
	s.SetResolver("Query", "users", func(p ResolveParams) (any, error) { return list(st.users), nil })
	s.SetResolver("Query", "user", func(p ResolveParams) (any, error) {
		if u := st.user(p.Args["id"].(int)); u != nil {
			return u, nil
		}
		return nil, nil
	})
	s.SetResolver("Query", "posts", func(p ResolveParams) (any, error) { return st.posts, nil })
	s.SetResolver("Query", "post", func(p ResolveParams) (any, error) {
		if x := st.post(p.Args["id"].(int)); x != nil {
			return x, nil
		}
		return nil, nil
	})
	s.SetResolver("Query", "node", func(p ResolveParams) (any, error) {
		id := p.Args["id"].(int)
		if u := st.user(id); u != nil {
			return u, nil
		}
		if x := st.post(id); x != nil {
			return x, nil
		}
		return nil, nil
	})
	s.SetResolver("Query", "search", func(p ResolveParams) (any, error) {
		text := strings.ToLower(p.Args["text"].(string))
		var out []any
		for _, u := range st.users {
			if strings.Contains(strings.ToLower(u["name"].(string)), text) {
				out = append(out, u)
			}
		}
		for _, x := range st.posts {
			if strings.Contains(strings.ToLower(x["title"].(string)), text) {
				out = append(out, x)
			}
		}
		return out, nil
	})
	s.SetResolver("Query", "filteredPosts", func(p ResolveParams) (any, error) {
		f := p.Args["filter"].(map[string]any)
		var out []any
		for _, x := range st.posts {
			if sub, ok := f["titleContains"].(string); ok && !strings.Contains(x["title"].(string), sub) {
				continue
			}
			if ids, ok := f["ids"].([]any); ok {
				found := false
				for _, id := range ids {
					found = found || id == x["id"]
				}
				if !found {
					continue
				}
			}
			if limit, ok := f["limit"].(int); ok && len(out) >= limit {
				break
			}
			out = append(out, x)
		}
		return out, nil
	})
	s.SetResolver("Query", "echo", func(p ResolveParams) (any, error) {
		args := map[string]any{}
		for k, v := range p.Args {
			if t, ok := v.(time.Time); ok {
				v = "time:" + t.Format(time.RFC3339)
			}
			args[k] = v
		}
		return jsonText(args), nil
	})
	s.SetResolver("Query", "fail", func(p ResolveParams) (any, error) {
		return nil, NewError("NOT_FOUND", "nothing here")
	})
	s.SetResolver("Query", "panic", func(p ResolveParams) (any, error) { panic("boom") })
	s.SetResolver("Query", "mustFail", func(p ResolveParams) (any, error) {
		return nil, fmt.Errorf("plain failure")
	})
	s.SetResolver("Query", "oldField", func(p ResolveParams) (any, error) { return "old", nil })

	s.SetResolver("Mutation", "createUser", func(p ResolveParams) (any, error) {
		st.mu.Lock()
		u := map[string]any{"__typename": "User", "id": len(st.users) + 1, "name": p.Args["name"], "email": p.Args["email"], "createdAt": day(5, 12), "role": "MEMBER"}
		st.users = append(st.users, u)
		subs := append([]testFeed(nil), st.userSubs...)
		st.mu.Unlock()
		for _, f := range subs {
			f.send(u)
		}
		return u, nil
	})
	s.SetResolver("Mutation", "updateUser", func(p ResolveParams) (any, error) {
		id := p.Args["id"].(int)
		u := st.user(id)
		if u == nil {
			return nil, NewError("NOT_FOUND", fmt.Sprintf("user %d not found", id))
		}
		for _, k := range []string{"name", "email"} {
			if v, ok := p.Args[k]; ok && v != nil {
				u[k] = v
			}
		}
		return u, nil
	})
	s.SetResolver("Mutation", "deleteUser", func(p ResolveParams) (any, error) {
		id := p.Args["id"].(int)
		for i, u := range st.users {
			if u["id"] == id {
				st.users = append(st.users[:i], st.users[i+1:]...)
				return true, nil
			}
		}
		return false, nil
	})
	s.SetResolver("Mutation", "createPost", func(p ResolveParams) (any, error) {
		x := map[string]any{"__typename": "Post", "id": len(st.posts) + 1, "userId": p.Args["userId"], "title": p.Args["title"], "content": p.Args["content"], "createdAt": day(6, 12)}
		st.posts = append(st.posts, x)
		return x, nil
	})
	s.SetResolver("Mutation", "addComment", func(p ResolveParams) (any, error) {
		c := map[string]any{"id": len(st.comments) + 1, "postId": p.Args["postId"], "authorId": p.Args["authorId"], "text": p.Args["text"], "createdAt": day(7, 12)}
		st.comments = append(st.comments, c)
		return c, nil
	})

	s.SetNotifyingSubscriber("onUserCreated", func(p ResolveParams, notify func()) (EventQueue, error) {
		f := testFeed{make(chan any, 4), notify}
		st.mu.Lock()
		st.userSubs = append(st.userSubs, f)
		st.mu.Unlock()
		return chanQueue(f.c), nil
	})
	s.SetNotifyingSubscriber("onPostCreated", func(p ResolveParams, notify func()) (EventQueue, error) {
		return nil, NewError("FORBIDDEN", "no post events for you")
	})

	s.SetResolver("User", "posts", func(p ResolveParams) (any, error) {
		limit := -1
		if l, ok := p.Args["limit"].(int); ok {
			if l < 0 {
				return nil, NewError(codeBadUserInput, "limit must not be negative")
			}
			limit = l
		}
		uid := p.Source.(map[string]any)["id"]
		var out []any
		for _, x := range st.posts {
			if x["userId"] == uid && (limit < 0 || len(out) < limit) {
				out = append(out, x)
			}
		}
		return out, nil
	})
	s.SetResolver("User", "secret", func(p ResolveParams) (any, error) {
		u := p.Source.(map[string]any)
		if u["role"] != "ADMIN" {
			return nil, NewError("FORBIDDEN", "not an admin")
		}
		return "s3cret", nil
	})
	s.SetResolver("Post", "user", func(p ResolveParams) (any, error) {
		if u := st.user(p.Source.(map[string]any)["userId"].(int)); u != nil {
			return u, nil
		}
		return nil, nil
	})
	s.SetResolver("Post", "comments", func(p ResolveParams) (any, error) {
		pid := p.Source.(map[string]any)["id"]
		var out []map[string]any
		for _, c := range st.comments {
			if c["postId"] == pid {
				out = append(out, c)
			}
		}
		return out, nil
	})
	s.SetResolver("Comment", "author", func(p ResolveParams) (any, error) {
		if u := st.user(p.Source.(map[string]any)["authorId"].(int)); u != nil {
			return u, nil
		}
		return nil, nil
	})
}
