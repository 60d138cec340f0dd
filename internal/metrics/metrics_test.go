package metrics

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

func TestMetricsLabelEscaping(t *testing.T) {
	var text Text
	text.Family("x_total", "counter", "help with \\ and\nnewline")
	text.Sample("x_total", 3, "route", "a\"b\\c\nd", "code", "200")
	b := text.b
	samples := testkit.ParseExposition(t, string(b))
	if len(samples) != 1 || samples[0].Labels["route"] != "a\"b\\c\nd" || samples[0].Value != 3 {
		t.Errorf("%q parsed as %+v", b, samples)
	}
	if !strings.HasPrefix(string(b), "# HELP x_total help with \\\\ and\\nnewline\n") {
		t.Errorf("HELP not escaped: %q", b)
	}
}

// grpcCodes names codes as a caller would name gRPC's.
func grpcCodes(code int) string { return [...]string{"OK", "Canceled", "Unknown"}[code] }

func grpcSurface(string) string { return "grpc" }

// TestMetricsRouteBound checks that routes past maxRouteSeries share one series.
func TestMetricsRouteBound(t *testing.T) {
	var m Set
	calls := m.Table("grpc", grpcSurface, grpcCodes)
	for i := range maxRouteSeries + 50 {
		calls.Start()
		calls.Done(fmt.Sprintf("/svc/M%d", i), 0, 1)
	}
	if n := calls.count.Load(); n != maxRouteSeries+1 {
		t.Errorf("%d series, want %d and the overflow", n, maxRouteSeries)
	}
	samples := testkit.ParseExposition(t, string(m.appendText(nil, nil)))
	if got := testkit.FindSample(samples, "quartet_requests_total", "surface", "grpc", "route", overflowRoute, "code", "OK"); got != 50 {
		t.Errorf("overflow counted %v, want 50", got)
	}
}

// TestKnownRoutes: with Known set, a route not in it counts as Unmatched, in one
// series however many names it comes under.
func TestKnownRoutes(t *testing.T) {
	var m Set
	calls := m.Table("grpc", grpcSurface, grpcCodes)
	calls.Known = map[string]bool{"/svc/M": true}
	for _, route := range []string{"/svc/M", "/svc/Nope", "/no.Such/Method"} {
		calls.Start()
		calls.Done(route, 2, time.Millisecond)
	}
	if n := calls.count.Load(); n != 2 {
		t.Errorf("%d series, want 2", n)
	}
	samples := testkit.ParseExposition(t, string(m.appendText(nil, nil)))
	if got := testkit.FindSample(samples, "quartet_requests_total", "surface", "grpc", "route", Unmatched, "code", "Unknown"); got != 2 {
		t.Errorf("unmatched counted %v, want 2", got)
	}
}

// BenchmarkMetricsRecordHTTP measures what counting costs each HTTP request.
func BenchmarkMetricsRecordHTTP(b *testing.B) {
	var m Set
	requests := m.Table("http", func(string) string { return "rest" }, nil)
	b.ReportAllocs()
	for b.Loop() {
		requests.Start()
		requests.Done("GET /api/users/{id}", 200, 1500)
	}
}

// TestHistogramBuckets checks that a bucket's bound is inclusive ("le") and that the
// exposition's buckets are cumulative, ending with +Inf equal to the count.
func TestHistogramBuckets(t *testing.T) {
	var m Set
	calls := m.Table("grpc", grpcSurface, grpcCodes)
	for _, d := range []time.Duration{time.Millisecond, time.Millisecond + 1, 20 * time.Second} {
		calls.Start()
		calls.Done("/svc/M", 0, d)
	}
	samples := testkit.ParseExposition(t, string(m.appendText(nil, nil)))
	bucket := func(le string) float64 {
		return testkit.FindSample(samples, "quartet_request_duration_seconds_bucket", "surface", "grpc", "route", "/svc/M", "le", le)
	}
	if bucket("0.0005") != 0 || bucket("0.001") != 1 || bucket("0.0025") != 2 || bucket("10") != 2 || bucket("+Inf") != 3 {
		t.Errorf("buckets 0.0005..+Inf: %v %v %v %v %v", bucket("0.0005"), bucket("0.001"), bucket("0.0025"), bucket("10"), bucket("+Inf"))
	}
	if got := testkit.FindSample(samples, "quartet_request_duration_seconds_sum", "surface", "grpc", "route", "/svc/M"); got < 20.002 || got > 20.0021 {
		t.Errorf("sum %v", got)
	}
}

