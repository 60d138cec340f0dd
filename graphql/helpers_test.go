package graphql

import (
	"os/exec"
	"path/filepath"
	"testing"

	"quartet/internal/testkit"
)

// graphqlJS runs testdata/js/check.mjs with args and returns what it prints. It
// skips the test when node or graphql-js is missing, except under CI.
func graphqlJS(t *testing.T, args ...string) string {
	t.Helper()
	jsDir := filepath.Join("testdata", "js")
	testkit.RequireNode(t, jsDir, "graphql")
	cmd := exec.Command("node", append([]string{"check.mjs"}, args...)...)
	cmd.Dir = jsDir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node check.mjs %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}
