package graphql

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestHandlerHEAD: HEAD is answered as GET is, status and headers alike, with no
// body (OPTIONS advertises HEAD, so HEAD must be answered). A real server, since
// it is net/http that leaves the body out.
func TestHandlerHEAD(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	h.HTMLPage = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>editor</html>")
	})
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(q url.Values) string { return srv.URL + "/graphql?" + q.Encode() }
	tests := []struct {
		name, target, accept string
		wantStatus           int
	}{
		{"query", get(url.Values{"query": {"{ user(id: 1) { name } }"}}), "", 200},
		{"query as graphql-response+json", get(url.Values{"query": {"{ nope }"}}), mediaGraphQLResponse, 400},
		{"mutation", get(url.Values{"query": {"mutation { deleteUser(id: 1) }"}}), "", 405},
		{"no query", srv.URL + "/graphql", "", 400},
		{"editor page", srv.URL + "/graphql", "text/html", 200},
	}
	do := func(method, target, accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, target, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := do(http.MethodGet, tt.target, tt.accept)
			hd, body := do(http.MethodHead, tt.target, tt.accept)
			if g.StatusCode != tt.wantStatus || hd.StatusCode != g.StatusCode {
				t.Errorf("status: GET %d, HEAD %d; want %d", g.StatusCode, hd.StatusCode, tt.wantStatus)
			}
			for _, k := range []string{"Content-Type", "Content-Length", "Allow"} {
				if hd.Header.Get(k) != g.Header.Get(k) {
					t.Errorf("%s: GET %q, HEAD %q", k, g.Header.Get(k), hd.Header.Get(k))
				}
			}
			if body != "" {
				t.Errorf("HEAD answered a body: %q", body)
			}
		})
	}
}
