package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// send makes one request to ts and returns the answer with its body read.
func send(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestETagIsTheHashOfTheAnswer(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	for _, path := range []string{"/api/users/1", "/api/users/1/orders/1"} {
		resp, body := send(t, "GET", ts.URL+path, "", nil)
		tag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || tag != entityTag([]byte(strings.TrimSuffix(body, "\n"))) {
			t.Errorf("GET %s: %d, ETag %q, want the hash of %q", path, resp.StatusCode, tag, body)
		}
	}
	resp, body := send(t, "POST", ts.URL+"/api/users", `{"name":"New","email":"new@example.com"}`, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 201 || resp.Header.Get("ETag") != entityTag([]byte(strings.TrimSuffix(body, "\n"))) {
		t.Errorf("POST: %d, ETag %q, want the hash of %q", resp.StatusCode, resp.Header.Get("ETag"), body)
	}
	u, _ := newTestStore(t).User(1)
	resp, _ = send(t, "GET", ts.URL+"/api/users/1", "", nil)
	if resp.Header.Get("ETag") != u.ETag() {
		t.Errorf("GET's ETag %q differs from the store's %q", resp.Header.Get("ETag"), u.ETag())
	}
}

func TestConditionalRequests(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	resp, _ := send(t, "GET", ts.URL+"/api/users/1", "", nil)
	tag := resp.Header.Get("ETag")
	resp, _ = send(t, "GET", ts.URL+"/api/users/1/orders/1", "", nil)
	orderTag := resp.Header.Get("ETag")
	const stale = `"00000000000000000000000000000000"`
	put := `{"name":"Alice Renamed","email":"alice@example.com"}`

	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{"GET If-Match current", "GET", "/api/users/1", "", map[string]string{"If-Match": tag}, 200},
		{"GET If-Match stale", "GET", "/api/users/1", "", map[string]string{"If-Match": stale}, 412},
		{"GET If-Match weak", "GET", "/api/users/1", "", map[string]string{"If-Match": "W/" + tag}, 412},
		{"GET If-Match stale, If-None-Match current", "GET", "/api/users/1", "", map[string]string{"If-Match": stale, "If-None-Match": tag}, 412},
		{"order GET If-Match stale", "GET", "/api/users/1/orders/1", "", map[string]string{"If-Match": stale}, 412},
		{"order GET If-Match *", "GET", "/api/users/1/orders/1", "", map[string]string{"If-Match": "*"}, 200},
		{"If-None-Match current", "GET", "/api/users/1", "", map[string]string{"If-None-Match": tag}, 304},
		{"If-None-Match in a list", "GET", "/api/users/1", "", map[string]string{"If-None-Match": stale + ", " + tag}, 304},
		{"If-None-Match weak form", "GET", "/api/users/1", "", map[string]string{"If-None-Match": "W/" + tag}, 304},
		{"If-None-Match *", "GET", "/api/users/1", "", map[string]string{"If-None-Match": "*"}, 304},
		{"If-None-Match stale", "GET", "/api/users/1", "", map[string]string{"If-None-Match": stale}, 200},
		{"order If-None-Match", "GET", "/api/users/1/orders/1", "", map[string]string{"If-None-Match": orderTag}, 304},
		{"order If-None-Match stale", "GET", "/api/users/1/orders/1", "", map[string]string{"If-None-Match": stale}, 200},
		{"PUT If-Match stale", "PUT", "/api/users/1", put, map[string]string{"If-Match": stale}, 412},
		{"PUT If-Match weak", "PUT", "/api/users/1", put, map[string]string{"If-Match": "W/" + tag}, 412},
		{"DELETE If-Match stale", "DELETE", "/api/users/1", "", map[string]string{"If-Match": stale}, 412},
		{"PUT If-Match unknown user", "PUT", "/api/users/99", put, map[string]string{"If-Match": tag}, 404},
		{"PATCH If-Match stale", "PATCH", "/api/users/1", `{"name":"P"}`, map[string]string{"If-Match": stale, "Content-Type": mergePatchType}, 412},
		{"PATCH If-Match weak", "PATCH", "/api/users/1", `{"name":"P"}`, map[string]string{"If-Match": "W/" + tag, "Content-Type": mergePatchType}, 412},
		{"PUT If-None-Match *", "PUT", "/api/users/1", put, map[string]string{"If-None-Match": "*"}, 412},
		{"PUT If-None-Match current", "PUT", "/api/users/1", put, map[string]string{"If-None-Match": stale + ", W/" + tag}, 412},
		{"PATCH If-None-Match current", "PATCH", "/api/users/1", `{"name":"P"}`, map[string]string{"If-None-Match": tag, "Content-Type": mergePatchType}, 412},
		{"DELETE If-None-Match *", "DELETE", "/api/users/1", "", map[string]string{"If-None-Match": "*"}, 412},
		{"PUT If-Match and If-None-Match current", "PUT", "/api/users/1", put, map[string]string{"If-Match": tag, "If-None-Match": tag}, 412},
		{"DELETE If-None-Match * unknown user", "DELETE", "/api/users/99", "", map[string]string{"If-None-Match": "*"}, 404},
		{"PUT If-Match current", "PUT", "/api/users/1", put, map[string]string{"If-Match": tag}, 200},
		{"PUT again with the old tag", "PUT", "/api/users/1", put, map[string]string{"If-Match": tag}, 412},
		{"old tag no longer 304", "GET", "/api/users/1", "", map[string]string{"If-None-Match": tag}, 200},
		{"PATCH If-Match *", "PATCH", "/api/users/3", `{"name":"P"}`, map[string]string{"If-Match": "*", "Content-Type": mergePatchType}, 200},
		{"DELETE If-Match *", "DELETE", "/api/users/2", "", map[string]string{"If-Match": "*"}, 204},
		{"PATCH If-None-Match stale", "PATCH", "/api/users/3", `{"name":"Q"}`, map[string]string{"If-None-Match": stale, "Content-Type": mergePatchType}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			for k, v := range c.header {
				h[k] = v
			}
			resp, body := send(t, c.method, ts.URL+c.path, c.body, h)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			switch c.status {
			case 304:
				if body != "" || resp.Header.Get("ETag") == "" {
					t.Errorf("304 with body %q, ETag %q", body, resp.Header.Get("ETag"))
				}
			case 412:
				if !strings.Contains(body, `"status":412`) || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("412 body %s", body)
				}
			}
		})
	}
	if u, _ := send(t, "GET", ts.URL+"/api/users/1", "", nil); u.Header.Get("ETag") == tag {
		t.Error("the ETag did not change with the record")
	}
}

