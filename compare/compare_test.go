package compare

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// inline matches an inline element's text: the stylesheet or the script.
var inline = regexp.MustCompile(`(?s)<(style|script)>(.*?)</(?:style|script)>`)

// transcript is what a client sees of one request: the status, every header but
// Date, and the body with the inline stylesheet and script named, not repeated.
func transcript(h http.Handler, method, target string, header ...string) (string, *httptest.ResponseRecorder) {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", method, target)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\n", header[i], header[i+1])
	}
	fmt.Fprintf(&b, "HTTP %d\n", rec.Code)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range rec.Header() {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(rec.Header()[k], ", "))
	}
	body := inline.ReplaceAllStringFunc(rec.Body.String(), func(el string) string {
		m := inline.FindStringSubmatch(el)
		return fmt.Sprintf("<%s>[%d bytes, %s]</%s>", m[1], len(m[2]), hashSource(m[2]), m[1])
	})
	fmt.Fprintf(&b, "\n%s\n###\n", body)
	return b.String(), rec
}

// TestPagesGolden holds both pages' answers to testdata/pages.golden: headers
// (the CSP above all), the HTML around the inline assets, HEAD, and 304.
func TestPagesGolden(t *testing.T) {
	opts := Options{GRPCAddress: "127.0.0.1:50051"}
	var out strings.Builder
	for _, page := range []struct {
		path string
		h    http.Handler
	}{{"/compare", Handler(opts)}, {"/", Index(opts)}} {
		got, rec := transcript(page.h, "GET", page.path)
		out.WriteString(got)
		got, _ = transcript(page.h, "HEAD", page.path)
		out.WriteString(got)
		got, _ = transcript(page.h, "GET", page.path, "If-None-Match", rec.Header().Get("ETag"))
		out.WriteString(got)
	}
	testkit.CheckGolden(t, filepath.Join("testdata", "pages.golden"), []byte(out.String()))
}

// TestCSPNamesTheInlineAssets: the policy allows exactly the page's own inline
// script and stylesheet, and the page loads nothing by URL.
func TestCSPNamesTheInlineAssets(t *testing.T) {
	for name, h := range map[string]http.Handler{"compare": Handler(Options{}), "index": Index(Options{})} {
		_, rec := transcript(h, "GET", "/")
		body, csp := rec.Body.String(), rec.Header().Get("Content-Security-Policy")
		var want []string
		for _, m := range inline.FindAllStringSubmatch(body, -1) {
			want = append(want, m[1]+"-src '"+hashSource(m[2])+"'")
		}
		if name == "compare" && len(want) != 2 || name == "index" && len(want) != 1 {
			t.Errorf("%s: inline elements %q", name, want)
		}
		for _, directive := range want {
			if !strings.Contains(csp, directive) {
				t.Errorf("%s: the CSP %q lacks %q", name, csp, directive)
			}
		}
		if !strings.HasPrefix(csp, "default-src 'none'; ") || strings.Count(csp, "sha256-") != len(want) {
			t.Errorf("%s: the CSP %q allows more than the inline assets", name, csp)
		}
		if m := regexp.MustCompile(`(?i)<(script|link)[^>]*(src|stylesheet)|https?://`).FindString(body); m != "" {
			t.Errorf("%s: the page loads something by URL: %q", name, m)
		}
	}
}

// TestGRPCAddressIsData: the address is escaped into the HTML and changes neither
// page's CSP, which names the script and stylesheet alone.
func TestGRPCAddressIsData(t *testing.T) {
	for name, page := range map[string]func(Options) http.Handler{"compare": Handler, "index": Index} {
		_, plain := transcript(page(Options{GRPCAddress: "[::]:50051"}), "GET", "/")
		_, hostile := transcript(page(Options{GRPCAddress: `x"><script>alert(1)</script>`}), "GET", "/")
		if !strings.Contains(plain.Body.String(), "[::]:50051") {
			t.Errorf("%s: the address is not in the page", name)
		}
		if body := hostile.Body.String(); strings.Contains(body, "alert(1)</script>") || !strings.Contains(body, "x&#34;&gt;&lt;script&gt;") {
			t.Errorf("%s: the address is not escaped", name)
		}
		if plain.Header().Get("Content-Security-Policy") != hostile.Header().Get("Content-Security-Policy") {
			t.Errorf("%s: the CSP depends on the address", name)
		}
		if plain.Header().Get("ETag") == hostile.Header().Get("ETag") {
			t.Errorf("%s: two different pages have one ETag", name)
		}
	}
}

// TestAssetsInlineSafely: nothing in the stylesheet or the script ends its
// element early or opens an HTML comment.
func TestAssetsInlineSafely(t *testing.T) {
	css, js := strings.ToLower(asset("compare.css")), strings.ToLower(asset("compare.js"))
	if strings.Contains(css, "</style") || strings.Contains(js, "</script") || strings.Contains(js, "<!--") {
		t.Error("an asset holds </style, </script or <!--")
	}
	for _, html := range []string{asset("compare.html"), asset("index.html")} {
		if strings.Count(html, styleTag) != 1 {
			t.Errorf("a page does not link compare.css exactly once")
		}
	}
	if strings.Count(asset("compare.html"), scriptTag) != 1 || strings.Count(asset("compare.html"), grpcAddressTag) != 1 ||
		strings.Count(asset("index.html"), grpcAddressText) != 1 {
		t.Error("compare.html must load compare.js and hold the gRPC address tag once, index.html the address text once")
	}
}

// TestScriptIDs: every element the script looks up by id is in compare.html; a
// missing one stops the script, which only a browser would show.
func TestScriptIDs(t *testing.T) {
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(asset("compare.html"), -1) {
		ids[m[1]] = true
	}
	lookups := regexp.MustCompile(`\$\('([^']+)'\)`).FindAllStringSubmatch(asset("compare.js"), -1)
	if len(lookups) < 5 {
		t.Fatalf("only %d $('id') lookups in compare.js; has the helper changed?", len(lookups))
	}
	for _, m := range lookups {
		if !ids[m[1]] {
			t.Errorf("compare.js looks up #%s, which compare.html does not have", m[1])
		}
	}
}

// TestScriptSyntax has node check the script, so that a typo fails here and
// not only in a browser.
func TestScriptSyntax(t *testing.T) {
	testkit.RequireNode(t, "")
	file := filepath.Join(t.TempDir(), "compare.js")
	if err := os.WriteFile(file, []byte(asset("compare.js")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("node", "--check", file).CombinedOutput(); err != nil {
		t.Errorf("node --check compare.js: %v\n%s", err, out)
	}
}
