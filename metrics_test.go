package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"quartet/userpb"
)

// sample is one parsed sample line of the text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition parses the Prometheus text format strictly enough to catch what a
// scraper rejects: every sample belongs to a family introduced by HELP and TYPE (a
// histogram's by its _bucket, _sum and _count), each family once, label values
// escaped, values numbers.
func parseExposition(t *testing.T, text string) []sample {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("the exposition does not end with a newline")
	}
	types := map[string]string{}
	var help, current string
	var out []sample
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) { t.Fatalf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...)) }
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if _, seen := types[name]; seen || help == name {
				fail("family repeated")
			}
			help = name
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			if name != help {
				fail("TYPE without its HELP")
			}
			switch typ {
			case "counter", "gauge", "histogram":
			default:
				fail("type %q", typ)
			}
			types[name], current = typ, name
			continue
		}
		s := parseSample(t, line)
		base := s.name
		if types[current] == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(s.name, suffix); ok {
					base = b
					break
				}
			}
		}
		if base != current {
			fail("sample outside its family %q", current)
		}
		out = append(out, s)
	}
	return out
}

func parseSample(t *testing.T, line string) sample {
	t.Helper()
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		t.Fatalf("sample %q: no name", line)
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			name, rest, ok := strings.Cut(line, `="`)
			if !ok {
				t.Fatalf("label in %q", line)
			}
			var value strings.Builder
			j := 0
			for ; rest[j] != '"'; j++ {
				if rest[j] == '\\' {
					j++
					switch rest[j] {
					case '\\', '"':
						value.WriteByte(rest[j])
					case 'n':
						value.WriteByte('\n')
					default:
						t.Fatalf("escape \\%c in %q", rest[j], rest)
					}
					continue
				}
				if rest[j] == '\n' {
					t.Fatalf("raw newline in label value")
				}
				value.WriteByte(rest[j])
			}
			s.labels[name] = value.String()
			line = strings.TrimPrefix(rest[j+1:], ",")
		}
		line = line[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(line, " "), 64)
	if err != nil || !strings.HasPrefix(line, " ") {
		t.Fatalf("value %q: %v", line, err)
	}
	s.value = v
	return s
}

// find returns the value of the sample with name and exactly these labels, 0 if none.
func find(samples []sample, name string, labels ...string) float64 {
next:
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return s.value
	}
	return 0
}

func TestMetricsLabelEscaping(t *testing.T) {
	b := appendFamily(nil, "x_total", "counter", "help with \\ and\nnewline")
	b = appendSample(b, "x_total", 3, "route", "a\"b\\c\nd", "code", "200")
	samples := parseExposition(t, string(b))
	if len(samples) != 1 || samples[0].labels["route"] != "a\"b\\c\nd" || samples[0].value != 3 {
		t.Errorf("%q parsed as %+v", b, samples)
	}
	if !strings.HasPrefix(string(b), "# HELP x_total help with \\\\ and\\nnewline\n") {
		t.Errorf("HELP not escaped: %q", b)
	}
}

