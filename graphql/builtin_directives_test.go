package graphql

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
