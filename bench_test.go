package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRESTCreateUser measures write throughput over real HTTP with 1 and 64
// concurrent writers, in memory and with -data (group commit shares one fsync among
// the writers waiting at the same time). Run:
//
//	go test -run '^$' -bench RESTCreateUser -benchtime 3s
func BenchmarkRESTCreateUser(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, writers := range []int{1, 64} {
			name := fmt.Sprintf("memory/writers=%d", writers)
			if durable {
				name = fmt.Sprintf("data/writers=%d", writers)
			}
			b.Run(name, func(b *testing.B) {
				cfg := testConfig()
				if durable {
					cfg.dataDir, cfg.snapshotBytes = b.TempDir(), defaultSnapshotBytes
				}
				a, err := start(cfg, discardLogger())
				if err != nil {
					b.Fatal(err)
				}
				defer a.shutdown()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
				defer client.CloseIdleConnections()
				url := "http://" + a.httpAddr + "/api/users"
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				t0 := time.Now()
				for range writers {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							body := fmt.Sprintf(`{"name":"Bench %d","email":"b%d@example.com"}`, i, i)
							resp, err := client.Post(url, "application/json", bytes.NewBufferString(body))
							if err != nil {
								b.Error(err)
								return
							}
							io.Copy(io.Discard, resp.Body) // a drained body lets the connection be reused
							resp.Body.Close()
							if resp.StatusCode != http.StatusCreated {
								b.Errorf("status %d", resp.StatusCode)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "writes/s")
			})
		}
	}
}

// benchDataset is a deterministic dataset: users with posts and comments, and
// products, the shape the load harness uses (bench/gen.go) at a size a benchmark can
// build in a moment.
func benchDataset(users, products int) *Dataset {
	words := []string{"ann", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
	ds := &Dataset{}
	for i := 1; i <= users; i++ {
		name := words[i%len(words)] + " " + words[(i/len(words))%len(words)] + strconv.Itoa(i)
		ds.Users = append(ds.Users, User{ID: int64(i), Name: name, Email: "user" + strconv.Itoa(i) + "@example.com"})
		for p := range 5 {
			id := int64(len(ds.Posts) + 1)
			ds.Posts = append(ds.Posts, Post{ID: id, UserID: int64(i), Title: fmt.Sprintf("Post %d of user %d", p, i), Content: "text"})
			for c := range 3 {
				ds.Comments = append(ds.Comments, Comment{ID: int64(len(ds.Comments) + 1), PostID: id, AuthorID: int64((i+c)%users + 1), Text: "comment"})
			}
		}
	}
	for i := 1; i <= products; i++ {
		name := words[i%len(words)] + " " + strconv.Itoa(i)
		if i%20 == 0 { // with the price, 2.5% match the OData filter below, as in bench/
			name = words[i%len(words)] + " Pro " + strconv.Itoa(i)
		}
		ds.Products = append(ds.Products, Product{ID: int64(i), Name: name,
			Price: Decimal(int64(i%1000) * 10_000), Category: words[i%3], IsActive: i%2 == 0})
	}
	return ds
}

func benchStore(b *testing.B, users, products int) *Store {
	b.Helper()
	s := NewStore()
	s.clock = func() time.Time { return fixedTime }
	if err := s.Load(benchDataset(users, products)); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStore measures the store's own reads and writes, without any surface.
func BenchmarkStore(b *testing.B) {
	s := benchStore(b, 100_000, 0)
	b.Run("User", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := s.User(int64(i%100_000 + 1)); !ok {
				b.Fatal("missing user")
			}
		}
	})
	b.Run("UserPage/sortBy=name&page=5000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if items, _ := s.UserPage(UserQuery{SortBy: "name", Page: 5000, PageSize: 10}); len(items) != 10 {
				b.Fatal("short page")
			}
		}
	})
	b.Run("UserPage/search=ann", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.UserPage(UserQuery{Search: "ann", Page: 1, PageSize: 10})
		}
	})
	// Names and emails as bench/post.lua makes them: each lands at a random place in
	// both orders, as new users of a real service do, not next to the one before.
	b.Run("CreateUser", func(b *testing.B) {
		b.ReportAllocs()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; b.Loop(); i++ {
			n := strconv.Itoa(rng.IntN(1_000_000_000)) + "." + strconv.Itoa(i)
			if _, err := s.CreateUser("W "+n, "w"+n+"@example.com"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// discardResponse is a ResponseWriter that keeps only the status and the size, so a
// benchmark measures the handler, not a recorder.
type discardResponse struct {
	header http.Header
	status int
	bytes  int
}

func (d *discardResponse) Header() http.Header { return d.header }
func (d *discardResponse) WriteHeader(status int) {
	if d.status == 0 {
		d.status = status
	}
}
func (d *discardResponse) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	d.bytes += len(p)
	return len(p), nil
}

// BenchmarkHandler measures each surface's request handling in process, from a
// parsed request to the last byte written, including the request log line: what the
// server spends per request besides the connection. Run:
//
//	go test -run '^$' -bench Handler -benchmem
func BenchmarkHandler(b *testing.B) {
	store := benchStore(b, 1000, 100_000)
	srv := NewServer(store, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{})
	gql := func(query string) string { q, _ := json.Marshal(map[string]string{"query": query}); return string(q) }
	cases := []struct{ name, method, target, body string }{
		{"REST/user", "GET", "/api/users/7", ""},
		{"REST/page", "GET", "/api/users?sortBy=name&page=50&pageSize=10", ""},
		{"REST/list1000", "GET", "/api/users", ""},
		{"GraphQL/user", "POST", "/graphql", gql("{ user(id: 7) { id name email } }")},
		{"GraphQL/nested", "POST", "/graphql", gql("{ users { name posts(limit: 2) { title comments { text } } } }")},
		{"OData/filter", "GET", "/api/products?$filter=price%20gt%20500%20and%20contains(tolower(name),'pro')&$top=10", ""},
		{"REST/create", "POST", "/api/users", ""}, // last: it adds users. Body made per call: emails must differ
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			u, err := url.ParseRequestURI(c.target)
			if err != nil {
				b.Fatal(err)
			}
			header := http.Header{"Content-Type": {"application/json"}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				body := c.body
				if c.name == "REST/create" {
					body = `{"name":"Bench ` + strconv.Itoa(i) + `","email":"hb` + strconv.Itoa(i) + `@example.com"}`
				}
				r := &http.Request{Method: c.method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: header,
					Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Host: "bench", RemoteAddr: "127.0.0.1:1", RequestURI: c.target}
				r = r.WithContext(context.Background())
				w := &discardResponse{header: http.Header{}}
				srv.ServeHTTP(w, r)
				if w.status != http.StatusOK && w.status != http.StatusCreated {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}
