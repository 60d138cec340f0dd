package graphql

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// apqExtensions is extensions.persistedQuery as Apollo's link sends it.
func apqExtensions(hash string) string {
	return `{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}`
}

// apqPost sends a POST with the given body fields to h.
func apqPost(h *Handler, accept string, fields map[string]any) *httptest.ResponseRecorder {
	body, _ := json.Marshal(fields)
	return postBody(h, accept, string(body))
}

// apqGet sends a GET with the given parameters, as Apollo's link does with
// useGETForHashedQueries.
func apqGet(h http.Handler, params url.Values) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/graphql?"+params.Encode(), nil))
	return w
}

func wantAnswer(t *testing.T, w *httptest.ResponseRecorder, status int, body string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status %d, want %d", w.Code, status)
	}
	if got := strings.TrimSuffix(w.Body.String(), "\n"); got != body {
		t.Errorf("body\n got %s\nwant %s", got, body)
	}
}

const (
	apqQuery    = "{ user(id: 1) { name } }"
	apqData     = `{"data":{"user":{"name":"Alice"}}}`
	apqNotFound = `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`
)

// TestHandlerPersistedQueries follows Apollo's link: the hash alone, PERSISTED_QUERY_NOT_FOUND,
// the query with the hash, and then the hash alone again, by POST and by GET.
func TestHandlerPersistedQueries(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	hash := sha256Hex(apqQuery)
	ext := json.RawMessage(apqExtensions(hash))

	for _, accept := range []string{"", mediaGraphQLResponse} {
		w := apqPost(h, accept, map[string]any{"extensions": ext})
		wantAnswer(t, w, 200, apqNotFound)
		if cc := w.Header().Get("Cache-Control"); cc != "private, no-cache, must-revalidate" {
			t.Errorf("Cache-Control of a miss %q: a cache in between would keep the miss", cc)
		}
	}
	wantAnswer(t, apqGet(h, url.Values{"extensions": {string(ext)}}), 200, apqNotFound)

	wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": ext}), 200, apqData)
	if n := h.PersistedQueries.Len(); n != 1 {
		t.Errorf("%d queries remembered, want 1", n)
	}
	w := apqPost(h, "", map[string]any{"extensions": ext})
	wantAnswer(t, w, 200, apqData)
	if cc := w.Header().Get("Cache-Control"); cc != "" {
		t.Errorf("Cache-Control of a hit %q, want none", cc)
	}
	wantAnswer(t, apqGet(h, url.Values{"extensions": {string(ext)}}), 200, apqData)

	// A browser opening a hash-only URL gets the answer, not the query editor.
	h.HTMLPage = http.NotFoundHandler()
	r := httptest.NewRequest("GET", "/graphql?"+url.Values{"extensions": {string(ext)}}.Encode(), nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	wantAnswer(t, w, 200, apqData)

	// Variables and operationName travel beside the hash as beside a query.
	named := "query Who($id: Int!) { user(id: $id) { name } } query Other { __typename }"
	namedExt := json.RawMessage(apqExtensions(sha256Hex(named)))
	wantAnswer(t, apqPost(h, "", map[string]any{"query": named, "operationName": "Who", "variables": map[string]any{"id": 2}, "extensions": namedExt}),
		200, `{"data":{"user":{"name":"Bob"}}}`)
	wantAnswer(t, apqGet(h, url.Values{"operationName": {"Who"}, "variables": {`{"id":3}`}, "extensions": {string(namedExt)}}),
		200, `{"data":{"user":{"name":"Carol"}}}`)
}

// TestHandlerPersistedQueryMismatch: a query sent with a hash that is not its own is
// refused, and not remembered under that hash (else anyone could make a known hash
// run another query).
func TestHandlerPersistedQueryMismatch(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	other := json.RawMessage(apqExtensions(sha256Hex("{ __typename }")))
	const mismatch = `{"errors":[{"message":"provided sha does not match query","extensions":{"code":"PERSISTED_QUERY_HASH_MISMATCH"}}]}`
	wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": other}), 400, mismatch)
	wantAnswer(t, apqPost(h, "", map[string]any{"extensions": other}), 200, apqNotFound)

	for _, bad := range []string{"", "nothex", strings.Repeat("z", 64), strings.ToUpper(sha256Hex(apqQuery))[:63]} {
		ext := json.RawMessage(apqExtensions(bad))
		wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": ext}), 400, mismatch)
		wantAnswer(t, apqPost(h, "", map[string]any{"extensions": ext}), 200, apqNotFound)
	}
	if n := h.PersistedQueries.Len(); n != 0 {
		t.Errorf("%d queries remembered, want 0", n)
	}
}

// TestHandlerPersistedQueryOnlyValidKept: a query that fails to parse or validate
// answers its error and is not remembered; the cache holds only queries.
func TestHandlerPersistedQueryOnlyValidKept(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	for q, want := range map[string]string{
		"{":          `{"errors":[{"message":"Syntax Error: Expected Name, found <EOF>.","locations":[{"line":1,"column":2}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`,
		"{ nope }":   `{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`,
		"mutation {": `{"errors":[{"message":"Syntax Error: Expected Name, found <EOF>.","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`,
	} {
		ext := json.RawMessage(apqExtensions(sha256Hex(q)))
		wantAnswer(t, apqPost(h, "", map[string]any{"query": q, "extensions": ext}), 200, want)
		wantAnswer(t, apqPost(h, "", map[string]any{"extensions": ext}), 200, apqNotFound)
	}
	if n := h.PersistedQueries.Len(); n != 0 {
		t.Errorf("%d queries remembered, want 0", n)
	}
}

// TestHandlerPersistedMutationNotOverGET: a mutation remembered by POST is still
// refused over GET by its hash alone, as it would be by its text.
func TestHandlerPersistedMutationNotOverGET(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	const m = "mutation { deleteUser(id: 3) }"
	ext := json.RawMessage(apqExtensions(sha256Hex(m)))
	wantAnswer(t, apqPost(h, "", map[string]any{"query": m, "extensions": ext}), 200, `{"data":{"deleteUser":true}}`)
	w := apqGet(h, url.Values{"extensions": {string(ext)}})
	wantAnswer(t, w, 405, `{"errors":[{"message":"Mutations can only be sent with POST.","locations":[{"line":1,"column":1}],"extensions":{"code":"BAD_USER_INPUT"}}]}`)
	if allow := w.Header().Get("Allow"); allow != "POST" {
		t.Errorf("Allow %q, want POST", allow)
	}
}

// TestHandlerPersistedQueryMalformed: an extension this server does not understand
// is a 400 saying what is wrong, with Apollo's message for a version it lacks.
func TestHandlerPersistedQueryMalformed(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	hash := sha256Hex(apqQuery)
	const badVersion = `{"errors":[{"message":"Unsupported persisted query version","extensions":{"code":"BAD_USER_INPUT"}}]}`
	for ext, want := range map[string]string{
		`{"persistedQuery":{"version":2,"sha256Hash":"` + hash + `"}}`:   badVersion,
		`{"persistedQuery":{"version":"1","sha256Hash":"` + hash + `"}}`: badVersion,
		`{"persistedQuery":{"sha256Hash":"` + hash + `"}}`:               badVersion,
		`{"persistedQuery":"` + hash + `"}`:                              badVersion,
		`{"persistedQuery":{"version":1}}`:                               `{"errors":[{"message":"The persistedQuery extension must give sha256Hash as a string.","extensions":{"code":"BAD_USER_INPUT"}}]}`,
		`{"persistedQuery":{"version":1,"sha256Hash":1}}`:                `{"errors":[{"message":"The persistedQuery extension must give sha256Hash as a string.","extensions":{"code":"BAD_USER_INPUT"}}]}`,
	} {
		wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": json.RawMessage(ext)}), 400, want)
	}
	// A null persistedQuery is no persisted query: the query runs as sent.
	wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": json.RawMessage(`{"persistedQuery":null}`)}), 200, apqData)
	wantAnswer(t, apqPost(h, "", map[string]any{"extensions": json.RawMessage(`{"persistedQuery":null}`)}), 400,
		`{"errors":[{"message":"The request has no query.","extensions":{"code":"BAD_USER_INPUT"}}]}`)
}

// TestHandlerPersistedQueriesOff: a handler without a cache says it does not support
// them, which makes Apollo's link stop sending hashes.
func TestHandlerPersistedQueriesOff(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	h.PersistedQueries = nil
	ext := json.RawMessage(apqExtensions(sha256Hex(apqQuery)))
	const notSupported = `{"errors":[{"message":"PersistedQueryNotSupported","extensions":{"code":"PERSISTED_QUERY_NOT_SUPPORTED"}}]}`
	wantAnswer(t, apqPost(h, "", map[string]any{"extensions": ext}), 200, notSupported)
	wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery, "extensions": ext}), 200, notSupported)
	wantAnswer(t, apqPost(h, "", map[string]any{"query": apqQuery}), 200, apqData)
}

