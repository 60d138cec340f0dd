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
	if testing.Short() {
		t.Skip("skipped under -short: runs go list")
	}
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
