package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"quartet/internal/metrics"
	"quartet/internal/testkit"
	"quartet/userpb"
)

func scrape(t *testing.T, url string) []testkit.Sample {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return testkit.ParseExposition(t, string(body))
}

// TestMetrics serves requests on every surface and checks that /metrics counts them
// by surface, route pattern (never the raw path) and code, with their durations, and
// reports the store's sizes.
func TestMetrics(t *testing.T) {
	a, logs := startApp(t, testConfig())
	base := "http://" + a.httpAddr
	get := func(path string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	before := scrape(t, base)
	for range 3 {
		get("/api/users/1")
	}
	get("/api/users/999")
	get("/api/users/abc\"x")
	get("/api/products?$top=1")
	get("/no/such/path")
	resp, err := http.Post(base+"/graphql", "application/json", strings.NewReader(`{"query":"{ user(id: 1) { name } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn := dialGRPC(t, a.grpcAddr)
	c := userpb.NewUserServiceClient(conn)
	c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1})
	c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 999})
	// A method the server does not have: answered Unimplemented, logged with its name,
	// counted as unmatched (a made-up name takes no series).
	for _, method := range []string{"/user.UserService/Nope", "/no.Such/Method"} {
		err := conn.Invoke(t.Context(), method, &userpb.GetUserRequest{Id: 1}, &userpb.UserResponse{})
		if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "unknown method "+method) {
			t.Errorf("%s: %v, want Unimplemented", method, err)
		}
		if !strings.Contains(logs.String(), "msg=grpc method="+method+" code=Unimplemented") {
			t.Errorf("%s: no log line", method)
		}
	}
	after := scrape(t, base)

	moved := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := testkit.FindSample(after, name, labels...) - testkit.FindSample(before, name, labels...); got != want {
			t.Errorf("%s%q moved by %v, want %v", name, labels, got, want)
		}
	}
	user := []string{"surface", "rest", "route", "GET /api/users/{id}"}
	moved("quartet_requests_total", 3, append(user, "code", "200")...)
	moved("quartet_requests_total", 1, append(user, "code", "404")...)
	moved("quartet_requests_total", 1, append(user, "code", "400")...)
	moved("quartet_request_duration_seconds_count", 5, user...)
	moved("quartet_request_duration_seconds_bucket", 5, append(user, "le", "+Inf")...)
	moved("quartet_requests_total", 1, "surface", "odata", "route", routeOData, "code", "200")
	moved("quartet_requests_total", 1, "surface", "other", "route", metrics.Unmatched, "code", "404")
	moved("quartet_requests_total", 1, "surface", "graphql", "route", "POST /graphql", "code", "200")
	moved("quartet_requests_total", 1, "surface", "grpc", "route", "/user.UserService/GetUser", "code", "OK")
	moved("quartet_requests_total", 1, "surface", "grpc", "route", "/user.UserService/GetUser", "code", "NotFound")
	moved("quartet_requests_total", 2, "surface", "grpc", "route", metrics.Unmatched, "code", "Unimplemented")
	for _, s := range after {
		if strings.Contains(s.Labels["route"], "999") || strings.Contains(s.Labels["route"], "abc") {
			t.Errorf("a raw path became a label: %+v", s)
		}
	}
	if n := testkit.FindSample(after, "quartet_store_records", "table", "users"); n < 1 {
		t.Errorf("users: %v", n)
	}
	// The scrape itself is in flight while it is written.
	if n := testkit.FindSample(after, "quartet_requests_in_flight", "protocol", "http"); n != 1 {
		t.Errorf("in flight: %v", n)
	}
	if _, ok := findSample(after, "quartet_websocket_subscriptions"); !ok {
		t.Error("no quartet_websocket_subscriptions")
	}
}

func findSample(samples []testkit.Sample, name string) (testkit.Sample, bool) {
	for _, s := range samples {
		if s.Name == name {
			return s, true
		}
	}
	return testkit.Sample{}, false
}

// TestMetricsJournal checks that a durable store reports its journal's writes and
// fsyncs.
func TestMetricsJournal(t *testing.T) {
	cfg := testConfig()
	cfg.dataDir = t.TempDir()
	cfg.snapshotBytes = defaultSnapshotBytes
	a, _ := startApp(t, cfg)
	base := "http://" + a.httpAddr
	before := scrape(t, base)
	resp, err := http.Post(base+"/api/users", "application/json", strings.NewReader(`{"name":"Metric Mo","email":"mo@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	after := scrape(t, base)
	for _, name := range []string{"quartet_journal_writes_total", "quartet_journal_fsyncs_total"} {
		if d := testkit.FindSample(after, name) - testkit.FindSample(before, name); d != 1 {
			t.Errorf("%s moved by %v, want 1", name, d)
		}
	}
	if d := testkit.FindSample(after, "quartet_store_records", "table", "users") - testkit.FindSample(before, "quartet_store_records", "table", "users"); d != 1 {
		t.Errorf("users moved by %v", d)
	}
}

// TestProfiling checks where /debug/pprof/ is served: by default in development
// without authentication, with authentication on only when -pprof on asks for it, never
// in production unless asked, never the command line (which may hold -jwt-secret), and
// only under a loopback Host, so a page that rebinds its own name to 127.0.0.1 reads
// nothing.
func TestProfiling(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		env, pprof, secret string
		want               bool
	}{
		{"development", "auto", "", true},
		{"development", "auto", secret, false},
		{"development", "on", secret, true},
		{"development", "off", "", false},
		{"production", "auto", "", false},
		{"production", "on", secret, true},
	} {
		t.Run(fmt.Sprintf("%s,pprof=%s,auth=%v", tc.env, tc.pprof, tc.secret != ""), func(t *testing.T) {
			cfg := testConfig()
			cfg.env, cfg.pprof, cfg.jwt.secret = tc.env, tc.pprof, tc.secret
			cfg.httpAddr = "127.0.0.1:0"
			a, _ := startApp(t, cfg)
			get := func(path, host string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest("GET", "http://"+a.httpAddr+path, nil)
				if host != "" {
					req.Host = host
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
				status, body := get(path, "")
				switch {
				case tc.want && status != http.StatusOK:
					t.Errorf("GET %s: %d, want 200", path, status)
				case !tc.want && status != http.StatusNotFound:
					t.Errorf("GET %s: %d, want 404", path, status)
				case tc.want && strings.HasSuffix(path, "debug=1") && !strings.Contains(body, "goroutine profile"):
					t.Errorf("goroutine profile: %.100s", body)
				}
			}
			if status, body := get("/debug/pprof/cmdline", ""); status != http.StatusNotFound || strings.Contains(body, "quartet") || strings.Contains(body, os.Args[0]) {
				t.Errorf("GET /debug/pprof/cmdline: %d %.200q, want 404 without the command line", status, body)
			}
			if !tc.want {
				return
			}
			_, port, _ := net.SplitHostPort(a.httpAddr)
			for _, host := range []string{"localhost", "LOCALHOST:" + port, "127.0.0.1:" + port, "127.9.9.9", "[::1]:" + port} {
				if status, _ := get("/debug/pprof/", host); status != http.StatusOK {
					t.Errorf("Host %s: %d, want 200", host, status)
				}
			}
			for _, host := range []string{"attacker.example", "attacker.example:" + port, "localhost.attacker.example", "10.0.0.1", "0.0.0.0:" + port} {
				for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/symbol"} {
					if status, _ := get(path, host); status != http.StatusForbidden {
						t.Errorf("Host %s: GET %s: %d, want 403", host, path, status)
					}
				}
			}
		})
	}
}

// TestMetricsAbortedAnswer checks that an answer cut off with http.ErrAbortHandler
// (a stream failing half-way) is counted and leaves the in-flight gauge as it was.
func TestMetricsAbortedAnswer(t *testing.T) {
	srv := NewServer(newTestStore(t), slog.New(slog.DiscardHandler), serverOptions{})
	srv.mux.HandleFunc("GET /abort", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("part"))
		panic(http.ErrAbortHandler)
	})
	func() {
		defer func() { recover() }()
		srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/abort", nil))
	}()
	w := httptest.NewRecorder()
	srv.metrics.Handler(nil)(w, httptest.NewRequest("GET", "/metrics", nil))
	samples := testkit.ParseExposition(t, w.Body.String())
	if n := testkit.FindSample(samples, "quartet_requests_in_flight", "protocol", "http"); n != 0 {
		t.Errorf("in flight: %v", n)
	}
	if n := testkit.FindSample(samples, "quartet_requests_total", "surface", "other", "route", "GET /abort", "code", "200"); n != 1 {
		t.Errorf("counted %v", n)
	}
}
