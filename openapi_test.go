package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"quartet/internal/jwt"
	"quartet/internal/testkit"
)

// TestOpenAPIServed: each style's contract is one GET: the OpenAPI document at
// /openapi.json and the GraphQL SDL at /graphql/schema.graphql.
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
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET /openapi.json: %d %q; want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Every key of the template, the top level in its order.
	served, template := topLevelKeys(t, body), topLevelKeys(t, openAPITemplate)
	if !slices.Equal(served, template) || served[0] != "openapi" {
		t.Errorf("/openapi.json has the top-level keys %q; the template has %q", served, template)
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

// topLevelKeys lists the keys of the JSON object doc in their order.
func topLevelKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		key, err := dec.Token()
		var value json.RawMessage
		if err == nil {
			err = dec.Decode(&value)
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key.(string))
	}
	return keys
}

// openAPIOperation is what the tests read of an operation.
type openAPIOperation struct {
	Security  *[]map[string][]string `json:"security"`
	Responses map[string]json.RawMessage
}

// openAPIDoc is what the tests read of the document.
type openAPIDoc struct {
	Servers    []struct{ URL string }
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		SecuritySchemes map[string]json.RawMessage
		Schemas         map[string]struct {
			Properties map[string]map[string]any
		}
	}
}

func readOpenAPI(t *testing.T, s *Server) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(s.openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// operations lists the document's operations as "METHOD /path".
func (doc openAPIDoc) operations(t *testing.T) map[string]openAPIOperation {
	ops := map[string]openAPIOperation{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return ops
}

// TestOpenAPIRoutes holds openapi.json to the route table: every REST route (under
// /api/users) and nothing else the document names is missing from it, and the
// document names no operation the server does not route.
func TestOpenAPIRoutes(t *testing.T) {
	s := NewServer(newTestStore(t), discardLogger(), serverOptions{})
	doc := readOpenAPI(t, s)
	var documented, routed []string
	for op := range doc.operations(t) {
		documented = append(documented, op)
	}
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

// TestOpenAPISecurity holds each operation's security to what the server does: for
// authentication off, on, and on with -auth-reads, an operation declares a bearer
// token exactly when a call without one gets 401, documents 401 then too, and 403
// exactly when it is a write; the scheme is declared exactly when some operation
// uses it.
func TestOpenAPISecurity(t *testing.T) {
	v, err := jwt.New(jwt.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range map[string]*authenticator{"off": nil, "on": {verifier: v}, "on with -auth-reads": {verifier: v, reads: true}} {
		t.Run(name, func(t *testing.T) {
			s := NewServer(newTestStore(t), discardLogger(), serverOptions{auth: auth})
			doc := readOpenAPI(t, s)
			if _, declared := doc.Components.SecuritySchemes["bearerAuth"]; declared != (auth != nil) {
				t.Errorf("bearerAuth declared: %v; authentication on: %v", declared, auth != nil)
			}
			for op, spec := range doc.operations(t) {
				if spec.Security == nil {
					t.Errorf("%s declares no security; want [] or bearerAuth", op)
					continue
				}
				bearer := len(*spec.Security) == 1 && (*spec.Security)[0]["bearerAuth"] != nil
				if !bearer && len(*spec.Security) != 0 {
					t.Errorf("%s: security %v; want [] or [{bearerAuth: []}]", op, *spec.Security)
				}
				method, path, _ := strings.Cut(op, " ")
				path = strings.NewReplacer("{id}", "1", "{userId}", "1").Replace(path)
				req := httptest.NewRequest(method, path, strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if got401 := rec.Code == http.StatusUnauthorized; got401 != bearer {
					t.Errorf("%s without a token: %d; the document declares a token needed: %v", op, rec.Code, bearer)
				}
				_, has401 := spec.Responses["401"]
				_, has403 := spec.Responses["403"]
				if has401 != bearer || has403 != (bearer && method != "GET") {
					t.Errorf("%s documents 401: %v, 403: %v; a token is needed: %v", op, has401, has403, bearer)
				}
				if _, has429 := spec.Responses["429"]; has429 {
					t.Errorf("%s documents 429 on a server without a queue", op)
				}
			}
		})
	}
}

// TestOpenAPIServersAndProducts: servers names -public-url (or the service root),
// and an order's productId names the products loaded: a range without gaps, a list
// with them.
func TestOpenAPIServersAndProducts(t *testing.T) {
	product := func(ids ...int64) *Store {
		s := NewStore()
		var ds Dataset
		for _, id := range ids {
			ds.Products = append(ds.Products, Product{ID: id, Name: fmt.Sprintf("p%d", id), Category: "c", CreatedDate: fixedTime})
		}
		if err := s.Load(&ds); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		store     *Store
		publicURL string
		url       string
		productID map[string]any
	}{
		{product(), "", "/", map[string]any{"description": "An existing product (404 otherwise); this service has none."}},
		{product(3, 4, 5), "https://api.example.com/v1", "https://api.example.com/v1", map[string]any{"minimum": 3.0, "maximum": 5.0}},
		{product(1, 2, 7), "", "/", map[string]any{"enum": []any{1.0, 2.0, 7.0}}},
	} {
		doc := readOpenAPI(t, NewServer(tc.store, discardLogger(), serverOptions{publicURL: tc.publicURL}))
		if len(doc.Servers) != 1 || doc.Servers[0].URL != tc.url {
			t.Errorf("public URL %q: servers %+v; want one, %q", tc.publicURL, doc.Servers, tc.url)
		}
		got := doc.Components.Schemas["OrderInput"].Properties["productId"]
		for k, want := range tc.productID {
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("products %v: productId %s = %v; want %v", tc.productID, k, got[k], want)
			}
		}
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
	cfg.admission.ClientWaiting = 0
	busy, _ := startApp(t, cfg)
	holdEverySlot(t, busy)
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_BUSY_URL=http://" + busy.httpAddr, "QUARTET_WRITE_TOKEN=" + testToken(t, "write"),
		"QUARTET_READ_TOKEN=" + testToken(t, "read"), "QUARTET_GOLDEN_DIR=" + filepath.Join("testdata", "rest")},
		filepath.Join("e2e", "openapi.test.mjs"))
}
