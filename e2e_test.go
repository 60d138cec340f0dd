package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// TestEditorInBrowser runs e2e/editor.test.mjs: headless Chromium opens the query editor
// served by the real service and uses every feature as a person would (see e2e/README.md),
// down to an onUserCreated subscription receiving a user created over REST. With
// QUARTET_SCREENSHOT_DIR set, a screenshot of each state is saved there. It needs Debian's
// chromium and `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestEditorInBrowser(t *testing.T) {
	testkit.RequireNode(t, "e2e", "playwright-core")
	chromium := testkit.RequireChromium(t)
	a, _ := startApp(t, testConfig())
	screenshot := filepath.Join(t.TempDir(), "editor.png")
	if dir := os.Getenv("QUARTET_SCREENSHOT_DIR"); dir != "" {
		screenshot = filepath.Join(dir, "editor.png")
	}
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_GRPC=" + a.grpcAddr, "QUARTET_SCREENSHOT=" + screenshot, "CHROMIUM=" + chromium},
		filepath.Join("e2e", "editor.test.mjs"))
}

// runNode runs node --test on files with env added to the test's environment, and
// fails the test with node's output when a Node test failed.
func runNode(t *testing.T, env []string, files ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{"--test"}, files...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	t.Logf("%s", out)
}
