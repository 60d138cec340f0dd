package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// TestOpenAPIServed: each style's contract is one GET: the embedded OpenAPI document
// at /openapi.json and the GraphQL SDL at /graphql/schema.graphql.
func TestOpenAPIServed(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	get := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}

	resp, body := get("GET", "/openapi.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, openAPIDocument) {
		t.Errorf("GET /openapi.json: %d %q, %d bytes; want 200 application/json and the embedded document", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Errorf("/openapi.json: openapi %q, %v; want 3.1.0", doc.OpenAPI, err)
	}

	resp, body = get("GET", "/graphql/schema.graphql")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || string(body) != schemaSDL {
		t.Errorf("GET /graphql/schema.graphql: %d %q; want 200 text/plain and the schema /graphql serves", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), "type Query") || !strings.Contains(string(body), "type Subscription") {
		t.Errorf("GET /graphql/schema.graphql does not look like the SDL:\n%s", body)
	}

	for _, path := range []string{"/openapi.json", "/graphql/schema.graphql"} {
		if resp, body := get("HEAD", path); resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes; want 200, no body", path, resp.StatusCode, len(body))
		}
		if resp, _ := get("POST", path); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("POST %s: %d Allow %q; want 405 Allow: GET, HEAD, OPTIONS", path, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// TestOpenAPIRoutes holds openapi.json to the route table: every REST route (under
// /api/users) and nothing else the document names is missing from it, and the
// document names no operation the server does not route.
func TestOpenAPIRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, routed []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "parameters", "summary", "description", "servers":
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	s := NewServer(newTestStore(t), discardLogger(), serverOptions{})
	for path, methods := range s.methods {
		if _, inDoc := doc.Paths[path]; !inDoc && path != "/api/users" && !strings.HasPrefix(path, "/api/users/") {
			continue // GraphQL, OData and other surfaces have contracts of their own
		}
		for _, m := range methods {
			routed = append(routed, m+" "+path)
		}
	}
	slices.Sort(documented)
	slices.Sort(routed)
	if !slices.Equal(documented, routed) {
		t.Errorf("openapi.json and addRoutes disagree:\ndocumented: %q\nrouted:     %q", documented, routed)
	}
}

// TestOpenAPIAgainstAnswers runs e2e/openapi.test.mjs: the document served by the real
// service must be valid OpenAPI 3.1 (swagger-parser), and every REST golden answer in
// testdata/rest, and live answers of a service with authentication on (401, 403, 413,
// ...), must match the schema of their route and status (ajv); a client generated
// from it (openapi-typescript, openapi-fetch) must type-check and do CRUD. It needs
// node and `npm ci` in e2e/; without them it skips, except under CI, where it fails.
func TestOpenAPIAgainstAnswers(t *testing.T) {
	testkit.RequireNode(t, "e2e", "ajv", "ajv-formats", filepath.Join("@apidevtools", "swagger-parser"), "openapi-typescript", "openapi-fetch", "typescript")
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.authReads = true
	a, _ := startApp(t, cfg)
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_WRITE_TOKEN=" + testToken(t, "write"),
		"QUARTET_READ_TOKEN=" + testToken(t, "read"), "QUARTET_GOLDEN_DIR=" + filepath.Join("testdata", "rest")},
		filepath.Join("e2e", "openapi.test.mjs"))
}
