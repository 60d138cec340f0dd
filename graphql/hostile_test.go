package graphql

// The hostile attacks on the GraphQL surface, replayed with bounded loops: each
// test asserts the bound that keeps an anonymous client from exhausting the
// service, as the answer's size, the heap's growth (after a collection), the
// error that names the bound, or the work done before it stops.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// hostileServer serves the test schema over HTTP.
func hostileServer(t *testing.T) (*Schema, *httptest.Server) {
	t.Helper()
	s, _ := newTestSchema(t)
	srv := httptest.NewServer(NewHandler(s))
	t.Cleanup(srv.Close)
	return s, srv
}

// answer is a GraphQL response as a client sees it.
type answer struct {
	size   int
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// post sends query over HTTP, POST (or GET when get is set), and decodes the answer.
func post(t *testing.T, srv *httptest.Server, query string, get bool) answer {
	t.Helper()
	var resp *http.Response
	var err error
	if get {
		resp, err = http.Get(srv.URL + "?" + url.Values{"query": {query}}.Encode())
	} else {
		body, _ := json.Marshal(map[string]string{"query": query})
		resp, err = http.Post(srv.URL, "application/json", bytes.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{size: len(raw)}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("status %d, answer %.300s: %v", resp.StatusCode, raw, err)
	}
	return a
}

// sameNameFields is the overlap attack: n fields with one response name and
// different arguments, { user(id: 0) { id } user(id: 1) { id } … }, then a
// comment that makes each request's text, and so its cache key, new.
func sameNameFields(n, k int) string {
	return repeatFields(n, func(i int) string { return fmt.Sprintf("user(id: %d) { id }", i) }) + fmt.Sprintf(" #%d", k)
}

// TestHostileOverlap replays the overlap attack: it made every conflicting
// pair an error (12 MB per request, kept by the document cache), so twenty
// 5 KB requests pinned 874 MB, and a 17 KB variant compared all of its
// 499,500 pairs.
func TestHostileOverlap(t *testing.T) {
	_, srv := hostileServer(t)
	check := func(a answer) {
		t.Helper()
		if a.size > 64<<10 {
			t.Fatalf("an answer of %d bytes", a.size)
		}
		if n := len(a.Errors); n == 0 || n > DefaultLimits.MaxErrors+1 || a.Data != nil {
			t.Fatalf("%d errors (data %s); want at most %d and the last saying why", n, a.Data, DefaultLimits.MaxErrors+1)
		}
		if last := a.Errors[len(a.Errors)-1].Message; last != tooManyErrors {
			t.Fatalf("last error %q", last)
		}
	}
	before := testkit.LiveHeap()
	for k := range 20 {
		check(post(t, srv, sameNameFields(300, k), k%2 == 1)) // POST and GET
	}
	if grown := testkit.LiveHeap() - before; grown > 20<<20 {
		t.Errorf("the heap grew by %d bytes", grown)
	}

	// The 17 KB variant: 1,000 such fields, 2,000 selections, within every
	// per-document limit; 499,500 conflicting pairs.
	q := sameNameFields(1000, -1)
	if len(q) < 17000 {
		t.Fatalf("the variant is %d bytes", len(q))
	}
	check(post(t, srv, q, false))
	// Its conflicts fill the error list within a few thousand steps of the
	// comparison meter: with the meter at 5,000 (1% of its pairs) it is still
	// refused for its errors, not by the meter.
	metered, _ := newTestSchema(t)
	metered.Limits.MaxFieldComparisons = 5000
	doc, err := parseDoc(q)
	if err != nil {
		t.Fatal(err)
	}
	if errs := metered.validate(doc); len(errs) != DefaultLimits.MaxErrors+1 || errs[len(errs)-1].Message != tooManyErrors {
		t.Errorf("with the meter at 5,000 steps: %d errors, the last %q; want %d, the last %q",
			len(errs), errs[len(errs)-1].Message, DefaultLimits.MaxErrors+1, tooManyErrors)
	}
}

// TestHostileOverlapWebSocket replays the overlap attack over a WebSocket
// (graphql-transport-ws), where it worked as over HTTP.
func TestHostileOverlapWebSocket(t *testing.T) {
	srv := newWSServer(t, 16, WebSocketOptions{})
	c := dialWS(t, srv.url(), "graphql-transport-ws")
	defer c.CloseNow()
	wsSend(t, c, `{"type":"connection_init"}`)
	if msg := wsMustRecv(t, c); msg != `{"type":"connection_ack"}` {
		t.Fatalf("got %s", msg)
	}
	before := testkit.LiveHeap()
	for k := range 20 {
		msg, _ := json.Marshal(map[string]any{"id": fmt.Sprint(k), "type": "subscribe", "payload": map[string]string{"query": sameNameFields(300, k)}})
		wsSend(t, c, string(msg))
		reply := wsMustRecv(t, c)
		var m struct {
			Type    string            `json:"type"`
			Payload []json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(reply), &m); err != nil || m.Type != "error" {
			t.Fatalf("got %.300s", reply)
		}
		if len(reply) > 64<<10 || len(m.Payload) > DefaultLimits.MaxErrors+1 {
			t.Fatalf("an answer of %d bytes, %d errors", len(reply), len(m.Payload))
		}
	}
	if grown := testkit.LiveHeap() - before; grown > 20<<20 {
		t.Errorf("the heap grew by %d bytes", grown)
	}
}

// TestHostileRefusedEarly replays the documents the audit found refused fast
// (10k aliases, fragment bombs, 200k braces) and the ones that were not (45
// operations of 1,990 fields cost 1.15 s; 20,000 @foo or 3,000 unused
// variables made 2.6 MB of errors): each is now refused with the one error of
// the bound that stops it (the parser's count of tokens or of variables, or
// the count of fields after fragment expansion), before the document is
// validated.
func TestHostileRefusedEarly(t *testing.T) {
	_, srv := hostileServer(t)
	var bomb strings.Builder
	bomb.WriteString("{ ...F0 }\n")
	for i := range 30 {
		fmt.Fprintf(&bomb, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	bomb.WriteString("fragment F30 on Query { __typename }\n")
	var ops strings.Builder
	for i := range 45 {
		fmt.Fprintf(&ops, "query Q%d { users {%s } }\n", i, strings.Repeat(" id", 1989))
	}
	tests := []struct {
		name, query, want string
	}{
		{"10k aliases", repeatFields(10000, func(i int) string { return fmt.Sprintf("a%d: __typename", i) }),
			"Syntax Error: Document contains more than 20000 tokens."},
		{"fragment bomb", bomb.String(),
			"Query selects too many fields: at most 2000 field selections are allowed after fragment expansion."},
		{"200k braces", strings.Repeat("{", 200000),
			"Syntax Error: Document contains more than 20000 tokens."},
		{"100k braces and names", strings.Repeat("{ a ", 100000),
			"Syntax Error: Document contains more than 20000 tokens."},
		{"200k names", "{" + strings.Repeat(" a", 200000) + " }",
			"Syntax Error: Document contains more than 20000 tokens."},
		{"45 operations of 1,990 fields", ops.String(),
			"Syntax Error: Document contains more than 20000 tokens."},
		{"20,000 @foo", "{ __typename" + strings.Repeat(" @foo", 20000) + " }",
			"Syntax Error: Document contains more than 20000 tokens."},
		{"3,000 unused variables", "query (" + varList(3000) + ") { __typename }",
			"Syntax Error: Document contains more than 100 variable definitions."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, srv, tt.query, false)
			if len(a.Errors) != 1 || a.Errors[0].Message != tt.want {
				t.Fatalf("%d errors, the first %q; want the single error %q", len(a.Errors), a.Errors[0].Message, tt.want)
			}
		})
	}
}

// varList defines n variables, $v0: Int … $v<n-1>: Int.
func varList(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " $v%d: Int", i)
	}
	return b.String()
}

