package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// TestComparePageInBrowser runs e2e/compare/compare.test.mjs: headless Chromium
// opens /compare on the real service (on ports of its own, with -cors-origins) and
// sends every read; each style's column must show the request, the records the
// script reads itself, a command that answers the same, and the figures of the
// wire, and the comparison must say the records match. Once without authentication
// and once with -auth-reads, where the page sends the token to every style and,
// without it, every column shows the refusal. With QUARTET_SCREENSHOT_DIR set, a
// screenshot of each read is saved there. It needs Chromium, curl and `npm ci` in
// e2e/compare/; without them it skips, except under CI, where it fails.
func TestComparePageInBrowser(t *testing.T) {
	testkit.RequireNode(t, filepath.Join("e2e", "compare"), "playwright-core")
	chromium := testkit.RequireChromium(t)
	testkit.RequireCommand(t, "curl", "apt-get install curl")
	for _, auth := range []bool{false, true} {
		name := map[bool]string{false: "authentication off", true: "reads need a token"}[auth]
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.corsOrigins = "http://localhost:*"
			if auth {
				cfg.jwt.secret = testSecret
				cfg.authReads = true
			}
			a, _ := startApp(t, cfg)
			env := []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_GRPC=" + a.grpcAddr, "CHROMIUM=" + chromium,
				"QUARTET_SCREENSHOT_DIR=" + os.Getenv("QUARTET_SCREENSHOT_DIR")}
			if auth {
				env = append(env, "QUARTET_TOKEN="+testToken(t, ""))
			}
			runNode(t, env, filepath.Join("e2e", "compare", "compare.test.mjs"))
		})
	}
}

// TestComparePagesServed: the service serves the front page and the comparison
// with their CSP, the comparison naming the gRPC listener's address; other
// methods get 405 with Allow, as on every route.
func TestComparePagesServed(t *testing.T) {
	s := NewServer(newTestStore(t), discardLogger(), serverOptions{grpcAddr: "127.0.0.1:50051"})
	for _, tc := range []struct{ method, path, contains string }{
		{"GET", "/", `href="compare"`},
		{"GET", "/compare", `<meta name="grpc-address" content="127.0.0.1:50051">`},
		{"HEAD", "/compare", ""},
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" ||
			!strings.HasPrefix(rec.Header().Get("Content-Security-Policy"), "default-src 'none'; ") || !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("%s %s: %d %v\n%.300s", tc.method, tc.path, rec.Code, rec.Header(), rec.Body)
		}
	}
	for _, path := range []string{"/", "/compare"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader("{}")))
		if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD, OPTIONS" || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("POST %s: %d %v", path, rec.Code, rec.Header())
		}
	}
}
