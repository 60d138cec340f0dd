package editor

import (
	"crypto/sha256"
	"encoding/base64"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"quartet/graphql"
	"quartet/internal/testkit"
)

// testSchema is the smallest schema a Handler serves: the editor's tests
// need a GraphQL endpoint beside the page, not data.
func testSchema(t *testing.T) *graphql.Schema {
	t.Helper()
	s, err := graphql.ParseSchema("type Query { hello: String }")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// getEditor fetches the editor as a browser would, through a Handler.
func getEditor(t *testing.T) (*http.Response, string) {
	t.Helper()
	h := graphql.NewHandler(testSchema(t))
	h.HTMLPage = Handler(Options{GRPCAddress: "127.0.0.1:50051"})
	r := httptest.NewRequest(http.MethodGet, "http://quartet.test:8080/graphql", nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	resp := w.Result()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /graphql (text/html): status %d, body %.200s", resp.StatusCode, w.Body.String())
	}
	return resp, w.Body.String()
}

// cspDirectives splits a Content-Security-Policy into directive -> sources.
func cspDirectives(t *testing.T, policy string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range strings.Split(policy, ";") {
		f := strings.Fields(d)
		if len(f) == 0 {
			continue
		}
		if _, dup := out[f[0]]; dup {
			t.Errorf("CSP directive %s given twice", f[0])
		}
		out[f[0]] = f[1:]
	}
	return out
}

// inlineElements returns the text of every <tag>...</tag> in page, and
// fails if one of them has attributes (a src would load a file).
func inlineElements(t *testing.T, page, tag string) []string {
	t.Helper()
	re := regexp.MustCompile(`(?is)<` + tag + `\b([^>]*)>(.*?)</` + tag + `\s*>`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		if strings.TrimSpace(m[1]) != "" {
			t.Errorf("<%s%s> has attributes; the page must carry its %s inline", tag, m[1], tag)
		}
		out = append(out, m[2])
	}
	return out
}

func sha256Source(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func TestEditorPageCSP(t *testing.T) {
	resp, page := getEditor(t)
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q, want text/html; charset=utf-8", ct)
	}
	for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	policy := resp.Header.Get("Content-Security-Policy")
	csp := cspDirectives(t, policy)

	scripts := inlineElements(t, page, "script")
	styles := inlineElements(t, page, "style")
	if len(scripts) != 1 || len(styles) != 1 {
		t.Fatalf("page has %d <script> and %d <style> elements, want one of each", len(scripts), len(styles))
	}
	want := map[string]string{
		"default-src":     "'none'",
		"script-src":      sha256Source(scripts[0]),
		"style-src":       sha256Source(styles[0]),
		"connect-src":     "'self' ws://quartet.test:8080 wss://quartet.test:8080",
		"img-src":         "data:",
		"base-uri":        "'none'",
		"form-action":     "'none'",
		"frame-ancestors": "'none'",
	}
	for name, sources := range want {
		if got := strings.Join(csp[name], " "); got != sources {
			t.Errorf("CSP %s = %q, want %q", name, got, sources)
		}
	}
	for name := range csp {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected CSP directive %s in %q", name, policy)
		}
	}
	for _, weak := range []string{"unsafe-inline", "unsafe-eval", "unsafe-hashes", "*", "http:", "https:"} {
		for _, f := range strings.FieldsFunc(policy, func(r rune) bool { return r == ' ' || r == ';' }) {
			if strings.Trim(f, "'") == weak {
				t.Errorf("CSP allows %s: %q", weak, policy)
			}
		}
	}
	// The policy blocks inline style attributes and event handler
	// attributes; the page must not need them.
	if m := regexp.MustCompile(`(?i)<[^>]*\s(style|on[a-z]+)\s*=`).FindString(page); m != "" {
		t.Errorf("page uses an attribute the CSP blocks: %s", m)
	}
}

// TestEditorPageSelfContained scans the page for anything that would make
// the browser fetch a file: the page must work offline.
func TestEditorPageSelfContained(t *testing.T) {
	_, page := getEditor(t)
	lower := strings.ToLower(page)
	for _, bad := range []string{"http://", "https://", "ws://", "wss://", "<iframe", "<img", "<object", "<embed"} {
		if i := strings.Index(lower, bad); i >= 0 {
			t.Errorf("page contains %q: ...%s...", bad, page[max(0, i-40):min(len(page), i+60)])
		}
	}
	for _, css := range inlineElements(t, page, "style") {
		for _, bad := range []string{"@import", "url("} {
			if strings.Contains(strings.ToLower(css), bad) {
				t.Errorf("stylesheet contains %s", bad)
			}
		}
	}
	// Every attribute naming a URL must be a data: URL (the empty favicon,
	// which keeps the browser from asking for /favicon.ico), but for a link to
	// another page of the service by a relative path: it loads nothing until
	// a reader follows it.
	attrs := regexp.MustCompile(`(?i)\s(src|href|action|formaction|poster|srcset|data|manifest)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
	links := regexp.MustCompile(`<a href="[a-z]+"`)
	for _, m := range attrs.FindAllStringSubmatch(links.ReplaceAllString(page, "<a"), -1) {
		if v := strings.Trim(m[2], `"'`); !strings.HasPrefix(v, "data:") {
			t.Errorf("%s=%q would load a file", m[1], v)
		}
	}
	// The script talks to the URL it was served from, never to a literal one;
	// the same-data-elsewhere panel to paths on the same host (sameOrigin).
	for _, call := range regexp.MustCompile(`(?:fetch|new WebSocket)\(\s*([\w.]*(?:\(\))?)`).FindAllStringSubmatch(page, -1) {
		if arg := call[1]; arg != "endpoint" && arg != "socketURL()" && arg != "sameOrigin" {
			t.Errorf("%s: the script must only connect to its own endpoint", call[0])
		}
	}
}

