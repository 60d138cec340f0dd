package main

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"quartet/graphql"
)

// The surfaces a request is counted under.
const (
	surfaceREST    = "rest"
	surfaceGraphQL = "graphql"
	surfaceOData   = "odata"
	surfaceGRPC    = "grpc"
	surfaceOther   = "other" // /healthz, /metrics, /debug/pprof/ and unknown paths
)

// Route labels for requests no registered pattern matched: bounded, unlike the paths.
const (
	routeOData     = "/api/* (OData)"
	routeUnmatched = "unmatched"
	routeOverflow  = "other" // past maxRouteSeries
)

// maxRouteSeries caps the routes one protocol counts. Routes are the registered
// patterns and gRPC methods, a few dozen, and routeUnmatched for the rest; the cap
// only guarantees that a mistake cannot grow memory or a scrape without limit.
const maxRouteSeries = 256

// latencyBuckets are the upper bounds, in seconds, of the request duration
// histogram: from a cached read (under a millisecond) to a long stream.
var latencyBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// serviceMetrics counts what the service does, for /metrics. Recording costs a map
// look-up and a few atomic adds; everything is formatted only when scraped.
type serviceMetrics struct {
	http, grpc                 routeTable
	httpInFlight, grpcInFlight atomic.Int64 // requests and calls being served

	// grpcMethods are the gRPC server's methods, set before it serves: a call to any
	// other counts as routeUnmatched, so that names a client makes up take no series.
	// Nil (in tests of the table alone): every method is its own route.
	grpcMethods map[string]bool
}

// routeTable holds the series of one protocol, by route.
type routeTable struct {
	routes sync.Map     // route key (string) -> *routeSeries
	count  atomic.Int64 // entries in routes, for maxRouteSeries
	mu     sync.Mutex   // serialises adding a route
}

// routeSeries are one route's counts: answers by status code, and durations.
type routeSeries struct {
	surface, route string
	codes          [600]atomic.Uint64 // by HTTP status or gRPC code; 0 counts codes out of range
	latency        histogram
}

// histogram counts observations into latencyBuckets (not cumulative: the exposition
// adds them up) and keeps their sum.
type histogram struct {
	counts   [len(latencyBuckets) + 1]atomic.Uint64 // the last is +Inf
	sumNanos atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	i, _ := slices.BinarySearch(latencyBuckets[:], d.Seconds()) // first bound >= d
	h.counts[i].Add(1)
	h.sumNanos.Add(int64(d))
}

// series returns the series for key, adding it with label (surface, route) on first
// use; once the table is full, new routes share one overflow series.
func (t *routeTable) series(key string, label func() (surface, route string)) *routeSeries {
	if s, ok := t.routes.Load(key); ok {
		return s.(*routeSeries)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.routes.Load(key); ok {
		return s.(*routeSeries)
	}
	surface, route := label()
	if t.count.Load() >= maxRouteSeries {
		key, route = "\x00overflow:"+surface, routeOverflow
		if s, ok := t.routes.Load(key); ok {
			return s.(*routeSeries)
		}
	}
	s := &routeSeries{surface: surface, route: route}
	t.routes.Store(key, s)
	t.count.Add(1)
	return s
}

func (s *routeSeries) record(code int, d time.Duration) {
	if code < 0 || code >= len(s.codes) {
		code = 0
	}
	s.codes[code].Add(1)
	s.latency.observe(d)
}

// recordHTTP counts an answered HTTP request. pattern is the ServeMux pattern that
// matched ("" or "/" for the catch-all), which keeps the route label bounded.
func (m *serviceMetrics) recordHTTP(r *http.Request, status int, d time.Duration) {
	key := r.Pattern
	if key == "" || key == "/" {
		key = routeUnmatched
		if isODataPath(r.URL.Path) {
			key = routeOData
		}
	}
	m.http.series(key, func() (string, string) { return httpSurface(key), key }).record(status, d)
}

// httpSurface names the surface a route belongs to.
func httpSurface(route string) string {
	_, path, _ := strings.Cut(route, " ")
	switch {
	case route == routeOData:
		return surfaceOData
	case route == routeUnmatched:
		return surfaceOther
	case strings.HasPrefix(path, "/graphql"):
		return surfaceGraphQL
	case strings.HasPrefix(path, "/api/users"):
		return surfaceREST
	case isODataPath(path):
		return surfaceOData
	case strings.HasPrefix(path, "/api/"):
		return surfaceREST
	}
	return surfaceOther
}

// recordGRPC counts a finished gRPC call of method (its full name).
func (m *serviceMetrics) recordGRPC(method string, code codes.Code, d time.Duration) {
	if m.grpcMethods != nil && !m.grpcMethods[method] {
		method = routeUnmatched
	}
	m.grpc.series(method, func() (string, string) { return surfaceGRPC, method }).record(int(code), d)
}

// gauges are the levels read at scrape time rather than counted.
type gauges struct {
	store      *Store
	websockets *graphql.WebSocketHandler // nil: none
}

// metricsContentType is the Prometheus text exposition format, version 0.0.4.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// handler answers GET /metrics with the counts and the levels of g.
func (m *serviceMetrics) handler(g gauges) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", metricsContentType)
		w.Write(m.appendText(nil, g))
	}
}