// TestIfMatchIsAtomic: of writers racing with the same If-Match, exactly one wins,
// because the store checks the tag inside the write.
func TestIfMatchIsAtomic(t *testing.T) {
	store := newTestStore(t)
	u, _ := store.User(1)
	tag := u.ETag()
	const writers = 8
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			name := "Writer " + string(rune('A'+i))
			_, err := store.UpdateUser(1, UserPatch{Name: &name, Require: func(current *User) error {
				if current.ETag() != tag {
					return &Error{Kind: KindPrecondition, Message: "changed"}
				}
				return nil
			}})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		if err == nil {
			won++
		} else if asError(err).Kind != KindPrecondition {
			t.Errorf("unexpected error %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers won, want 1", won)
	}
}

// TestPatchHonoursIfMatch: a PATCH with the ETag a GET gave succeeds and answers the
// new ETag, which the next conditional PATCH must then name.
func TestPatchHonoursIfMatch(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	resp, _ := send(t, "GET", ts.URL+"/api/users/1", "", nil)
	tag := resp.Header.Get("ETag")
	h := map[string]string{"Content-Type": mergePatchType, "If-Match": tag}
	resp, body := send(t, "PATCH", ts.URL+"/api/users/1", `{"name":"Patched Once"}`, h)
	newTag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || newTag == "" || newTag == tag || newTag != entityTag([]byte(strings.TrimSuffix(body, "\n"))) {
		t.Fatalf("PATCH: %d, ETag %q (was %q): %s", resp.StatusCode, newTag, tag, body)
	}
	if resp, _ := send(t, "PATCH", ts.URL+"/api/users/1", `{"name":"Lost Update"}`, h); resp.StatusCode != 412 {
		t.Errorf("PATCH with the old ETag: %d, want 412", resp.StatusCode)
	}
	h["If-Match"] = newTag
	if resp, body := send(t, "PATCH", ts.URL+"/api/users/1", `{"name":"Patched Twice"}`, h); resp.StatusCode != 200 {
		t.Errorf("PATCH with the new ETag: %d, want 200: %s", resp.StatusCode, body)
	}
	if resp, _ := send(t, "PATCH", ts.URL+"/api/users/1", `{"name":"x"}`, map[string]string{"Content-Type": "application/json"}); resp.StatusCode != 415 || resp.Header.Get("Accept-Patch") != mergePatchType {
		t.Errorf("PATCH as application/json: %d, Accept-Patch %q", resp.StatusCode, resp.Header.Get("Accept-Patch"))
	}
}

