package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestGraphQLHTTPHeadAsOptionsSays: OPTIONS /graphql lists HEAD, and HEAD is then
// answered as GET is, without a body.
func TestGraphQLHTTPHeadAsOptionsSays(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	do := func(method, target string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+target, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if method != http.MethodGet && len(body) > 0 {
			t.Errorf("%s %s answered a body: %q", method, target, body)
		}
		return resp
	}
	if got := do(http.MethodOptions, "/graphql").Header.Get("Allow"); got != "DELETE, GET, HEAD, OPTIONS, POST, PUT" {
		t.Errorf("OPTIONS /graphql Allow: %q", got)
	}
	target := "/graphql?" + url.Values{"query": {"{ user(id: 1) { name } }"}}.Encode()
	g, h := do(http.MethodGet, target), do(http.MethodHead, target)
	if g.StatusCode != http.StatusOK || h.StatusCode != g.StatusCode ||
		h.Header.Get("Content-Length") != g.Header.Get("Content-Length") || h.Header.Get("Content-Type") != g.Header.Get("Content-Type") {
		t.Errorf("GET: %d %v; HEAD: %d %v", g.StatusCode, g.Header, h.StatusCode, h.Header)
	}
}

// TestGraphQLHTTPPersistedQueries runs Apollo's automatic persisted queries through
// the service as its link does with useGETForHashedQueries: the hash alone by GET,
// PERSISTED_QUERY_NOT_FOUND, the query and hash by POST, then the hash alone by GET.
func TestGraphQLHTTPPersistedQueries(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	const query = "query UserName { user(id: 2) { name } }"
	sum := sha256.Sum256([]byte(query))
	ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
	byHash := ts.URL + "/graphql?" + url.Values{"operationName": {"UserName"}, "extensions": {ext}}.Encode()
	answer := func(resp *http.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + strings.TrimSpace(string(b))
	}
	const notFound = `200 OK {"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`
	const bob = `200 OK {"data":{"user":{"name":"Bob Smith"}}}`
	if got := answer(http.Get(byHash)); got != notFound {
		t.Errorf("hash alone, unknown: %s", got)
	}
	body := `{"query":"` + query + `","operationName":"UserName","extensions":` + ext + `}`
	if got := answer(http.Post(ts.URL+"/graphql", "application/json", strings.NewReader(body))); got != bob {
		t.Errorf("query with hash: %s", got)
	}
	if got := answer(http.Get(byHash)); got != bob {
		t.Errorf("hash alone, known: %s", got)
	}
}
