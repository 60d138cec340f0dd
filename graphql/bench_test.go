package graphql

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const benchQuery = "{ users { name posts(limit: 2) { title comments { text author { name } } } } }"

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseDoc(benchQuery); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s, _ := newTestSchema(b)
	doc, err := parseDoc(benchQuery)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.validate(doc); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkExecute measures a cached query: the document is parsed and
// validated once, then every iteration executes it and writes the JSON.
func BenchmarkExecute(b *testing.B) {
	s, _ := newTestSchema(b)
	req := Request{Query: benchQuery}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, req); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}

// BenchmarkDeferredUsers answers `users { id ... @defer { name email } }` for
// 1,000 users over HTTP in the 2022-08-24 format, and reports the time to the
// first part (the initial result) and to the last (the closing delimiter read).
func BenchmarkDeferredUsers(b *testing.B) {
	s, st := newTestSchema(b)
	for i := len(st.users); i < 1000; i++ {
		st.users = append(st.users, map[string]any{"__typename": "User", "id": i + 1, "name": fmt.Sprint("user ", i), "email": fmt.Sprintf("u%d@example.com", i), "createdAt": day(1, 9), "role": "MEMBER"})
	}
	ts := httptest.NewServer(NewHandler(s))
	defer ts.Close()
	body := `{"query":"{ users { id ... @defer { name email } } }"}`
	var first, last time.Duration
	for b.Loop() {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "multipart/mixed;deferSpec=20220824")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		readPart(b, r)
		readPart(b, r) // the initial result and the delimiter after it
		first += time.Since(start)
		rest, _ := io.ReadAll(r)
		last += time.Since(start)
		resp.Body.Close()
		if n := bytes.Count(rest, []byte(`"incremental"`)); n != 1000 {
			b.Fatalf("%d parts after the first, want 1000", n)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-to-first/op")
	b.ReportMetric(float64(last.Microseconds())/float64(b.N), "µs-to-last/op")
}
