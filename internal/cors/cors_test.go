package cors

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAdd(t *testing.T) {
	var p Policy
	if err := p.Add("-cors-origins", " https://App.example.com ,*.example.org"); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("-ws-origins", "*.example.org,ws.example.net"); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://app.example.com", "*.example.org", "ws.example.net"}
	if strings.Join(p.patterns, " ") != strings.Join(want, " ") {
		t.Errorf("patterns = %q, want %q (merged, lower case, no repeats)", p.patterns, want)
	}
	for _, c := range []struct{ name, list, want string }{
		{"-cors-origins", "https://[a", `-cors-origins: "https://[a" is not a valid pattern`},
		{"-cors-origins", "https://app.example.com/", `-cors-origins: "https://app.example.com/": no origin a browser sends matches it`},
		{"-ws-origins", "ok.example.com,[x", `-ws-origins: "[x" is not a valid pattern`},
		{"-cors-origins", "https://app.example.com/app", `"https://app.example.com/app": no origin a browser sends matches it`},
		{"-cors-origins", "app.example.com/", `"app.example.com/": no origin a browser sends matches it`},
		{"-cors-origins", "null", `"null": no origin a browser sends matches it`},
		{"-cors-origins", "ftp://files.example.com", `"ftp://files.example.com": no origin a browser sends matches it`},
		{"-cors-origins", "https://", `"https://": no origin a browser sends matches it`},
	} {
		var p Policy
		if err := p.Add(c.name, c.list); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%q, %q): err = %v, want %q", c.name, c.list, err, c.want)
		}
	}
}

func policy(t *testing.T, list string) Policy {
	t.Helper()
	var p Policy
	if err := p.Add("test", list); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAccess(t *testing.T) {
	p := policy(t, "https://app.example.com,*.example.org,http://localhost:5173")
	star := policy(t, "*")
	for _, c := range []struct {
		policy Policy
		origin string
		want   grant
	}{
		{p, "https://app.example.com", listed},
		{p, "HTTPS://APP.EXAMPLE.COM", listed},
		{p, "http://app.example.com", denied}, // the entry names the scheme
		{p, "https://app.example.com:8443", denied},
		{p, "https://a.example.org", listed},
		{p, "http://a.b.example.org", listed},
		{p, "https://example.org", denied},
		{p, "https://evil-example.org", denied},
		{p, "https://a.example.org.evil.com", denied},
		{p, "http://localhost:5173", listed},
		{p, "http://localhost:5174", denied},
		{p, "http://svc.local:8080", same}, // the service's own page
		{p, "null", denied},
		{p, "file:///x", denied},
		{p, "https://app.example.com/x", denied}, // no origin a browser sends
		{p, "https://app.example.com/", denied},
		{p, "https://u@app.example.com", denied},
		{p, "https://app.example.com?", denied},
		{p, "https://app.example.com#f", denied},
		{p, "http://svc.local:8080/x", denied},
		{Policy{}, "https://app.example.com", denied}, // default: none
		{Policy{}, "http://svc.local:8080", same},
		{star, "https://anything.test", anyone},
	} {
		if got := c.policy.access(c.origin, "svc.local:8080"); got != c.want {
			t.Errorf("access(%q) with %q = %d, want %d", c.origin, c.policy.patterns, got, c.want)
		}
	}
}

// TestGuard: what the policy denies is refused before next sees it; what it allows
// (no Origin, the service's own page, a listed origin, any with "*") reaches next.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	p, star := policy(t, "https://app.example.com"), policy(t, "*")
	for _, c := range []struct {
		policy Policy
		origin string
		want   int
	}{
		{p, "", http.StatusTeapot},
		{p, "http://svc.local:8080", http.StatusTeapot},
		{p, "https://app.example.com", http.StatusTeapot},
		{p, "https://evil.test", http.StatusForbidden},
		{p, "null", http.StatusForbidden},
		{star, "https://evil.test", http.StatusTeapot},
	} {
		r := httptest.NewRequest("GET", "http://svc.local:8080/graphql", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		c.policy.Guard(ok).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("Origin %q with %q: %d, want %d", c.origin, c.policy.patterns, w.Code, c.want)
		}
	}
}