// TestHandlerPersistedQueriesBounded: the cache stays within its bytes, forgets the least
// recently used first, and does not keep a query large enough to empty it.
func TestHandlerPersistedQueriesBounded(t *testing.T) {
	query := func(i int) string { return "{ user(id: " + strconv.Itoa(i) + ") { name } }" }
	hash := func(q string) [sha256.Size]byte { return sha256.Sum256([]byte(q)) }
	per := persistedCost(query(10))
	c := newPersistedQueries(16 * per) // room for 16 entries of query(10..99)
	for i := 10; i < 26; i++ {
		c.put(hash(query(i)), query(i))
	}
	c.get(hash(query(10)))            // used: stays while the others of its age go
	c.put(hash(query(26)), query(26)) // one over: the least recently used goes
	if _, ok := c.get(hash(query(10))); !ok {
		t.Error("the recently used entry was forgotten")
	}
	if _, ok := c.get(hash(query(11))); ok {
		t.Error("the least recently used entry was kept")
	}
	for i := 27; i < 100; i++ {
		c.put(hash(query(i)), query(i))
		if c.learnt.cost() > c.learnt.budget {
			t.Fatalf("after query(%d): %d bytes held, budget %d", i, c.learnt.cost(), c.learnt.budget)
		}
	}
	if n := c.Len(); n != 16 {
		t.Errorf("%d entries, want 16", n)
	}
	if q, ok := c.get(hash(query(99))); !ok || q != query(99) {
		t.Errorf("the newest entry: %q, %v", q, ok)
	}
	big := "{ __typename }" + strings.Repeat(" ", int(c.learnt.budget/16))
	c.put(hash(big), big)
	if _, ok := c.get(hash(big)); ok || c.Len() != 16 {
		t.Errorf("a query over a sixteenth of the budget was kept (%d entries)", c.Len())
	}
}

// TestHandlerPersistedQueriesConcurrent registers and runs persisted queries from
// many goroutines at once over a cache too small for them all (run with -race).
func TestHandlerPersistedQueriesConcurrent(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	h.PersistedQueries = newPersistedQueries(8 * persistedCost("{ user(id: 1) { name } }"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				q := "{ user(id: " + strconv.Itoa(1+(g+i)%3) + ") { name } }" + strings.Repeat(" ", i%5)
				ext := json.RawMessage(apqExtensions(sha256Hex(q)))
				if w := apqPost(h, "", map[string]any{"extensions": ext}); w.Code != 200 {
					t.Errorf("hash alone: %d %s", w.Code, w.Body)
				}
				if w := apqPost(h, "", map[string]any{"query": q, "extensions": ext}); w.Code != 200 || !strings.HasPrefix(w.Body.String(), `{"data"`) {
					t.Errorf("query and hash: %d %s", w.Code, w.Body)
				}
			}
		})
	}
	wg.Wait()
	if c := h.PersistedQueries; c.learnt.cost() > c.learnt.budget || c.Len() > 8 {
		t.Errorf("%d entries, %d bytes, over the budget of %d", c.Len(), c.learnt.cost(), c.learnt.budget)
	}
}
