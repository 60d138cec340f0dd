package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"quartet/internal/admission"
	"quartet/internal/testkit"
	"quartet/userpb"
)

// holdEverySlot takes every slot of a's queue as a client of its own and returns
// the function that gives them back.
func holdEverySlot(t *testing.T, a *app) func() {
	t.Helper()
	q := a.door.Queue
	var releases []func()
	for range a.cfg.admission.WorkSlots {
		r, err := q.Acquire(t.Context(), fmt.Sprint("holder-", len(releases)))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			for _, r := range releases {
				r()
			}
		})
	}
	t.Cleanup(release)
	return release
}

// queueWaiting holds, for testkit.Eventually, once n pieces of work wait for a slot.
func queueWaiting(q *admission.Queue, n int) func() error {
	return func() error {
		if got := q.Stats().Waiting; got != n {
			return fmt.Errorf("%d waiting, want %d", got, n)
		}
		return nil
	}
}

// TestHTTPWaitsForASlot: with every slot taken, a request waits, unanswered, until one
// is given back; past -client-waiting a client's requests get 429 at once, in the
// format of the surface they were meant for.
func TestHTTPWaitsForASlot(t *testing.T) {
	cfg := testConfig()
	cfg.admission.ClientWaiting = 1
	a, _ := startApp(t, cfg)
	release := holdEverySlot(t, a)
	base := "http://" + a.httpAddr
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/api/users/1")
		if err != nil {
			t.Error(err)
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	testkit.Eventually(t, queueWaiting(a.door.Queue, 1))
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/users/2", "", `"status":429`},
		{"GET", "/api/products", "", `"code":"TooManyRequests"`},
		{"GET", "/api/Products(1)", "", `"code":"TooManyRequests"`}, // no pattern: the catch-all's OData
		{"GET", "/api/$metadata", "", `"code":"TooManyRequests"`},
		{"GET", "/healthz", "", `"status":429`},
		{"POST", "/graphql", `{"query":"{ user(id: 1) { name } }"}`, `"code":"TOO_MANY_REQUESTS"`},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
			!strings.Contains(string(body), tc.want) || !strings.Contains(string(body), "too many requests waiting from 127.0.0.1: at most 1 may wait; try again shortly") {
			t.Errorf("%s %s past the waiting places: %d, Retry-After %q, %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	select {
	case status := <-answered:
		t.Fatalf("answered %d while every slot was held", status)
	default:
	}
	release()
	if status := <-answered; status != http.StatusOK {
		t.Errorf("after the slots came back: %d", status)
	}
}

// TestWaitingBodiesAreBounded queues 200 bodies of 1 MiB from one client behind held
// slots: the bodies read ahead stay within the client's bound (two bodies), the rest
// are refused with 429, and what was read ahead is answered once a slot is free. One
// body or two are read ahead whole: a claim that finds the bound filled by others'
// partial reads, refused later, is refused all the same.
func TestWaitingBodiesAreBounded(t *testing.T) {
	cfg := testConfig()
	a, logs := startApp(t, cfg)
	release := holdEverySlot(t, a)
	body := append(append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), maxBodyBytes-len(`{"name":"","email":"x@example.com"}`))...), `","email":"x@example.com"}`...)
	if len(body) != maxBodyBytes {
		t.Fatalf("body of %d bytes", len(body))
	}
	const n = 200
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := http.Post("http://"+a.httpAddr+"/api/users", "application/json", bytes.NewReader(body))
			if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				// Answered 429 and closed while the client still sent its body: the
				// log below holds the 429.
				statuses <- http.StatusTooManyRequests
				return
			}
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	refused := 0
	countRefusals := func() {
		for {
			select {
			case status := <-statuses:
				if status != http.StatusTooManyRequests {
					t.Fatalf("while the slots were held: %d", status)
				}
				refused++
			default:
				return
			}
		}
	}
	testkit.Eventually(t, func() error { // every request refused, or read ahead and waiting
		countRefusals()
		if held := bodyBytes(a); held > a.cfg.admission.ClientBodyBytes {
			t.Fatalf("bodies read ahead: %d bytes by the one client", held)
		}
		if waiting := a.door.Queue.Stats().Waiting; refused+waiting != n {
			return fmt.Errorf("%d refused, %d waiting, of %d", refused, waiting, n)
		}
		return nil
	})
	waiting := n - refused
	if held := bodyBytes(a); waiting < 1 || waiting > 2 || held < int64(waiting)*maxBodyBytes || held > a.cfg.admission.ClientBodyBytes {
		t.Errorf("%d whole bodies wait, holding %d bytes; want one or two, and at most %d bytes", waiting, held, a.cfg.admission.ClientBodyBytes)
	}
	release()
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusBadRequest { // a 1 MiB name breaks the rules, once read
			t.Errorf("a body read ahead was answered %d", status)
		}
	}
	if held := bodyBytes(a); held != 0 {
		t.Errorf("after the answers: %d bytes still counted", held)
	}
	if got := strings.Count(logs.String(), "path=/api/users status=429 "); got != refused {
		t.Errorf("%d refusals logged, want %d", got, refused)
	}
}

