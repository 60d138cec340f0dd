package main

import (
	"os"
	"path/filepath"
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