// TestIfMatchComparedBeforeTheWriteLock checks that If-Match's tag is compared before
// the store's write lock is taken: under it, the check only asks whether the record
// it compared is still the current one. A record changed in place (which the store
// never does) shows which: a check that hashed again would see the change. When
// another write replaced the record in between, the tag is compared again.
func TestIfMatchComparedBeforeTheWriteLock(t *testing.T) {
	st := NewStore()
	u, err := st.CreateUser("Ann", "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(st, slog.New(slog.DiscardHandler), serverOptions{})
	r := httptest.NewRequest("PUT", "/api/users/1", nil)
	r.Header.Set("If-Match", u.ETag())
	check := srv.ifMatch(r, u.ID)
	original := User{ID: u.ID, Name: u.Name, Email: u.Email, CreatedAt: u.CreatedAt}
	u.Name = "Changed in place"
	if err := check(u); err != nil {
		t.Errorf("the record compared before the lock: %v", err)
	}
	if err := check(&original); err != nil {
		t.Errorf("a replacement whose tag the header names: %v", err)
	}
	replaced := User{ID: u.ID, Name: "Bob", Email: u.Email, CreatedAt: u.CreatedAt}
	if err := check(&replaced); asError(err).Kind != KindPrecondition {
		t.Errorf("a replacement whose tag the header does not name: %v, want a failed precondition", err)
	}
}

// TestRESTWritesRaceOnOneUser: writers race over HTTP on one user, each setting name
// and email together, with readers alongside: first PUTs all naming the first ETag in
// If-Match, then PATCHes naming none. Every answer a reader gets is one writer's pair
// (or the first one), never the name of one write and the e-mail of another; of the
// PUTs exactly one wins and the others are 412; every PATCH wins.
func TestRESTWritesRaceOnOneUser(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	resp, _ := send(t, "GET", ts.URL+"/api/users/1", "", nil)
	tag := resp.Header.Get("ETag")
	consistent := func(body string) bool {
		var u struct{ Name, Email string }
		if err := json.Unmarshal([]byte(body), &u); err != nil {
			return false
		}
		i, ok := strings.CutPrefix(u.Name, "Writer ")
		return u.Name == "Alice Johnson" && u.Email == "alice@example.com" || ok && u.Email == "w"+i+"@example.com"
	}
	race := func(method string, h map[string]string) map[int]int {
		const writers = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for i := range writers {
			wg.Go(func() {
				body := fmt.Sprintf(`{"name":"Writer %s%d","email":"w%s%d@example.com"}`, method, i, method, i)
				resp, got := send(t, method, ts.URL+"/api/users/1", body, h)
				if resp.StatusCode == 200 && !consistent(got) {
					t.Errorf("%s answered %s", method, got)
				}
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			})
			wg.Go(func() {
				if _, got := send(t, "GET", ts.URL+"/api/users/1", "", nil); !consistent(got) {
					t.Errorf("a reader saw %s", got)
				}
			})
		}
		wg.Wait()
		return codes
	}
	if codes := race("PUT", map[string]string{"Content-Type": "application/json", "If-Match": tag}); codes[200] != 1 || codes[412] != 7 {
		t.Errorf("PUTs naming one ETag: %v, want one 200 and seven 412", codes)
	}
	if codes := race("PATCH", map[string]string{"Content-Type": mergePatchType}); codes[200] != 8 {
		t.Errorf("PATCHes: %v, want eight 200", codes)
	}
}