func TestEditorPageRouting(t *testing.T) {
	h := graphql.NewHandler(testSchema(t))
	page := Handler(Options{GRPCAddress: "127.0.0.1:50051"})
	h.HTMLPage = page
	etag := page.(*editorPage).etag
	tests := []struct {
		name, method, target, accept, body string
		header                             map[string]string
		status                             int
		contentType                        string // prefix
		bodyHas                            string
	}{
		{"browser", "GET", "/graphql", "text/html,*/*;q=0.8", "", nil, 200, "text/html", "<title>GraphQL editor</title>"},
		{"json client", "GET", "/graphql", "application/json", "", nil, 400, "application/json", "no query"},
		{"html with a query runs it", "GET", "/graphql?query=%7B__typename%7D", "text/html,*/*;q=0.8", "", nil, 200, "application/json", `"__typename":"Query"`},
		{"post", "POST", "/graphql", "text/html,*/*;q=0.8", `{"query":"{__typename}"}`, map[string]string{"Content-Type": "application/json"}, 200, "application/json", `"__typename":"Query"`},
		{"json preferred", "GET", "/graphql", "application/json, text/html;q=0.5", "", nil, 400, "application/json", "no query"},
		{"cached copy is fresh", "GET", "/graphql", "text/html", "", map[string]string{"If-None-Match": etag}, 304, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			r.Header.Set("Accept", tt.accept)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d; body %.200s", w.Code, tt.status, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %s", ct, tt.contentType)
			}
			if !strings.Contains(w.Body.String(), tt.bodyHas) {
				t.Errorf("body %.300s does not contain %q", w.Body.String(), tt.bodyHas)
			}
		})
	}
}

func TestEditorPageMethods(t *testing.T) {
	page := Handler(Options{})
	for _, tt := range []struct {
		method   string
		status   int
		bodySize int // -1: any non-empty body
	}{
		{"GET", 200, len(page.(*editorPage).body)},
		{"HEAD", 200, 0},
		{"POST", 405, -1},
		{"PUT", 405, -1},
	} {
		w := httptest.NewRecorder()
		page.ServeHTTP(w, httptest.NewRequest(tt.method, "/graphql", nil))
		if w.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.method, w.Code, tt.status)
		}
		if tt.bodySize >= 0 && w.Body.Len() != tt.bodySize || tt.bodySize < 0 && w.Body.Len() == 0 {
			t.Errorf("%s: body of %d bytes, want %d", tt.method, w.Body.Len(), tt.bodySize)
		}
		if tt.status == 405 && w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow = %q, want GET, HEAD", tt.method, w.Header().Get("Allow"))
		}
	}
}