// TestTransferEncodingClosesTheConnection: a request with Transfer-Encoding, with or
// without a Content-Length a proxy might have read instead, and any HTTP/1.0 request
// are served by Transfer-Encoding's framing and their connection closed after the
// answer, so nothing after the body can pass for a second request. rawHTTP reads
// until the server closes.
func TestTransferEncodingClosesTheConnection(t *testing.T) {
	a, _ := startApp(t, testConfig())
	chunked := func(email string) string {
		create := `{"name":"Chunk","email":"` + email + `"}`
		return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(create), create)
	}
	smuggled := "GET /api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	for name, req := range map[string]string{
		"chunked": "POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("chunk@example.com"),
		"chunked and Content-Length": "POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunked("both@example.com") + smuggled,
		"HTTP/1.0 keep-alive": "GET /api/users/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + smuggled,
	} {
		resp := rawHTTP(t, a.httpAddr, req)
		if !strings.Contains(resp, "Connection: close") || strings.Count(resp, "HTTP/1.") != 1 {
			t.Errorf("%s: want one answer and the connection closed:\n%s", name, resp)
		}
		if !regexp.MustCompile(`^HTTP/1\.[01] 20[01] `).MatchString(resp) {
			t.Errorf("%s: not served:\n%.200s", name, resp)
		}
	}
}

// TestTrustedProxies: a request from a trusted proxy counts as the client the proxy
// names in the header the operator chose, in the queue and in the log; the other
// header, which the proxy passes on as the client wrote it, is never read, and from
// anyone else neither is.
func TestTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		trusted, header string
		sent            http.Header // by the client and its proxy
		want            string
	}{
		{"", "X-Forwarded-For", http.Header{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9"}}, "127.0.0.1"},
		{"127.0.0.0/8", "X-Forwarded-For", http.Header{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9"}}, "203.0.113.9"},
		// The spoof: the client writes Forwarded itself; nginx appends its peer to
		// X-Forwarded-For only.
		{"127.0.0.0/8", "X-Forwarded-For", http.Header{"Forwarded": {"for=6.6.6.6"}, "X-Forwarded-For": {"10.0.0.9"}}, "10.0.0.9"},
		{"127.0.0.0/8", "Forwarded", http.Header{"Forwarded": {"for=6.6.6.6, for=192.0.2.60"}, "X-Forwarded-For": {"6.6.6.7"}}, "192.0.2.60"},
	} {
		cfg := testConfig()
		cfg.admission.ClientWaiting = 0
		cfg.proxies, _ = admission.ParseProxies(tc.trusted, tc.header)
		a, logs := startApp(t, cfg)
		release := holdEverySlot(t, a)
		req, _ := http.NewRequest("GET", "http://"+a.httpAddr+"/api/users/1", nil)
		maps.Copy(req.Header, tc.sent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "waiting from "+tc.want+":") {
			t.Errorf("-trusted-proxies %q, %s %v: %d %s, want a 429 naming %s", tc.trusted, tc.header, tc.sent, resp.StatusCode, body, tc.want)
		}
		release()
		if !regexp.MustCompile(`path=/api/users/1 status=429 .*remote=` + regexp.QuoteMeta(tc.want) + `:`).MatchString(logs.String()) {
			t.Errorf("-trusted-proxies %q, %s %v: the log does not name %s:\n%s", tc.trusted, tc.header, tc.sent, tc.want, logs)
		}
	}
}

// TestGaveUpWhileWaiting: a request whose client leaves while it waits for a slot
// is logged and counted as 499, neither a success nor a refusal.
func TestGaveUpWhileWaiting(t *testing.T) {
	a, logs := startApp(t, testConfig())
	release := holdEverySlot(t, a)
	c, err := net.Dial("tcp", a.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n")
	testkit.Eventually(t, queueWaiting(a.door.Queue, 1))
	c.Close()
	testkit.Eventually(t, queueWaiting(a.door.Queue, 0))
	testkit.Eventually(t, func() error {
		if !strings.Contains(logs.String(), "path=/api/users/1 status=499 bytes=0 ") {
			return errors.New("no log line of the request given up")
		}
		return nil
	})
	release()
	resp, err := http.Get("http://" + a.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `quartet_requests_total{surface="rest",route="GET /api/users/{id}",code="499"} 1`) {
		t.Errorf("no 499 counted for the request given up:\n%s", metrics)
	}
}

// TestGRPCWaitsForASlot: a gRPC call waits for a slot like an HTTP request, and past
// -client-waiting gets ResourceExhausted at once; from a trusted proxy it counts as
// the client the proxy names.
func TestGRPCWaitsForASlot(t *testing.T) {
	cfg := testConfig()
	cfg.admission.ClientWaiting = 0
	cfg.proxies, _ = admission.ParseProxies("127.0.0.1", admission.HeaderXForwardedFor)
	a, _ := startApp(t, cfg)
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	release := holdEverySlot(t, a)
	_, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.ResourceExhausted, "too many requests waiting from 127.0.0.1: at most 0 may wait; try again shortly")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-forwarded-for", "203.0.113.9")
	_, err = c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.ResourceExhausted, "too many requests waiting from 203.0.113.9: at most 0 may wait; try again shortly")
	release()
	if _, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("with a slot free: %v", err)
	}

	cfg.admission.ClientWaiting = 1
	a, _ = startApp(t, cfg)
	c = userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	release = holdEverySlot(t, a)
	done := make(chan error, 1)
	go func() {
		_, err := c.GetUser(context.Background(), &userpb.GetUserRequest{Id: 1})
		done <- err
	}()
	testkit.Eventually(t, queueWaiting(a.door.Queue, 1))
	release()
	if err := <-done; err != nil {
		t.Errorf("a call that waited for its slot: %v", err)
	}
}

// bodyBytes is what a's door holds of request bodies read ahead.
func bodyBytes(a *app) int64 {
	_, held, _ := a.door.Stats()
	return held
}
