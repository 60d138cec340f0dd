package main

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEditorInBrowser runs e2e/editor.test.mjs: headless Chromium opens the query editor
// served by the real service and uses every feature as a person would (see e2e/README.md),
// down to an onUserCreated subscription receiving a user created over REST. With
// QUARTET_SCREENSHOT_DIR set, a screenshot of each state is saved there. It needs Debian's
// chromium and `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestEditorInBrowser(t *testing.T) {
	chromium := requireNode(t, "e2e", true, "playwright-core")
	a, _ := startApp(t, testConfig())
	screenshot := filepath.Join(t.TempDir(), "editor.png")
	if dir := os.Getenv("QUARTET_SCREENSHOT_DIR"); dir != "" {
		screenshot = filepath.Join(dir, "editor.png")
	}
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_SCREENSHOT=" + screenshot, "CHROMIUM=" + chromium},
		filepath.Join("e2e", "editor.test.mjs"))
}

// requireNode skips the test, or fails it under CI (CI set), unless node and each
// of the packages are installed in dir/node_modules and, when browser is set,
// Debian's Chromium (or $CHROMIUM) is there; it returns the browser's path.
func requireNode(t *testing.T, dir string, browser bool, packages ...string) (chromium string) {
	t.Helper()
	chromium = cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(chromium); browser && err != nil {
		missing = "no Chromium at " + chromium + " (apt-get install chromium)"
	}
	for _, pkg := range packages {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil && missing == "" {
			missing = pkg + " is not installed (npm ci in " + dir + "/)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return chromium
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
