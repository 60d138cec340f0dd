package main

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEditorInBrowser runs e2e/editor.test.mjs: headless Chromium opens the query editor
// served by the real service and uses every feature as a person would (see e2e/README.md),
// down to an onUserCreated subscription receiving a user created over REST. With
// QUARTET_SCREENSHOT_DIR set, a screenshot of each state is saved there. It needs Debian's
// chromium and `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestEditorInBrowser(t *testing.T) {
	chromium := cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	missing := ""
	if _, err := os.Stat(chromium); err != nil {
		missing = "no Chromium at " + chromium + " (apt-get install chromium)"
	} else if _, err := os.Stat(filepath.Join("e2e", "node_modules", "playwright-core")); err != nil {
		missing = "playwright-core is not installed (npm ci in e2e/)"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	a, _ := startApp(t, testConfig())
	screenshot := filepath.Join(t.TempDir(), "editor.png")
	if dir := os.Getenv("QUARTET_SCREENSHOT_DIR"); dir != "" {
		screenshot = filepath.Join(dir, "editor.png")
	}
	cmd := exec.Command("node", "--test", filepath.Join("e2e", "editor.test.mjs"))
	cmd.Env = append(os.Environ(), "QUARTET_URL=http://"+a.httpAddr, "QUARTET_SCREENSHOT="+screenshot, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("browser test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