func scrape(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != metricsContentType {
		t.Fatalf("GET /metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return parseExposition(t, string(body))
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
		if got := find(after, name, labels...) - find(before, name, labels...); got != want {
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
	moved("quartet_requests_total", 1, "surface", "other", "route", routeUnmatched, "code", "404")
	moved("quartet_requests_total", 1, "surface", "graphql", "route", "POST /graphql", "code", "200")
	moved("quartet_requests_total", 1, "surface", "grpc", "route", "/user.UserService/GetUser", "code", "OK")
	moved("quartet_requests_total", 1, "surface", "grpc", "route", "/user.UserService/GetUser", "code", "NotFound")
	moved("quartet_requests_total", 2, "surface", "grpc", "route", routeUnmatched, "code", "Unimplemented")
	for _, s := range after {
		if strings.Contains(s.labels["route"], "999") || strings.Contains(s.labels["route"], "abc") {
			t.Errorf("a raw path became a label: %+v", s)
		}
	}
	if n := find(after, "quartet_store_records", "table", "users"); n < 1 {
		t.Errorf("users: %v", n)
	}
	// The scrape itself is in flight while it is written.
	if n := find(after, "quartet_requests_in_flight", "protocol", "http"); n != 1 {
		t.Errorf("in flight: %v", n)
	}
	if _, ok := findSample(after, "quartet_websocket_subscriptions"); !ok {
		t.Error("no quartet_websocket_subscriptions")
	}
}

func findSample(samples []sample, name string) (sample, bool) {
	for _, s := range samples {
		if s.name == name {
			return s, true
		}
	}
	return sample{}, false
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
		if d := find(after, name) - find(before, name); d != 1 {
			t.Errorf("%s moved by %v, want 1", name, d)
		}
	}
	if d := find(after, "quartet_store_records", "table", "users") - find(before, "quartet_store_records", "table", "users"); d != 1 {
		t.Errorf("users moved by %v", d)
	}
}

// TestMetricsRouteBound checks that routes past maxRouteSeries share one series.
func TestMetricsRouteBound(t *testing.T) {
	var m serviceMetrics
	for i := range maxRouteSeries + 50 {
		m.recordGRPC(fmt.Sprintf("/svc/M%d", i), 0, 1)
	}
	if n := m.grpc.count.Load(); n != maxRouteSeries+1 {
		t.Errorf("%d series, want %d and the overflow", n, maxRouteSeries)
	}
	samples := parseExposition(t, string(m.appendText(nil, gauges{})))
	if got := find(samples, "quartet_requests_total", "surface", "grpc", "route", routeOverflow, "code", "OK"); got != 50 {
		t.Errorf("overflow counted %v, want 50", got)
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

// BenchmarkMetricsRecordHTTP measures what counting costs each HTTP request.
func BenchmarkMetricsRecordHTTP(b *testing.B) {
	var m serviceMetrics
	r, _ := http.NewRequest("GET", "/api/users/7", nil)
	r.Pattern = "GET /api/users/{id}"
	b.ReportAllocs()
	for b.Loop() {
		m.recordHTTP(r, 200, 1500)
	}
}

// TestHistogramBuckets checks that a bucket's bound is inclusive ("le") and that the
// exposition's buckets are cumulative, ending with +Inf equal to the count.
func TestHistogramBuckets(t *testing.T) {
	var m serviceMetrics
	for _, d := range []time.Duration{time.Millisecond, time.Millisecond + 1, 20 * time.Second} {
		m.recordGRPC("/svc/M", 0, d)
	}
	samples := parseExposition(t, string(m.appendText(nil, gauges{})))
	bucket := func(le string) float64 {
		return find(samples, "quartet_request_duration_seconds_bucket", "surface", "grpc", "route", "/svc/M", "le", le)
	}
	if bucket("0.0005") != 0 || bucket("0.001") != 1 || bucket("0.0025") != 2 || bucket("10") != 2 || bucket("+Inf") != 3 {
		t.Errorf("buckets 0.0005..+Inf: %v %v %v %v %v", bucket("0.0005"), bucket("0.001"), bucket("0.0025"), bucket("10"), bucket("+Inf"))
	}
	if got := find(samples, "quartet_request_duration_seconds_sum", "surface", "grpc", "route", "/svc/M"); got < 20.002 || got > 20.0021 {
		t.Errorf("sum %v", got)
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
	if n := srv.metrics.httpInFlight.Load(); n != 0 {
		t.Errorf("in flight: %d", n)
	}
	samples := parseExposition(t, string(srv.metrics.appendText(nil, gauges{})))
	if n := find(samples, "quartet_requests_total", "surface", "other", "route", "GET /abort", "code", "200"); n != 1 {
		t.Errorf("counted %v", n)
	}
}
