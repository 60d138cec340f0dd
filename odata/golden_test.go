package odata

import (
	"bufio"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden runs every request listed in testdata/*.requests (one per
// line; blank lines and # comments are skipped; spaces are sent as %20)
// through the routes of testMux and compares status and body with the
// matching .golden file.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.requests")
	if err != nil || len(files) == 0 {
		t.Fatalf("no request files: %v", err)
	}
	mux := testMux()
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".requests")
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out strings.Builder
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := sc.Text()
				if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
					continue
				}
				req := httptest.NewRequest("GET", "http://example.com"+strings.ReplaceAll(line, " ", "%20"), nil)
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, req)
				fmt.Fprintf(&out, "GET %s\n%d\n%s\n\n", line, rec.Code, strings.TrimRight(rec.Body.String(), "\n"))
			}
			golden := strings.TrimSuffix(file, ".requests") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			compareBlocks(t, string(want), out.String())
		})
	}
}

// compareBlocks reports each differing request block separately.
func compareBlocks(t *testing.T, want, got string) {
	t.Helper()
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n\n"), strings.Split(got, "\n\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			t.Errorf("block %d:\nwant:\n%s\ngot:\n%s", i, a, b)
		}
	}
}
