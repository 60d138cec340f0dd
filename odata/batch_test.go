package odata

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBatchAnswerBytes checks that a batch holds at most MaxBatchAnswerBytes of
// answers: the request whose answer passes them is answered 400, alone, and the
// ones before it keep theirs.
func TestBatchAnswerBytes(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("x", 40)))
	})
	bt := &Batch{Handler: h, Root: "/api/", Limits: Limits{MaxBatchAnswerBytes: 100}}
	body := `{"requests":[{"id":"1","method":"GET","url":"a"},{"id":"2","method":"GET","url":"b"},{"id":"3","method":"GET","url":"c"}]}`
	req := httptest.NewRequest("POST", "/api/$batch", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	bt.ServeHTTP(rec, req)
	got := rec.Body.String()
	if rec.Code != 200 || strings.Count(got, `"status":200`) != 2 || !strings.Contains(got, `"id":"3","status":400`) ||
		!strings.Contains(got, "at most 100 bytes") {
		t.Fatalf("got %d %s", rec.Code, got)
	}
}