// appendText appends every metric in the Prometheus text format: a HELP and a TYPE
// line per family, then its samples, sorted so that successive scrapes read alike.
func (m *serviceMetrics) appendText(b []byte, g gauges) []byte {
	var series []*routeSeries
	for _, t := range []*routeTable{&m.http, &m.grpc} {
		t.routes.Range(func(_, v any) bool { series = append(series, v.(*routeSeries)); return true })
	}
	slices.SortFunc(series, func(a, b *routeSeries) int {
		return cmp.Or(strings.Compare(a.surface, b.surface), strings.Compare(a.route, b.route))
	})

	b = appendFamily(b, "quartet_requests_total", "counter", "Requests answered, by surface, route (pattern or gRPC method) and status code (HTTP status or gRPC code name).")
	for _, s := range series {
		for code := range s.codes {
			n := s.codes[code].Load()
			if n == 0 {
				continue
			}
			b = appendSample(b, "quartet_requests_total", n2f(n), "surface", s.surface, "route", s.route, "code", codeLabel(s.surface, code))
		}
	}

	b = appendFamily(b, "quartet_request_duration_seconds", "histogram", "Time to answer a request (for a WebSocket or a gRPC stream: its whole life), by surface and route.")
	for _, s := range series {
		var cumulative uint64
		for i := range s.latency.counts {
			cumulative += s.latency.counts[i].Load()
			le := "+Inf"
			if i < len(latencyBuckets) {
				le = strconv.FormatFloat(latencyBuckets[i], 'g', -1, 64)
			}
			b = appendSample(b, "quartet_request_duration_seconds_bucket", n2f(cumulative), "surface", s.surface, "route", s.route, "le", le)
		}
		b = appendSample(b, "quartet_request_duration_seconds_sum", time.Duration(s.latency.sumNanos.Load()).Seconds(), "surface", s.surface, "route", s.route)
		b = appendSample(b, "quartet_request_duration_seconds_count", n2f(cumulative), "surface", s.surface, "route", s.route)
	}

	b = appendFamily(b, "quartet_requests_in_flight", "gauge", "Requests being answered now, by protocol (HTTP includes open WebSockets).")
	b = appendSample(b, "quartet_requests_in_flight", float64(m.grpcInFlight.Load()), "protocol", "grpc")
	b = appendSample(b, "quartet_requests_in_flight", float64(m.httpInFlight.Load()), "protocol", "http")

	if g.websockets != nil {
		sockets, operations := g.websockets.Counts()
		b = appendFamily(b, "quartet_websocket_connections", "gauge", "GraphQL WebSockets open.")
		b = appendSample(b, "quartet_websocket_connections", float64(sockets))
		b = appendFamily(b, "quartet_websocket_subscriptions", "gauge", "GraphQL WebSocket operations (subscriptions, in the main) active.")
		b = appendSample(b, "quartet_websocket_subscriptions", float64(operations))
	}

	if g.store != nil {
		st := g.store.Stats()
		b = appendFamily(b, "quartet_store_records", "gauge", "Records in the store, by table.")
		for _, t := range []struct {
			name string
			n    int
		}{{"comments", st.Comments}, {"orders", st.Orders}, {"posts", st.Posts}, {"products", st.Products}, {"users", st.Users}} {
			b = appendSample(b, "quartet_store_records", float64(t.n), "table", t.name)
		}
		if st.Durable {
			b = appendFamily(b, "quartet_journal_writes_total", "counter", "Changes written to the journal.")
			b = appendSample(b, "quartet_journal_writes_total", float64(st.JournalWrites))
			b = appendFamily(b, "quartet_journal_fsyncs_total", "counter", "Journal fsyncs, one per group-committed batch: writes/fsyncs is the mean batch size.")
			b = appendSample(b, "quartet_journal_fsyncs_total", float64(st.JournalFsyncs))
		}
	}
	return b
}

// codeLabel is the code label's value: the gRPC code's name, or the HTTP status.
func codeLabel(surface string, code int) string {
	switch {
	case code == 0 && surface != surfaceGRPC:
		return "other"
	case surface == surfaceGRPC:
		return codes.Code(code).String()
	}
	return strconv.Itoa(code)
}

func n2f(n uint64) float64 { return float64(n) }

// appendFamily appends the HELP and TYPE lines that introduce a metric family.
func appendFamily(b []byte, name, typ, help string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// appendSample appends one sample line; labels are name, value pairs.
func appendSample(b []byte, name string, v float64, labels ...string) []byte {
	b = append(b, name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, labels[i]...)
			b = append(b, `="`...)
			b = appendEscaped(b, labels[i+1], true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	switch {
	case math.IsInf(v, 1):
		b = append(b, "+Inf"...)
	case math.IsInf(v, -1):
		b = append(b, "-Inf"...)
	case math.IsNaN(v):
		b = append(b, "NaN"...)
	default:
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}

// appendEscaped escapes s as the text format requires: a backslash and a newline in
// HELP text, and a double quote too in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