// TestEditorPageGRPCAddress checks that the page carries the gRPC address
// it was given, escaped, as data outside the script: pages for different
// addresses differ in body and ETag but share the script and so the CSP.
func TestEditorPageGRPCAddress(t *testing.T) {
	meta := regexp.MustCompile(`<meta name="grpc-address" content="([^"]*)">`)
	get := func(page http.Handler, ifNoneMatch string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://quartet.test:8080/graphql", nil)
		if ifNoneMatch != "" {
			r.Header.Set("If-None-Match", ifNoneMatch)
		}
		w := httptest.NewRecorder()
		page.ServeHTTP(w, r)
		return w
	}
	addresses := []string{"127.0.0.1:25051", "[::]:50051", "", `x"><script>alert(1)</script>&:1`}
	seen := map[string]string{} // ETag -> address
	var script, csp string
	for _, addr := range addresses {
		page := Handler(Options{GRPCAddress: addr})
		w := get(page, "")
		if w.Code != http.StatusOK {
			t.Fatalf("%q: status %d", addr, w.Code)
		}
		body := w.Body.String()
		m := meta.FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("%q: page has %d grpc-address elements, want 1", addr, len(m))
		}
		if got := html.UnescapeString(m[0][1]); got != addr {
			t.Errorf("page carries gRPC address %q, want %q", got, addr)
		}
		if strings.ContainsAny(m[0][1], `<>"`) {
			t.Errorf("%q: meta content %q is not escaped", addr, m[0][1])
		}
		scripts := inlineElements(t, body, "script")
		if len(scripts) != 1 {
			t.Fatalf("%q: page has %d <script> elements, want 1", addr, len(scripts))
		}
		if script == "" {
			script, csp = scripts[0], w.Header().Get("Content-Security-Policy")
		} else {
			if scripts[0] != script {
				t.Errorf("%q: the script differs with the address; its CSP hash would too", addr)
			}
			if got := w.Header().Get("Content-Security-Policy"); got != csp {
				t.Errorf("%q: CSP %q differs from %q", addr, got, csp)
			}
		}
		etag := w.Header().Get("ETag")
		if other, dup := seen[etag]; dup {
			t.Errorf("pages for %q and %q have the same ETag %s", other, addr, etag)
		}
		seen[etag] = addr
		if w := get(page, etag); w.Code != http.StatusNotModified {
			t.Errorf("%q: If-None-Match its own ETag: status %d, want 304", addr, w.Code)
		}
		if w := get(Handler(Options{GRPCAddress: addr}), etag); w.Code != http.StatusNotModified {
			t.Errorf("%q: a second Handler for the same address: status %d, want 304", addr, w.Code)
		}
	}
	a, b := Handler(Options{GRPCAddress: addresses[0]}), Handler(Options{GRPCAddress: addresses[1]})
	if w := get(b, get(a, "").Header().Get("ETag")); w.Code != http.StatusOK {
		t.Errorf("If-None-Match another address's ETag: status %d, want 200", w.Code)
	}
}

func TestInlineAssets(t *testing.T) {
	html := "<head>" + editorStyleTag + "</head><body>" + editorScriptTag + "</body>"
	tests := []struct {
		name, html, css, js string
		page, err           string
	}{
		{"ok", html, "a{}", "f()", "<head><style>a{}</style></head><body><script>f()</script></body>", ""},
		{"no stylesheet link", "<body>" + editorScriptTag, "", "", "", "editor.html must link editor.css exactly once"},
		{"two scripts", html + editorScriptTag, "", "", "", "editor.html must load editor.js exactly once"},
		{"style end tag in css", html, `a::after{content:"</STYLE>"}`, "", "", "editor.css must not contain </style"},
		{"script end tag in js", html, "", `s = "</script>"`, "", "editor.js must not contain </script or <!--"},
		{"comment opener in js", html, "", `s = "<!--"`, "", "editor.js must not contain </script or <!--"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, cssHash, jsHash, err := inlineAssets(tt.html, tt.css, tt.js)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if page != tt.page {
				t.Errorf("page = %q, want %q", page, tt.page)
			}
			if "'"+cssHash+"'" != sha256Source(tt.css) || "'"+jsHash+"'" != sha256Source(tt.js) {
				t.Errorf("hashes %s %s do not match the inlined text", cssHash, jsHash)
			}
		})
	}
}

func TestConnectSrc(t *testing.T) {
	for _, tt := range []struct{ host, want string }{
		{"localhost:8080", "connect-src 'self' ws://localhost:8080 wss://localhost:8080"},
		{"api.example.com", "connect-src 'self' ws://api.example.com wss://api.example.com"},
		{"[::1]:8080", "connect-src 'self'"},
		{"", "connect-src 'self'"},
		{"x.test; script-src *", "connect-src 'self'"},
		{"x.test,evil.test", "connect-src 'self'"},
		{"user@x.test", "connect-src 'self'"},
	} {
		if got := connectSrc(tt.host); got != tt.want {
			t.Errorf("connectSrc(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// TestEditorScriptSyntax has node check the script's syntax, so that a
// typo fails here and not only in a browser.
func TestEditorScriptSyntax(t *testing.T) {
	testkit.RequireNode(t, "")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	js, err := editorFiles.ReadFile("editor.js")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "editor.js")
	if err := os.WriteFile(file, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", file).CombinedOutput(); err != nil {
		t.Errorf("node --check editor.js: %v\n%s", err, out)
	}
}

// TestEditorScriptIDs checks that every element the script looks up by id,
// $('name'), is in editor.html: a missing one stops the script at load, and
// only a browser would show it.
func TestEditorScriptIDs(t *testing.T) {
	js, err := editorFiles.ReadFile("editor.js")
	if err != nil {
		t.Fatal(err)
	}
	html, err := editorFiles.ReadFile("editor.html")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(string(html), -1) {
		ids[m[1]] = true
	}
	lookups := regexp.MustCompile(`\$\('([^']+)'\)`).FindAllStringSubmatch(string(js), -1)
	if len(lookups) == 0 {
		t.Fatal("no $('id') lookups found in editor.js; has the helper changed?")
	}
	for _, m := range lookups {
		if !ids[m[1]] {
			t.Errorf("editor.js looks up #%s, which editor.html does not have", m[1])
		}
	}
}
