package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestODataBatchAuth: each request of a $batch passes the same access check as if
// sent alone. With -auth-reads, a batch without a token gets 401 in each
// response (the service document, open to all, still 200); the batch's own
// Authorization header reaches its requests, and a request's own header overrides it.
func TestODataBatchAuth(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.authReads = true
	a, _ := startApp(t, cfg)
	token := "Bearer " + testToken(t, "")
	batch := func(authorization, requests string) []int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+a.httpAddr+"/api/$batch", strings.NewReader(`{"requests":`+requests+`}`))
		req.Header.Set("Content-Type", "application/json")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Responses []struct{ Status int } }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("batch: %d %v", resp.StatusCode, err)
		}
		var statuses []int
		for _, r := range out.Responses {
			statuses = append(statuses, r.Status)
		}
		return statuses
	}
	reads := `[{"id":"a","method":"GET","url":"Products?$top=1"},{"id":"b","method":"GET","url":"/api/"},{"id":"c","method":"GET","url":"Orders/$count"}]`
	for _, tt := range []struct {
		name, authorization, requests string
		want                          []int
	}{
		{"no token", "", reads, []int{401, 200, 401}},
		{"the batch's token", token, reads, []int{200, 200, 200}},
		{"a request's own token", "", `[{"id":"a","method":"GET","url":"Products","headers":{"Authorization":"` + token + `"}}]`, []int{200}},
		{"a request's bad token wins", token, `[{"id":"a","method":"GET","url":"Products","headers":{"Authorization":"Bearer x"}}]`, []int{401}},
	} {
		if got := batch(tt.authorization, tt.requests); !slices.Equal(got, tt.want) {
			t.Errorf("%s: statuses %v, want %v", tt.name, got, tt.want)
		}
	}
}
