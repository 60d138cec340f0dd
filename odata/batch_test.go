package odata

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"quartet/internal/jsonkeys"
	"quartet/internal/testkit"
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

// claimingRecorder is a ResponseWriter whose ClaimAnswer grants at most budget
// bytes, as the service's door does for a client's answers.
type claimingRecorder struct {
	*httptest.ResponseRecorder
	budget, claimed int64
}

func (c *claimingRecorder) ClaimAnswer(n int64) error {
	if n > c.budget {
		return errors.New("too many answer bytes waiting to be read from 192.0.2.1: at most 150 at once; try again shortly")
	}
	c.claimed = max(c.claimed, n)
	return nil
}

// TestBatchClaimsItsAnswers: a batch's answers, built whole before they are
// sent, claim their bytes (twice: the parts, then the whole) as they grow; a
// claim refused answers the batch 429 TooManyRequests, in either format.
func TestBatchClaimsItsAnswers(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("x", 40)))
	})
	bt := &Batch{Handler: h, Root: "/api/", Serves: func(string) bool { return true }}
	part := "--b\r\nContent-Type: application/http\r\n\r\nGET a HTTP/1.1\r\n\r\n\r\n"
	for _, tc := range []struct{ contentType, body string }{
		{"application/json", `{"requests":[{"id":"1","method":"GET","url":"a"},{"id":"2","method":"GET","url":"b"}]}`},
		{"multipart/mixed; boundary=b", part + part + "--b--\r\n"},
	} {
		for budget, want := range map[int64]int{200: http.StatusOK, 150: http.StatusTooManyRequests} {
			req := httptest.NewRequest("POST", "/api/$batch", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			rec := &claimingRecorder{ResponseRecorder: httptest.NewRecorder(), budget: budget}
			bt.ServeHTTP(rec, req)
			if rec.Code != want || want == http.StatusOK && rec.claimed != 160 ||
				want != http.StatusOK && (!strings.Contains(rec.Body.String(), `"code":"TooManyRequests"`) || rec.Header().Get("Retry-After") != "1") {
				t.Errorf("%s, budget %d: %d, claimed %d, %s; want %d", tc.contentType, budget, rec.Code, rec.claimed, rec.Body, want)
			}
		}
	}
}

// TestBatchJSONChecked: a JSON batch is checked as every request body is
// (package jsonkeys), before any of its requests runs.
func TestBatchJSONChecked(t *testing.T) {
	ran := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++ })
	bt := &Batch{Handler: h, Root: "/api/", Serves: func(string) bool { return true }}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for body, want := range map[string]string{
		// The batch, its requests and a request are three levels.
		`{"requests":[{"id":"1","method":"GET","url":"a","body":` + deep(61) + `}]}`:    "",
		`{"requests":[{"id":"1","method":"GET","url":"a","body":` + deep(62) + `}]}`:    "nested deeper than 64 levels at byte 116",
		`{"requests":[{"id":"1","method":"GET","url":"a","body":` + deep(20000) + `}]}`: "nested deeper than 64 levels at byte 116",
		`{"requests":[{"id":"1","method":"GET","url":"a\ud800"}]}`:                      `unpaired surrogate escape \\ud800 at byte 46`,
		`{"requests":[{"id":"1","method":"GET","url":"a\ud83d\ude00"}]}`:                "",
		`{"requests":[],"requests":[{"id":"1","method":"GET","url":"a"}]}`:              `duplicate key \"requests\"`,
		// Worded for the client, in JSON's terms, not in the service's Go types.
		`{"requests":{}}`: "requests must be an array, not object (byte 13)",
		`{"requests":[{"id":1,"method":"GET","url":"a"}]}`: "requests.id must be a string, not number (byte 20)",
		`{"requests":[1]}`: "requests must be an object, not number (byte 14)",
		`{"requests":[}`:   "malformed JSON at byte 14",
	} {
		ran = 0
		req := httptest.NewRequest("POST", "/api/$batch", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		bt.ServeHTTP(rec, req)
		switch {
		case want == "" && (rec.Code != 200 || ran != 1):
			t.Errorf("%.80s: %d, %d requests run; want 200 and 1\n%s", body, rec.Code, ran, rec.Body)
		case want != "" && (rec.Code != 400 || ran != 0 || !strings.Contains(rec.Body.String(), want)):
			t.Errorf("%.80s: %d, %d requests run, %s; want 400 saying %s", body, rec.Code, ran, rec.Body, want)
		}
	}
}

// FuzzBatch feeds arbitrary bodies to $batch in both formats. It must never panic,
// answer 200 only with a body of its own format, and pass each request it serves
// to the handler as a GET below the root; a JSON batch nested past
// jsonkeys.MaxDepth or with an unpaired surrogate escape (by testkit's references)
// is not answered 200.
func FuzzBatch(f *testing.F) {
	f.Add(`{"requests":[{"id":"1","method":"GET","url":"Products?$top=1"},{"id":"2","method":"POST","url":"/api/x"}]}`)
	f.Add(`{"requests":[{"id":"1","method":"get","url":"http://example.com/api/a","headers":{"Accept":"text/plain"}}]}`)
	f.Add("--b\r\nContent-Type: application/http\r\n\r\nGET Products HTTP/1.1\r\nAccept: x\r\n\r\n\r\n--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n--b--\r\n")
	f.Add("--b\r\nContent-Type: application/http\r\n\r\nGET  HTTP/1.1\r\n--b--")
	f.Add("--b\r\nContent-Type: application/http\r\n\r\nGET a HTTP/1.1\r\n\r\n--b\r\nBad\r\n\r\n")
	f.Add(`{"requests":[{"id":"1","method":"GET","url":"a"},{"id":"2","method":"PUT","url":"b","dependsOn":["1"]},{"id":"3","method":"GET","url":"c","dependsOn":["2","1"]}]}`)
	f.Add(`{"requests":[{"id":"1","method":"GET","url":"Products?$filter=name eq '\udc00'"}]}`)
	f.Add(`{"requests":[{"id":"1","method":"GET","url":"a","body":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}]}`)
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
			if ct == "application/json" && rec.Code == http.StatusOK && json.Valid([]byte(body)) &&
				(testkit.JSONDepth([]byte(body)) > jsonkeys.MaxDepth || testkit.HasLoneSurrogate([]byte(body))) {
				t.Fatalf("%.80q: answered 200", body)
			}
		}
	})
}

// TestBatchMultipartTooManyHeaders: a part with more header lines than package
// multipart reads is refused in the batch's terms, naming the part.
func TestBatchMultipartTooManyHeaders(t *testing.T) {
	bt := &Batch{Handler: http.NotFoundHandler(), Root: "/api/"}
	body := "--b\r\n" + strings.Repeat("A: b\r\n", 10001) + "\r\nGET a HTTP/1.1\r\n\r\n--b--\r\n"
	req := httptest.NewRequest("POST", "/api/$batch", strings.NewReader(body))
	req.Header.Set("Content-Type", "multipart/mixed; boundary=b")
	rec := httptest.NewRecorder()
	bt.ServeHTTP(rec, req)
	if want := `"message":"malformed multipart batch: part 1 has too many header lines"`; rec.Code != 400 || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("got %d %s, want 400 with %s", rec.Code, rec.Body, want)
	}
}
