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

// FuzzBatch feeds arbitrary bodies to $batch in both formats. It must never panic,
// answer 200 only with a body of its own format, and pass each request it serves
// to the handler as a GET below the root.
func FuzzBatch(f *testing.F) {
	f.Add(`{"requests":[{"id":"1","method":"GET","url":"Products?$top=1"},{"id":"2","method":"POST","url":"/api/x"}]}`)
	f.Add(`{"requests":[{"id":"1","method":"get","url":"http://example.com/api/a","headers":{"Accept":"text/plain"}}]}`)
	f.Add("--b\r\nContent-Type: application/http\r\n\r\nGET Products HTTP/1.1\r\nAccept: x\r\n\r\n\r\n--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n--b--\r\n")
	f.Add("--b\r\nContent-Type: application/http\r\n\r\nGET  HTTP/1.1\r\n--b--")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/api/") {
			panic("batch passed on " + r.Method + " " + r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"value":[]}`))
	})
	bt := &Batch{Handler: h, Root: "/api/", Limits: Limits{MaxBatchRequests: 3, MaxBatchBytes: 4096, MaxBatchAnswerBytes: 64},
		Serves: func(p string) bool { return strings.HasPrefix(p, "/api/") }}
	f.Fuzz(func(t *testing.T, body string) {
		for _, ct := range []string{"application/json", "multipart/mixed; boundary=b"} {
			req := httptest.NewRequest("POST", "http://example.com/api/$batch", strings.NewReader(body))
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			bt.ServeHTTP(rec, req)
			got := rec.Header().Get("Content-Type")
			if rec.Code == http.StatusOK && !strings.HasPrefix(got, strings.Fields(ct)[0]) {
				t.Fatalf("%s: 200 as %s", ct, got)
			}
			if rec.Code != http.StatusOK && got != "application/json" {
				t.Fatalf("%s: %d as %s", ct, rec.Code, got)
			}
		}
	})
}
