package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// fixedTime is the clock of every test store, so golden files hold exact times.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestStore returns a store on the demo dataset with the fixed clock.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	s := NewStore()
	s.clock = func() time.Time { return fixedTime }
	if err := s.Load(DemoDataset()); err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestServer starts the real HTTP handler on a free 127.0.0.1 port.
func newTestServer(t testing.TB, store *Store) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(NewServer(store, slog.New(slog.DiscardHandler), serverOptions{}))
	t.Cleanup(ts.Close)
	return ts
}

// goldenHeaders are the response headers a golden file records: the ones a client
// acts on. Date and Content-Length say nothing about behaviour.
var goldenHeaders = []string{"Accept-Encoding", "Allow", "Content-Type", "Location", "OData-Version", "WWW-Authenticate"}

// TestGoldenHTTP runs every testdata/<surface>/*.http file against a fresh server on
// the demo data and compares the transcript with the .golden file beside it.
//
// A .http file holds requests separated by lines "###": a request line "METHOD
// /path", header lines, a blank line and the body. A body "@json-string-of N bytes"
// stands for {"name":"aaa…"} with N a's, for size limits; "@[N]" in a body stands
// for N arrays nested in each other, [[…]], for the nesting bound, and so it does
// in a request line (which the transcript shows as written).
func TestGoldenHTTP(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.http")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden request files found: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".http")
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t, newTestStore(t))
			var got bytes.Buffer
			for i, req := range strings.Split(string(src), "\n###\n") {
				if i > 0 {
					got.WriteString("\n###\n")
				}
				got.WriteString(roundTrip(t, ts.URL, req))
			}
			testkit.CheckGolden(t, name+".golden", got.Bytes())
		})
	}
}

// nestedArrays is the "@[N]" of a .http body (see TestGoldenHTTP).
var nestedArrays = regexp.MustCompile(`@\[[0-9]+\]`)

// roundTrip sends one request written as text and returns the response as text.
func roundTrip(t *testing.T, base, text string) string {
	t.Helper()
	head, body, _ := strings.Cut(strings.TrimLeft(text, "\n"), "\n\n")
	lines := strings.Split(strings.TrimRight(head, "\n"), "\n")
	method, target, ok := strings.Cut(lines[0], " ")
	if !ok {
		t.Fatalf("bad request line %q", lines[0])
	}
	body = strings.TrimSuffix(body, "\n")
	if n, ok := strings.CutPrefix(body, "@json-string-of "); ok {
		var size int
		fmt.Sscan(n, &size)
		body = `{"name":"` + strings.Repeat("a", size) + `"}`
	}
	expand := func(s string) string {
		return nestedArrays.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(m[2 : len(m)-1])
			return strings.Repeat("[", n) + strings.Repeat("]", n)
		})
	}
	body = expand(body)
	// Request lines are written readable, with spaces; on the wire they are %20.
	req, err := http.NewRequest(method, base+strings.ReplaceAll(expand(target), " ", "%20"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "quartet.test" // absolute URLs in responses (OData context) stay the same every run
	for _, h := range lines[1:] {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s %s\n", method, target)
	fmt.Fprintf(&out, "HTTP %d\n", resp.StatusCode)
	for _, k := range goldenHeaders {
		if v := resp.Header.Values(k); len(v) > 0 {
			fmt.Fprintf(&out, "%s: %s\n", k, strings.Join(v, ", "))
		}
	}
	out.WriteString("\n")
	out.Write(respBody)
	return out.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestGoldenGraphQL posts every testdata/graphql/*.graphql document (with the variables
// in the .vars.json beside it, if any) to a fresh server and compares status and body
// with the .golden file beside it.
func TestGoldenGraphQL(t *testing.T) {
	files, err := filepath.Glob("testdata/graphql/*.graphql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no GraphQL documents found: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(file, ".graphql")
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			query, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			body := map[string]any{"query": string(query)}
			if vars, err := os.ReadFile(name + ".vars.json"); err == nil {
				body["variables"] = json.RawMessage(vars)
			}
			payload, _ := json.Marshal(body)
			ts := newTestServer(t, newTestStore(t))
			resp, err := http.Post(ts.URL+"/graphql", "application/json", bytes.NewReader(payload))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			testkit.CheckGolden(t, name+".golden", fmt.Appendf(nil, "HTTP %d\n%s", resp.StatusCode, got))
		})
	}
}