// TestHostileErrorLists lifts the parse limits that now refuse 20,000
// directives and 3,000 variables, to check the second bound behind them:
// validation reports at most MaxErrors errors, then one saying it stopped.
func TestHostileErrorLists(t *testing.T) {
	s, srv := hostileServer(t)
	s.Limits.MaxTokens, s.Limits.MaxDirectives, s.Limits.MaxVariables = 0, 0, 0
	for _, q := range []string{
		"{ __typename" + strings.Repeat(" @foo", 20000) + " }",
		"query (" + varList(3000) + ") { __typename }",
	} {
		a := post(t, srv, q, false)
		if n := len(a.Errors); n != DefaultLimits.MaxErrors+1 || a.Errors[n-1].Message != tooManyErrors {
			t.Errorf("%d errors; want %d, the last %q", n, DefaultLimits.MaxErrors+1, tooManyErrors)
		}
		if a.size > 32<<10 {
			t.Errorf("an answer of %d bytes", a.size)
		}
	}
}

// TestHostileCache sends 1,000 distinct valid documents, of the kind that the
// cache bounded by entries held as 1.3 GB: the cache stays within its byte
// budget, and so does the heap.
func TestHostileCache(t *testing.T) {
	testkit.SkipIfShort(t, "sends 1,000 distinct documents of 16 KB")
	s, _ := newTestSchema(t)
	before := testkit.LiveHeap()
	for k := range 1000 {
		// 11 KB and 1,000 tokens, an estimated 226 KB, just under the largest
		// document the cache keeps; the same field 1,000 times costs little
		// work but all the memory of its syntax tree.
		q := fmt.Sprintf("{%s } #%d", strings.Repeat(" __typename", 1000), k)
		if r := s.Execute(t.Context(), Request{Query: q}); len(r.Errors) > 0 {
			t.Fatal(ErrorList(r.Errors))
		}
		if _, ok := s.cache.get(q); k == 0 && !ok {
			t.Fatal("the document was not cached")
		}
	}
	if n := s.cache.cost(); n > defaultCacheBytes {
		t.Errorf("the cache holds an estimated %d bytes, over its budget of %d", n, defaultCacheBytes)
	}
	if grown := testkit.LiveHeap() - before; grown > defaultCacheBytes {
		t.Errorf("the heap grew by %d bytes, over the cache's budget of %d", grown, defaultCacheBytes)
	}
}

