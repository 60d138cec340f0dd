package graphql

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// graphqlJS runs testdata/js/check.mjs with args and returns what it prints. It
// skips the test when graphql-js is not installed there, except under CI.
func graphqlJS(t *testing.T, args ...string) string {
	t.Helper()
	jsDir := filepath.Join("testdata", "js")
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "graphql")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("graphql-js is not installed in %s (run npm ci there): %v", jsDir, err)
		}
		t.Skipf("skipping: graphql-js is not installed; run `npm ci` in %s to enable this test", jsDir)
	}
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

// TestBuiltinDirectivesMatchGraphQLJS rebuilds the schema from the service's
// introspection answer with graphql-js (buildClientSchema) and requires its built-in
// directives to print exactly as graphql-js's own specifiedDirectives: same order,
// descriptions, arguments, default values and locations (16.15's @deprecated also
// applies to DIRECTIVE_DEFINITION). A tool that diffs the two, as schema registries
// do, then sees nothing.
func TestBuiltinDirectivesMatchGraphQLJS(t *testing.T) {
	if v := strings.TrimSpace(graphqlJS(t, "version")); !strings.HasPrefix(v, "16.15.") {
		t.Fatalf("testdata/js has graphql-js %s; the built-in directives follow 16.15", v)
	}
	s, _ := newTestSchema(t)
	resp := s.Execute(context.Background(), Request{Query: graphqlJS(t, "query")})
	if len(resp.Errors) > 0 {
		t.Fatalf("introspection failed: %v", ErrorList(resp.Errors))
	}
	file, err := filepath.Abs(filepath.Join(t.TempDir(), "introspection.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, resp.appendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	got, want := graphqlJS(t, "directives", file), graphqlJS(t, "directives")
	if !strings.Contains(want, "directive @deprecated") {
		t.Fatalf("check.mjs printed no @deprecated for graphql-js itself:\n%s", want)
	}
	if got != want {
		t.Errorf("built-in directives rebuilt from introspection differ from graphql-js's own\n--- got\n%s\n--- want\n%s", got, want)
	}
}
