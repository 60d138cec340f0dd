package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDomainImportsNoTransport holds the arrow docs/design.md draws: the domain's
// files (errors, model, store, dataset) depend, through everything they import, on
// no transport (net/http, gRPC, WebSocket), no surface and no engine.
func TestDomainImportsNoTransport(t *testing.T) {
	files := []string{"errors.go", "model.go", "dataset.go"}
	stores, _ := filepath.Glob("store*.go")
	for _, f := range stores {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := []string{"quartet/internal/journal", "quartet/internal/jsonscan", "quartet/internal/jsonkeys"}
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case dep == "command-line-arguments", slices.Contains(allowed, dep):
		case strings.HasPrefix(dep, "net/http"), strings.HasPrefix(dep, "quartet/"),
			strings.Contains(strings.Split(dep, "/")[0], "."):
			t.Errorf("the domain depends on %s", dep)
		}
	}
}

// TestEnginesAndPlumbingKnowNoSurface holds the other arrows of docs/design.md: the
// engines (graphql/, odata/) and the plumbing (internal/) import neither the other
// engine nor the gRPC messages, and only the packages that serve a protocol import
// its library (internal/admission keeps gRPC's door, graphql/ serves WebSockets).
func TestEnginesAndPlumbingKnowNoSurface(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./graphql", "./odata", "./internal/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	mayUse := map[string]string{
		"google.golang.org/grpc":     "quartet/internal/admission",
		"github.com/coder/websocket": "quartet/graphql",
	}
	for line := range strings.Lines(string(out)) {
		deps := strings.Fields(line)
		pkg := deps[0]
		if !strings.HasPrefix(pkg, "quartet/") {
			continue
		}
		for _, dep := range deps[1:] {
			switch {
			case dep == "quartet/userpb", dep != pkg && (dep == "quartet/graphql" || dep == "quartet/odata"):
				t.Errorf("%s depends on %s", pkg, dep)
			case mayUse[dep] != "" && mayUse[dep] != pkg:
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestNoPackageImportsUp holds docs/design.md's drawing for every package of the
// module: each imports only packages of its own row or of a row below. A package
// in no row fails the test, to be drawn first.
func TestNoPackageImportsUp(t *testing.T) {
	type row struct {
		name  string
		level int
	}
	var (
		wiring   = row{"the root package", 3}
		engines  = row{"the surfaces' packages", 2}
		json     = row{"the domain's helpers", 1}
		plumbing = row{"the plumbing", 1}
		tests    = row{"the tests' kit", 1}
	)
	rows := map[string]row{"quartet": wiring,
		"quartet/graphql": engines, "quartet/graphql/editor": engines, "quartet/compare": engines, "quartet/odata": engines, "quartet/userpb": engines}
	for _, p := range []string{"journal", "jwt", "jsonscan", "jsonkeys", "jsonstr"} {
		rows["quartet/internal/"+p] = json
	}
	for _, p := range []string{"admission", "grpcweb", "cors", "contentcoding", "reqbody", "metrics", "accesslog", "memory", "etag"} {
		rows["quartet/internal/"+p] = plumbing
	}
	rows["quartet/internal/testkit"] = tests
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		imports := strings.Fields(line)
		pkg := imports[0]
		from, ok := rows[pkg]
		if !ok {
			if !strings.HasPrefix(pkg, "quartet/e2e") && !strings.HasPrefix(pkg, "quartet/bench") {
				t.Errorf("%s is in no row of docs/design.md's drawing", pkg)
			}
			continue
		}
		for _, dep := range imports[1:] {
			if to, ok := rows[dep]; ok && to != from && to.level >= from.level {
				t.Errorf("%s (%s) imports %s (%s), not below it", pkg, from.name, dep, to.name)
			}
		}
	}
}
