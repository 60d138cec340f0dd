package graphql

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestIntrospectionRoundTrip feeds the result of graphql-js's standard
// introspection query to buildClientSchema and printSchema, and requires the
// printed schema to equal testdata/schema.graphql, which is written in
// printSchema's canonical form. It needs `npm ci` in testdata/js.
func TestIntrospectionRoundTrip(t *testing.T) {
	query := graphqlJS(t, "query")
	s, _ := newTestSchema(t)
	resp := s.Execute(context.Background(), Request{Query: query})
	if len(resp.Errors) > 0 {
		t.Fatalf("introspection failed: %v", ErrorList(resp.Errors))
	}
	file := filepath.Join(t.TempDir(), "introspection.json")
	if err := os.WriteFile(file, resp.appendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	printed := graphqlJS(t, "print", abs)
	if want := loadTestSDL(t); printed != want {
		t.Errorf("printSchema(buildClientSchema(introspection)) differs from testdata/schema.graphql:\n%s", printed)
	}
}
