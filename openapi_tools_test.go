package main

import (
	"path/filepath"
	"testing"

	"quartet/internal/testkit"
)

// TestOpenAPITools holds the document /openapi.json serves to the tools people point
// at it, for the two shapes it takes: a service without authentication (the default)
// and one with -jwt-secret, whose writes ask for a bearer token. For each, in e2e/:
// request bodies drawn from every JSON request schema by a seeded sampler are
// accepted when the schema says they are valid and refused when it says not, with
// every answer as documented (openapi-props.test.mjs, QUARTET_SEED to draw others);
// a create and a read pass through Prism's validation proxy without a violation
// (openapi-prism.test.mjs); Redocly's recommended lint finds no error
// (openapi-lint.test.mjs). It needs node and `npm ci` in e2e/; without them it
// skips, except under CI, where it fails.
func TestOpenAPITools(t *testing.T) {
	testkit.RequireNode(t, "e2e", "ajv", "ajv-formats", filepath.Join("@stoplight", "prism-cli"), filepath.Join("@redocly", "cli"))
	files := []string{
		filepath.Join("e2e", "openapi-props.test.mjs"),
		filepath.Join("e2e", "openapi-prism.test.mjs"),
		filepath.Join("e2e", "openapi-lint.test.mjs"),
	}
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		a, _ := startApp(t, testConfig())
		runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr}, files...)
	})
	t.Run("jwt", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig()
		cfg.jwt.secret = testSecret
		a, _ := startApp(t, cfg)
		runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_WRITE_TOKEN=" + testToken(t, "write")}, files...)
	})
}