// TestExposition checks a whole scrape, byte for byte: the families in their order,
// the series sorted by surface and route, codes named by the table, in-flight by
// protocol, then the caller's gauges; then come the runtime's (TestRuntimeSeries).
func TestExposition(t *testing.T) {
	m := Set{Help: Help{Requests: "Requests.", Duration: "Durations.", InFlight: "In flight."}}
	calls := m.Table("grpc", grpcSurface, grpcCodes)
	requests := m.Table("http", func(route string) string {
		if route == Unmatched {
			return "other"
		}
		return "rest"
	}, nil)
	requests.Start()
	requests.Done("GET /b", 404, 3*time.Second)
	requests.Start()
	requests.Done(Unmatched, 999, time.Millisecond)
	requests.Start()
	calls.Start()
	calls.Done("/svc/M", 1, 30*time.Second)
	w := httptest.NewRecorder()
	m.Handler(func(x *Text) {
		x.Family("x_level", "gauge", "A level.")
		x.Sample("x_level", 2.5, "table", "a")
	})(w, httptest.NewRequest("GET", "/metrics", nil))
	buckets := func(surface, route string, counts ...int) string {
		var b strings.Builder
		for i, le := range []string{"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
			fmt.Fprintf(&b, "quartet_request_duration_seconds_bucket{surface=%q,route=%q,le=%q} %d\n", surface, route, le, counts[i])
		}
		return b.String()
	}
	want := "# HELP quartet_requests_total Requests.\n# TYPE quartet_requests_total counter\n" +
		`quartet_requests_total{surface="grpc",route="/svc/M",code="Canceled"} 1` + "\n" +
		`quartet_requests_total{surface="other",route="unmatched",code="other"} 1` + "\n" +
		`quartet_requests_total{surface="rest",route="GET /b",code="404"} 1` + "\n" +
		"# HELP quartet_request_duration_seconds Durations.\n# TYPE quartet_request_duration_seconds histogram\n" +
		buckets("grpc", "/svc/M", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) +
		`quartet_request_duration_seconds_sum{surface="grpc",route="/svc/M"} 30` + "\n" +
		`quartet_request_duration_seconds_count{surface="grpc",route="/svc/M"} 1` + "\n" +
		buckets("other", "unmatched", 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1) +
		`quartet_request_duration_seconds_sum{surface="other",route="unmatched"} 0.001` + "\n" +
		`quartet_request_duration_seconds_count{surface="other",route="unmatched"} 1` + "\n" +
		buckets("rest", "GET /b", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1) +
		`quartet_request_duration_seconds_sum{surface="rest",route="GET /b"} 3` + "\n" +
		`quartet_request_duration_seconds_count{surface="rest",route="GET /b"} 1` + "\n" +
		"# HELP quartet_requests_in_flight In flight.\n# TYPE quartet_requests_in_flight gauge\n" +
		`quartet_requests_in_flight{protocol="grpc"} 0` + "\n" +
		`quartet_requests_in_flight{protocol="http"} 1` + "\n" +
		"# HELP x_level A level.\n# TYPE x_level gauge\n" +
		`x_level{table="a"} 2.5` + "\n"
	got, found := strings.CutPrefix(w.Body.String(), want)
	if !found {
		t.Errorf("exposition:\n%s\nwant first:\n%s\n%s", got, want, testkit.FirstDifference([]byte(got), []byte(want)))
	}
	if !strings.HasPrefix(got, "# HELP go_gc_duration_seconds ") {
		t.Errorf("after the caller's gauges, want the runtime's series; got %.100q", got)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	testkit.ParseExposition(t, w.Body.String())
}
