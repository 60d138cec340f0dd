package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"quartet/internal/testkit"
)

// TestExecuteGolden runs every testdata/exec/NAME.graphql (with variables
// from NAME.vars.json and the operation named by a "# operation: X" first
// line) against a fresh test schema and compares the indented response with
// NAME.json. Run with -update to rewrite the golden files.
func TestExecuteGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "exec", "*.graphql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".graphql")
		t.Run(name, func(t *testing.T) {
			s, _ := newTestSchema(t)
			resp := s.Execute(context.Background(), goldenRequest(t, file))
			var out bytes.Buffer
			if err := json.Indent(&out, resp.appendJSON(nil), "", "  "); err != nil {
				t.Fatalf("response is not JSON: %v\n%s", err, resp.appendJSON(nil))
			}
			out.WriteByte('\n')
			testkit.CheckGolden(t, strings.TrimSuffix(file, ".graphql")+".json", out.Bytes())
		})
	}
}

// goldenRequest reads the request of the golden input file: its query, with
// variables from NAME.vars.json and the operation named by a "# operation: X"
// first line.
func goldenRequest(t *testing.T, file string) Request {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Query: string(src)}
	if op, ok := strings.CutPrefix(req.Query, "# operation: "); ok {
		req.OperationName, _, _ = strings.Cut(op, "\n")
	}
	if vars, err := os.ReadFile(strings.TrimSuffix(file, ".graphql") + ".vars.json"); err == nil {
		d := json.NewDecoder(bytes.NewReader(vars))
		d.UseNumber()
		if err := d.Decode(&req.Variables); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

// TestExecuteRepeatedlyAndConcurrently runs each golden query many times on one
// schema, from several goroutines: an operation without variables shares what
// collection and argument coercion worked out the first time, and every later
// execution must answer exactly as the first did.
func TestExecuteRepeatedlyAndConcurrently(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "exec", "*.graphql"))
	s, _ := newTestSchema(t)
	for _, file := range files {
		req := goldenRequest(t, file)
		if strings.Contains(req.Query, "mutation") {
			continue // changes the data: a second run answers differently
		}
		first := string(s.Execute(context.Background(), req).appendJSON(nil))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 5 {
					if got := string(s.Execute(context.Background(), req).appendJSON(nil)); got != first {
						t.Errorf("%s: a later execution answered\n%s\nthe first\n%s", file, got, first)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
