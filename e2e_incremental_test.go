package main

import (
	"path/filepath"
	"testing"

	"quartet/internal/testkit"
)

// TestIncrementalClients runs e2e/incremental/incremental.test.mjs: Apollo Client's
// HttpLink with @defer under both of its incremental handlers, urql with @stream over
// GET and POST, and meros on the raw multipart stream, against the real service. It
// needs `npm ci` in e2e/incremental/; without it it skips, except under CI.
func TestIncrementalClients(t *testing.T) {
	dir := filepath.Join("e2e", "incremental")
	testkit.RequireNode(t, dir, "@apollo/client", "@urql/core", "meros")
	a, _ := startApp(t, testConfig())
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr}, filepath.Join(dir, "incremental.test.mjs"))
}
