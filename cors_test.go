package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestCORSOriginsFlags: a pattern the policy cannot use stops start-up, named by
// the flag that set it.
func TestCORSOriginsFlags(t *testing.T) {
	free := []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-cors-origins", "https://[a"}, `-cors-origins: "https://[a" is not a valid pattern`},
		{[]string{"-cors-origins", "https://app.example.com/"}, `-cors-origins: "https://app.example.com/": no origin a browser sends matches it`},
		{[]string{"-cors-origins", "null"}, `-cors-origins: "null": no origin a browser sends matches it`},
		{[]string{"-ws-origins", "ok.example.com,[x"}, `-ws-origins: "[x" is not a valid pattern`},
	} {
		err := run(t.Context(), append(free, c.args...), envFrom(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// TestCORSOverHTTP sends real preflights and the requests that follow them to every
// HTTP surface of a started service, as a browser on another origin would.
func TestCORSOverHTTP(t *testing.T) {
	cfg := testConfig()
	cfg.corsOrigins = "https://app.example.com"
	cfg.wsOrigins = "*.example.org" // the deprecated alias adds to the same list
	a, _ := startApp(t, cfg)
	base := "http://" + a.httpAddr

	type want struct {
		status      int
		allowOrigin string // "" : no CORS headers
		credentials bool
	}
	for _, c := range []struct {
		name, method, path, origin, requestMethod, body string
		want                                            want
	}{
		{"REST preflight", "OPTIONS", "/api/users", "https://app.example.com", "POST", "", want{204, "https://app.example.com", true}},
		{"GraphQL preflight", "OPTIONS", "/graphql", "https://app.example.com", "POST", "", want{204, "https://app.example.com", true}},
		{"OData preflight", "OPTIONS", "/api/Products", "https://a.example.org", "GET", "", want{204, "https://a.example.org", true}},
		{"preflight from another origin", "OPTIONS", "/api/users", "https://evil.test", "POST", "", want{204, "", false}}, // the path's own OPTIONS answer, no CORS
		{"REST GET", "GET", "/api/users/1", "https://app.example.com", "", "", want{200, "https://app.example.com", true}},
		{"REST POST", "POST", "/api/users", "https://app.example.com", "", `{"name":"Cors","email":"cors@example.com"}`, want{201, "https://app.example.com", true}},
		{"GraphQL POST", "POST", "/graphql", "https://a.example.org", "", `{"query":"{ users { id } }"}`, want{200, "https://a.example.org", true}},
		{"OData GET", "GET", "/api/Products(1)", "https://app.example.com", "", "", want{200, "https://app.example.com", true}},
		{"another origin", "GET", "/api/users/1", "https://evil.test", "", "", want{200, "", false}},
		{"own page", "GET", "/api/users/1", "http://" + a.httpAddr, "", "", want{200, "http://" + a.httpAddr, false}},
		{"no Origin", "GET", "/api/users/1", "", "", "", want{200, "", false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.requestMethod != "" {
				req.Header.Set("Access-Control-Request-Method", c.requestMethod)
				req.Header.Set("Access-Control-Request-Headers", "content-type,authorization")
			}
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != c.want.status {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want.status)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != c.want.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, c.want.allowOrigin)
			}
			if got := h.Get("Access-Control-Allow-Credentials") == "true"; got != c.want.credentials {
				t.Errorf("Access-Control-Allow-Credentials %v, want %v", got, c.want.credentials)
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary %q lacks Origin", h.Values("Vary"))
			}
			switch {
			case c.want.allowOrigin == "":
			case c.requestMethod != "":
				for _, w := range []string{"PATCH", "DELETE"} {
					if !strings.Contains(h.Get("Access-Control-Allow-Methods"), w) {
						t.Errorf("Access-Control-Allow-Methods %q lacks %s", h.Get("Access-Control-Allow-Methods"), w)
					}
				}
				for _, w := range []string{"Authorization", "Content-Type", "OData-Version", "OData-MaxVersion", "Prefer", "If-Match"} {
					if !strings.Contains(h.Get("Access-Control-Allow-Headers"), w) {
						t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), w)
					}
				}
			default:
				for _, w := range []string{"ETag", "Location", "WWW-Authenticate"} {
					if !strings.Contains(h.Get("Access-Control-Expose-Headers"), w) {
						t.Errorf("Access-Control-Expose-Headers %q lacks %s", h.Get("Access-Control-Expose-Headers"), w)
					}
				}
			}
		})
	}
}

// TestCORSGovernsWebSockets: the one list decides which pages may open GraphQL
// WebSockets too, whichever of the two flags named them.
func TestCORSGovernsWebSockets(t *testing.T) {
	cfg := testConfig()
	cfg.corsOrigins = "https://app.example.com"
	a, _ := startApp(t, cfg)
	for origin, ok := range map[string]bool{"https://app.example.com": true, "https://evil.test": false} {
		ctx := context.Background()
		c, resp, err := websocket.Dial(ctx, "ws://"+a.httpAddr+"/graphql", &websocket.DialOptions{
			Subprotocols: []string{"graphql-transport-ws"},
			HTTPHeader:   http.Header{"Origin": {origin}},
		})
		if ok != (err == nil) {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Errorf("origin %s: dial error %v (status %d), want allowed=%v", origin, err, status, ok)
		}
		if c != nil {
			c.Close(websocket.StatusNormalClosure, "")
		}
	}
}