// TestHostileLongAliasErrors: a field error's path repeats every response key
// above it, so that a long alias over a list whose items each fail wrote the
// alias once per error: a 200 KB alias over 500 failing posts made a 100 MB
// answer under a 1 MiB limit. Errors count with the answer as they are written.
func TestHostileLongAliasErrors(t *testing.T) {
	s, srv := hostileServer(t)
	bobs := make([]any, 500)
	for i := range bobs {
		bobs[i] = map[string]any{"__typename": "Post", "id": i + 1, "userId": 2} // Bob's secret fails
	}
	s.SetResolver("Query", "posts", func(ResolveParams) (any, error) { return bobs, nil })
	s.Limits.MaxResponseBytes = 1 << 20
	alias := "a" + strings.Repeat("x", 200<<10)
	a := post(t, srv, "{ "+alias+": posts { u: user { secret } } }", false)
	if a.size > s.Limits.MaxResponseBytes || len(a.Errors) != 1 || a.Errors[0].Extensions.Code != CodeResponseTooLarge {
		t.Fatalf("answer of %d bytes, %d errors; want RESPONSE_TOO_LARGE within the limit", a.size, len(a.Errors))
	}
}

// TestHostileDeferredPlaces: each deferred fragment is held back as the
// initial result writes {} in its place, with its path, and is announced
// with it; 300,000 users under one @defer held 86 MB for a 900 KB initial
// result under a 1 MiB limit. What a part holds back counts with the answer.
func TestHostileDeferredPlaces(t *testing.T) {
	s, _ := newTestSchema(t)
	many := make([]any, 300000)
	for i := range many {
		many[i] = map[string]any{"__typename": "User", "id": i + 1}
	}
	s.SetResolver("Query", "users", func(ResolveParams) (any, error) { return many, nil })
	s.Limits.MaxResponseBytes = 1 << 20
	in := s.ExecuteIncremental(context.Background(), Request{Query: "{ users { ... @defer { id } } }"})
	if len(in.Pending) != 0 || len(in.Initial.Errors) != 1 || in.Initial.Errors[0].Code() != CodeResponseTooLarge {
		t.Fatalf("%d parts held back, %d errors; want RESPONSE_TOO_LARGE and none held", len(in.Pending), len(in.Initial.Errors))
	}
}

