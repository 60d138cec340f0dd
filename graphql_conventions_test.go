package main

import (
	"io"
	"net/http"
	"net/url"
	"testing"
)

// TestGraphQLHTTPHeadAsOptionsSays: OPTIONS /graphql lists HEAD, and HEAD is then
// answered as GET is, without a body (issue 17: it was 405).
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
	if got := do(http.MethodOptions, "/graphql").Header.Get("Allow"); got != "GET, HEAD, OPTIONS, POST" {
		t.Errorf("OPTIONS /graphql Allow: %q", got)
	}
	target := "/graphql?" + url.Values{"query": {"{ user(id: 1) { name } }"}}.Encode()
	g, h := do(http.MethodGet, target), do(http.MethodHead, target)
	if g.StatusCode != http.StatusOK || h.StatusCode != g.StatusCode ||
		h.Header.Get("Content-Length") != g.Header.Get("Content-Length") || h.Header.Get("Content-Type") != g.Header.Get("Content-Type") {
		t.Errorf("GET: %d %v; HEAD: %d %v", g.StatusCode, g.Header, h.StatusCode, h.Header)
	}
}
