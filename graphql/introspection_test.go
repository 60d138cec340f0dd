package graphql

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestIntrospectionRoundTrip feeds the result of graphql-js's standard
// introspection query to buildClientSchema and printSchema, and requires the
// printed schema to equal testdata/schema.graphql, which is written in
// printSchema's canonical form. It needs `npm ci` in testdata/js.
func TestIntrospectionRoundTrip(t *testing.T) {
	jsDir := filepath.Join("testdata", "js")
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "graphql")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("graphql-js is not installed in %s (run npm ci there): %v", jsDir, err)
		}
		t.Skipf("skipping: graphql-js is not installed; run `npm ci` in %s to enable this test", jsDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(node, append([]string{"check.mjs"}, args...)...)
		cmd.Dir = jsDir
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("node %v: %v\n%s", args, err, ee.Stderr)
			}
			t.Fatalf("node %v: %v", args, err)
		}
		return out
	}
	query := run("query")
	s, _ := newTestSchema(t)
	resp := s.Execute(context.Background(), Request{Query: string(query)})
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
	printed := run("print", abs)
	if want := loadTestSDL(t); string(printed) != want {
		t.Errorf("printSchema(buildClientSchema(introspection)) differs from testdata/schema.graphql:\n%s", printed)
	}
}