// TestHostileDiscardedSubtrees: a nullable field whose value fails after a
// large subtree is written drops that subtree, leaving null and an error; each
// item of a list could render up to the size limit again and drop it. Here
// 2,000 posts each wrote their author's 1,000 posts before the author's
// secret failed: 80 MB rendered for a 330 KB answer. What a null drops
// counts with the answer.
func TestHostileDiscardedSubtrees(t *testing.T) {
	s, srv := hostileServer(t)
	posts := make([]any, 2000)
	for i := range posts {
		posts[i] = map[string]any{"__typename": "Post", "id": i + 1, "userId": 2, "title": "t", "content": strings.Repeat("c", 20)}
	}
	s.SetResolver("Query", "posts", func(ResolveParams) (any, error) { return posts, nil })
	calls := 0
	s.SetResolver("User", "posts", func(ResolveParams) (any, error) { calls++; return posts[:1000], nil })
	s.Limits.MaxResponseBytes = 1 << 20
	a := post(t, srv, "{ posts { user { posts { title content } secret } } }", false)
	if len(a.Errors) == 0 || a.Errors[len(a.Errors)-1].Extensions.Code != CodeResponseTooLarge || calls > 100 {
		t.Fatalf("%d errors, the authors' posts read %d times; want RESPONSE_TOO_LARGE within 100", len(a.Errors), calls)
	}
}

// TestHostileDiscardedStreamItems: the same for a list of nullable items, in
// one piece and over @stream, where each item is a part of its own: an item
// that renders its subtree and fails is null, and what it dropped counts.
func TestHostileDiscardedStreamItems(t *testing.T) {
	s, err := ParseSchema(`directive @stream(if: Boolean! = true, label: String, initialCount: Int! = 0) on FIELD
type Query { items: [Item] }
type Item { big: [String!]! fail: String! }`)
	if err != nil {
		t.Fatal(err)
	}
	items, calls := make([]any, 2000), 0
	for i := range items {
		items[i] = map[string]any{}
	}
	s.SetResolver("Query", "items", func(ResolveParams) (any, error) { return items, nil })
	s.SetResolver("Item", "big", func(ResolveParams) (any, error) { calls++; return make([]string, 1000), nil })
	s.SetResolver("Item", "fail", func(ResolveParams) (any, error) { return nil, errors.New("no") })
	s.Limits.MaxResponseBytes = 1 << 20
	in := s.ExecuteIncremental(context.Background(), Request{Query: "{ items @stream { big fail } }"})
	var last *Payload
	for p := in.Next(); p != nil; p = in.Next() {
		last = p
	}
	if last == nil || len(last.Errors) == 0 || last.Errors[0].Code() != CodeResponseTooLarge || calls > 500 {
		t.Fatalf("%d items rendered; want RESPONSE_TOO_LARGE within 500", calls)
	}
	calls = 0 // in one piece, the list's items are made null the same way
	if resp := s.Execute(context.Background(), Request{Query: "{ items { big fail } }"}); resp.Errors[0].Code() != CodeResponseTooLarge || calls > 500 {
		t.Fatalf("in one piece: %d items rendered; want RESPONSE_TOO_LARGE within 500", calls)
	}
}
