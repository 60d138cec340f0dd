// Package metrics counts the requests a service answers and writes the counts, with
// levels read when scraped, in the Prometheus text format 0.0.4. It guarantees:
//
//   - Counting a request costs a map look-up and a few atomic adds; nothing is
//     formatted until a scrape.
//   - The series stay bounded: a Table counts at most maxRouteSeries routes, later
//     ones sharing route "other" per surface; with Known set, a route not in it
//     counts as Unmatched.
//   - Successive scrapes read alike: each family once with its HELP and TYPE, series
//     sorted by surface and route, codes ascending, in-flight by protocol, then the
//     caller's gauges, then the Go runtime's and the process's series as
//     Prometheus's Go client names them (runtime.go); label values and help text
//     escaped as the format asks.
package metrics

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Unmatched is the route of the requests no route matched.
const Unmatched = "unmatched"

const (
	overflowRoute  = "other" // the route of the series past maxRouteSeries
	maxRouteSeries = 256     // routes are a few dozen: the cap only bounds a mistake
	contentType    = "text/plain; version=0.0.4; charset=utf-8"
)

// latencyBuckets are the duration histogram's upper bounds, in seconds.
var latencyBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Set is the tables one scrape reports.
type Set struct {
	Help Help // set before the first scrape

	mu     sync.Mutex
	tables []*Table // sorted by protocol
}

// Help is the HELP text of the request families.
type Help struct {
	Requests string // quartet_requests_total
	Duration string // quartet_request_duration_seconds
	InFlight string // quartet_requests_in_flight
}

// Table returns a new table of s counting the requests of protocol. surface names
// a route's surface, asked once a route; codeName labels a code, 0 (out of range)
// included; nil labels it by its number, 0 as "other".
func (s *Set) Table(protocol string, surface func(route string) string, codeName func(code int) string) *Table {
	t := &Table{protocol: protocol, surface: surface, codeName: codeName}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables = append(s.tables, t)
	slices.SortFunc(s.tables, func(a, b *Table) int { return strings.Compare(a.protocol, b.protocol) })
	return t
}

// Table counts the requests of one protocol, by route; the zero value counts too,
// reported by no Set.
type Table struct {
	// Known, set before the first request, are the routes there are: any other
	// counts as Unmatched, so names a client makes up take no series.
	Known map[string]bool

	protocol string
	surface  func(route string) string
	codeName func(code int) string
	inFlight atomic.Int64 // requests started and not done

	routes sync.Map     // route key (string) -> *series
	count  atomic.Int64 // entries in routes, for maxRouteSeries
	mu     sync.Mutex   // serialises adding a route
}

// series are one route's counts: answers by code, and durations.
type series struct {
	surface, route string
	codeName       func(int) string                       // the table's
	codes          [600]atomic.Uint64                     // by code (an HTTP status, say); 0 counts codes out of range
	latency        [len(latencyBuckets) + 1]atomic.Uint64 // by bucket, not cumulative; the last is +Inf
	sumNanos       atomic.Int64                           // of the durations
}

// Start counts a request as in flight until its Done.
func (t *Table) Start() { t.inFlight.Add(1) }

// Done counts a request Start counted as answered: with code, on route, after d.
func (t *Table) Done(route string, code int, d time.Duration) {
	t.inFlight.Add(-1)
	if t.Known != nil && !t.Known[route] {
		route = Unmatched
	}
	s := t.series(route)
	if code < 0 || code >= len(s.codes) {
		code = 0
	}
	s.codes[code].Add(1)
	i, _ := slices.BinarySearch(latencyBuckets[:], d.Seconds()) // first bound >= d
	s.latency[i].Add(1)
	s.sumNanos.Add(int64(d))
}

