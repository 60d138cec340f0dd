package main

import (
	"path/filepath"
	"testing"

	"quartet/internal/testkit"
)

// TestSSEClients runs e2e/sse/sse.test.mjs: the graphql-sse client in both of its
// modes, Apollo Client's HttpLink subscribing over multipart and meros on a multipart
// subscription, against the real service. It needs `npm ci` in e2e/sse/; without it
// it skips, except under CI.
func TestSSEClients(t *testing.T) {
	dir := filepath.Join("e2e", "sse")
	testkit.RequireNode(t, dir, "graphql-sse", "@apollo/client", "meros")
	a, _ := startApp(t, testConfig())
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr}, filepath.Join(dir, "sse.test.mjs"))
}
