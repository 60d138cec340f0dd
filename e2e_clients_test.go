package main

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRealClients runs the Node tests of e2e/ that use real, unmodified clients
// against the real service: Apollo Client with automatic persisted queries and
// BatchHttpLink (apollo.test.mjs), a page of another origin in headless Chromium
// calling REST, GraphQL and OData, and refused when its origin is not listed
// (cors.test.mjs), @grpc/grpc-js with gzip and grpc-health-check (grpc.test.mjs),
// and /metrics read by a Prometheus text-format parser (metrics.test.mjs). The
// service runs with -cors-origins 'http://localhost:*' (the page's origin, not
// the service's 127.0.0.1) and -graphql-batch-max 5. It needs Debian's chromium and
// `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestRealClients(t *testing.T) {
	chromium := cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	missing := ""
	if _, err := os.Stat(chromium); err != nil {
		missing = "no Chromium at " + chromium + " (apt-get install chromium)"
	}
	for _, pkg := range []string{"playwright-core", "@apollo/client", "@grpc/grpc-js", "@grpc/proto-loader", "grpc-health-check", "parse-prometheus-text-format"} {
		if _, err := os.Stat(filepath.Join("e2e", "node_modules", pkg)); err != nil && missing == "" {
			missing = pkg + " is not installed (npm ci in e2e/)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	cfg := testConfig()
	cfg.corsOrigins = "http://localhost:*"
	cfg.graphqlBatchMax = 5
	a, _ := startApp(t, cfg)
	args := []string{"--test"}
	for _, f := range []string{"apollo", "cors", "grpc", "metrics"} {
		args = append(args, filepath.Join("e2e", f+".test.mjs"))
	}
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "QUARTET_URL=http://"+a.httpAddr, "QUARTET_GRPC="+a.grpcAddr, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("real clients failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
