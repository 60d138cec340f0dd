package odata

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

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
			testkit.CheckGolden(t, strings.TrimSuffix(file, ".requests")+".golden", []byte(out.String()))
		})
	}
}
