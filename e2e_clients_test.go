package main

import (
	"path/filepath"
	"testing"

	"quartet/internal/testkit"
)

// TestRealClients runs the Node tests of e2e/ that use real, unmodified clients
// against the real service: Apollo Client with automatic persisted queries and
// BatchHttpLink (apollo.test.mjs), a page of another origin in headless Chromium
// calling REST, GraphQL, OData and gRPC-Web, and refused when its origin is not listed
// (cors.test.mjs), @grpc/grpc-js with gzip and grpc-health-check (grpc.test.mjs),
// and /metrics read by a Prometheus text-format parser (metrics.test.mjs). The
// service runs with -cors-origins 'http://localhost:*' (the page's origin, not
// the service's 127.0.0.1) and -graphql-batch-max 5. It needs Debian's chromium and
// `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestRealClients(t *testing.T) {
	testkit.RequireNode(t, "e2e", "playwright-core", "@apollo/client", "@grpc/grpc-js", "@grpc/proto-loader", "grpc-health-check", "parse-prometheus-text-format")
	chromium := testkit.RequireChromium(t)
	cfg := testConfig()
	cfg.corsOrigins = "http://localhost:*"
	cfg.graphqlBatchMax = 5
	a, _ := startApp(t, cfg)
	var files []string
	for _, f := range []string{"apollo", "cors", "grpc", "metrics"} {
		files = append(files, filepath.Join("e2e", f+".test.mjs"))
	}
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_GRPC=" + a.grpcAddr, "CHROMIUM=" + chromium}, files...)
}