// series returns route's series, adding it on first use, or once the table is
// full the surface's overflow series.
func (t *Table) series(route string) *series {
	if s, ok := t.routes.Load(route); ok {
		return s.(*series)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.routes.Load(route); ok {
		return s.(*series)
	}
	var surface string
	if t.surface != nil {
		surface = t.surface(route)
	}
	key := route
	if t.count.Load() >= maxRouteSeries {
		key, route = "\x00overflow:"+surface, overflowRoute
		if s, ok := t.routes.Load(key); ok {
			return s.(*series)
		}
	}
	s := &series{surface: surface, route: route, codeName: t.codeName}
	t.routes.Store(key, s)
	t.count.Add(1)
	return s
}

func (s *series) codeLabel(code int) string {
	switch {
	case s.codeName != nil:
		return s.codeName(code)
	case code == 0:
		return "other"
	}
	return strconv.Itoa(code)
}

// Text is a scrape being written, for the gauges a Handler's caller adds.
type Text struct{ b []byte }

// Handler answers a scrape with the tables' counts, then what gauges (may be nil)
// adds: the levels read at scrape time.
func (s *Set) Handler(gauges func(*Text)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(s.appendText(nil, gauges))
	}
}

// appendText appends every family, its samples sorted.
func (s *Set) appendText(b []byte, gauges func(*Text)) []byte {
	s.mu.Lock()
	tables := slices.Clone(s.tables)
	s.mu.Unlock()
	var all []*series
	for _, t := range tables {
		t.routes.Range(func(_, v any) bool { all = append(all, v.(*series)); return true })
	}
	slices.SortFunc(all, func(a, b *series) int {
		return cmp.Or(strings.Compare(a.surface, b.surface), strings.Compare(a.route, b.route))
	})

	text := &Text{b}
	text.Family("quartet_requests_total", "counter", s.Help.Requests)
	for _, sr := range all {
		for code := range sr.codes {
			if n := sr.codes[code].Load(); n != 0 {
				text.Sample("quartet_requests_total", float64(n), "surface", sr.surface, "route", sr.route, "code", sr.codeLabel(code))
			}
		}
	}

	text.Family("quartet_request_duration_seconds", "histogram", s.Help.Duration)
	for _, sr := range all {
		var cumulative uint64
		for i := range sr.latency {
			cumulative += sr.latency[i].Load()
			le := "+Inf"
			if i < len(latencyBuckets) {
				le = strconv.FormatFloat(latencyBuckets[i], 'g', -1, 64)
			}
			text.Sample("quartet_request_duration_seconds_bucket", float64(cumulative), "surface", sr.surface, "route", sr.route, "le", le)
		}
		text.Sample("quartet_request_duration_seconds_sum", time.Duration(sr.sumNanos.Load()).Seconds(), "surface", sr.surface, "route", sr.route)
		text.Sample("quartet_request_duration_seconds_count", float64(cumulative), "surface", sr.surface, "route", sr.route)
	}

	text.Family("quartet_requests_in_flight", "gauge", s.Help.InFlight)
	for _, t := range tables {
		text.Sample("quartet_requests_in_flight", float64(t.inFlight.Load()), "protocol", t.protocol)
	}
	if gauges != nil {
		gauges(text)
	}
	text.appendRuntime()
	text.appendProcess()
	return text.b
}

// Family starts a metric family: its HELP and TYPE (counter, gauge, summary) lines.
func (t *Text) Family(name, typ, help string) {
	t.b = append(t.b, "# HELP "+name+" "...)
	t.b = append(t.b, helpEscaper.Replace(help)...)
	t.b = append(t.b, "\n# TYPE "+name+" "+typ+"\n"...)
}

// Sample adds a sample of the family last started; labels are name, value pairs.
func (t *Text) Sample(name string, v float64, labels ...string) {
	b := append(t.b, name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(b, labels[i]...), `="`...)
			b = append(append(b, labelEscaper.Replace(labels[i+1])...), '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, v, 'g', -1, 64) // +Inf, -Inf and NaN as the format spells them
	t.b = append(b, '\n')
}

// The escapes of help text and label values, as the format asks.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)
