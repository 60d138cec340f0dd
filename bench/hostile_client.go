package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hostile check's clients: the legitimate one and the HTTP attackers. The
// legitimate client uses net/http, as a client of the service would; at its low
// rate its own CPU matters little. The attackers use the harness's lean client
// (attackHTTP says why).

// tally counts the requests of one attack kind; it is safe for concurrent use.
type tally struct {
	mu       sync.Mutex
	sent     int
	outcomes map[string]int  // e.g. "400", "200 COST_LIMIT_EXCEEDED", "timeout"
	lat      []time.Duration // of the answered requests, sorted once the kind is over
	bytes    []int64         // answer sizes of the answered requests, sorted likewise
	failures int             // requests without an answer: timeouts, broken connections
	firstErr error
	gaveUp   bool // the kind stopped early: too many requests went unanswered
}

// answered records a request the service answered, whatever the answer.
func (t *tally) answered(outcome string, lat time.Duration, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count(outcome)
	t.lat = append(t.lat, lat)
	t.bytes = append(t.bytes, n)
}

// failed records a request the service did not answer. A request cut short
// because the kind was stopped (budget, guard) is not the request's failure: the
// kind's is recorded instead.
func (t *tally) failed(ctx context.Context, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ctx.Err() != nil {
		t.count("stopped")
		return
	}
	outcome := "error"
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		outcome = "timeout"
	}
	t.count(outcome)
	t.failures++
	if t.firstErr == nil {
		// net/http names the URL, which for some attacks is 50 KB long.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %.60s...: %w", ue.Op, ue.URL, ue.Err)
		}
		t.firstErr = err
	}
}

func (t *tally) giveUp() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gaveUp = true
}

// unanswered is the number of failed requests so far.
func (t *tally) unanswered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failures
}

func (t *tally) count(outcome string) {
	if t.outcomes == nil {
		t.outcomes = map[string]int{}
	}
	t.outcomes[outcome]++
}

// sorted sorts the latencies and sizes, once no request is in flight.
func (t *tally) sorted() {
	slices.Sort(t.lat)
	slices.Sort(t.bytes)
}

// outcomeList is the outcomes with their counts, most frequent first.
func (t *tally) outcomeList() string {
	keys := slices.Collect(maps.Keys(t.outcomes))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(t.outcomes[b], t.outcomes[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, t.outcomes[k])
	}
	return strings.Join(parts, ", ")
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// hostileRequest is one HTTP request of an attack.
type hostileRequest struct {
	method, path string // path with the query
	body         []byte
	contentType  string
}

// render is req on the wire, for the server at host (host:port), as the
// harness's own client sends it (renderRequest).
func (req hostileRequest) render(host string) []byte {
	hr := httpRequest{method: req.method, path: req.path, body: req.body}
	if req.contentType != "" {
		hr.header = http.Header{"Content-Type": {req.contentType}}
	}
	return renderRequest(host, hr).whole
}

// errorCode finds the first error code in an answer's beginning: GraphQL's
// extensions.code or OData's error.code, so that the outcomes tell a cost refusal
// from a validation error.
var errorCode = regexp.MustCompile(`"code"\s*:\s*"([A-Za-z_]+)"`)

// outcomePrefix is how much of an answer is kept to find its error code.
const outcomePrefix = 4096

// fetch sends req and reads the whole answer, keeping only its beginning. It returns
// the outcome (the status, and the first error code in the answer when there is
// one) and the answer's size.
func fetch(ctx context.Context, client *http.Client, base string, req hostileRequest) (string, int64, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	r, err := http.NewRequestWithContext(ctx, req.method, base+req.path, body)
	if err != nil {
		return "", 0, err
	}
	if req.contentType != "" {
		r.Header.Set("Content-Type", req.contentType)
	}
	resp, err := client.Do(r)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	head := make([]byte, outcomePrefix)
	n, err := io.ReadFull(resp.Body, head)
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, resp.Body)
		n += int(rest)
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return "", int64(n), err
	}
	return outcomeOf(resp.StatusCode, head[:min(n, outcomePrefix)]), int64(n), nil
}

// outcomeOf is an answer's status and the first error code in its body's
// beginning.
func outcomeOf(status int, body []byte) string {
	outcome := strconv.Itoa(status)
	if m := errorCode.FindSubmatch(body[:min(len(body), outcomePrefix)]); m != nil {
		outcome += " " + string(m[1])
	}
	return outcome
}

// newClient is an HTTP client for conns concurrent requests, each bounded by
// timeout. Compression is off so that answer sizes are the service's own.
func newClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, DisableCompression: true},
	}
}

// healthz makes one call that costs the service nothing, and ignores its answer.
func healthz(ctx context.Context, addr string) {
	c := newClient(1, 5*time.Second)
	defer c.CloseIdleConnections()
	fetch(ctx, c, "http://"+addr, hostileRequest{method: "GET", path: "/healthz"})
}

// legitResult is what the legitimate client saw.
type legitResult struct {
	lat      []time.Duration   // of the successful calls, sorted
	perCall  [][]time.Duration // lat by call of legitCalls, each sorted
	errors   int               // failed calls and unexpected statuses
	firstErr error
}

func (l legitResult) percentile(p float64) time.Duration { return percentile(l.lat, p) }

func (l legitResult) merge(o legitResult) legitResult {
	m := legitResult{lat: slices.Concat(l.lat, o.lat), errors: l.errors + o.errors, firstErr: l.firstErr}
	if m.firstErr == nil {
		m.firstErr = o.firstErr
	}
	slices.Sort(m.lat)
	for i := range max(len(l.perCall), len(o.perCall)) {
		var a, b []time.Duration
		if i < len(l.perCall) {
			a = l.perCall[i]
		}
		if i < len(o.perCall) {
			b = o.perCall[i]
		}
		c := slices.Concat(a, b)
		slices.Sort(c)
		m.perCall = append(m.perCall, c)
	}
	return m
}

// summary is l's p50 and p99, by call too, and its counts, for the log.
func (l legitResult) summary() string {
	return fmt.Sprintf("p50 %s, p99 %s (%s), %d calls, %d errors", fmtDur(l.percentile(50)), fmtDur(l.percentile(99)), l.byCall(), len(l.lat), l.errors)
}

// legitCallNames name legitCalls, in their order, for the report.
var legitCallNames = []string{"GET user", "POST user", "GraphQL", "OData"}

// byCall gives the p99 of each legitimate call, the calls' tail told apart.
func (l legitResult) byCall() string {
	var parts []string
	for i, lat := range l.perCall {
		name := strconv.Itoa(i)
		if i < len(legitCallNames) {
			name = legitCallNames[i]
		}
		parts = append(parts, fmt.Sprintf("%s %s", name, fmtDur(percentile(lat, 99))))
	}
	return strings.Join(parts, ", ")
}

// legitCalls are the legitimate client's four calls, each with the status it
// expects; id is a random user id, name a label no other call of the check has
// used.
var legitCalls = []func(id int, name string) (hostileRequest, int){
	func(id int, _ string) (hostileRequest, int) {
		return hostileRequest{method: "GET", path: "/api/users/" + strconv.Itoa(id)}, http.StatusOK
	},
	func(_ int, name string) (hostileRequest, int) {
		body := fmt.Sprintf(`{"name":"Legit %s","email":"legit%s@example.com"}`, name, name)
		return hostileRequest{method: "POST", path: "/api/users", body: []byte(body), contentType: "application/json"}, http.StatusCreated
	},
	func(id int, _ string) (hostileRequest, int) {
		body := fmt.Sprintf(`{"query":"{ user(id: %d) { name posts { title } } }"}`, id)
		return hostileRequest{method: "POST", path: "/graphql", body: []byte(body), contentType: "application/json"}, http.StatusOK
	},
	func(int, string) (hostileRequest, int) {
		return hostileRequest{method: "GET", path: "/api/products?$top=10"}, http.StatusOK
	},
}

// startLegit starts the legitimate client: one worker per call of legitCalls, each
// at a quarter of rate calls per second. The rate is fixed rather than as fast as
// the service answers, so that the client's own load is the same with and without
// the attack and its latencies measure the service. A call slower than its
// interval delays the worker's next (no correction for coordinated omission: the
// p99 is of the calls made). The returned function stops the client and returns
// its calls; calls cut short by the stop are not counted. The users it creates are
// labelled "<run>.<worker>.<n>", so that no two runs of one check collide.
func startLegit(ctx context.Context, addr string, users, rate int, timeout time.Duration, run int) func() legitResult {
	ctx, cancel := context.WithCancel(ctx)
	client := newClient(len(legitCalls), timeout)
	base := "http://" + addr
	interval := time.Duration(len(legitCalls)) * time.Second / time.Duration(rate)
	results := make([]legitResult, len(legitCalls))
	var wg sync.WaitGroup
	for w, call := range legitCalls {
		wg.Go(func() {
			res := &results[w]
			rng := rand.New(rand.NewPCG(uint64(w)+1, 42))
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for n := 1; ; n++ {
				req, want := call(1+rng.IntN(users), fmt.Sprintf("%d.%d.%d", run, w, n))
				t0 := time.Now()
				outcome, _, err := fetch(ctx, client, base, req)
				el := time.Since(t0)
				switch {
				case ctx.Err() != nil:
					return
				case err == nil && outcome == strconv.Itoa(want):
					res.lat = append(res.lat, el)
				default:
					res.errors++
					if res.firstErr == nil {
						res.firstErr = cmp.Or(err, fmt.Errorf("status %s", outcome))
						res.firstErr = fmt.Errorf("%s %s: %w", req.method, req.path, res.firstErr)
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return func() legitResult {
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		perCall := make([][]time.Duration, len(results))
		all := legitResult{}
		for i, r := range results {
			perCall[i] = r.lat
			all.errors += r.errors
			all.firstErr = cmp.Or(all.firstErr, r.firstErr)
		}
		all.setCalls(perCall)
		return all
	}
}

// setCalls sets l's latencies from those of each call of legitCalls, sorted.
func (l *legitResult) setCalls(perCall [][]time.Duration) {
	for _, lat := range perCall {
		slices.Sort(lat)
	}
	l.perCall, l.lat = perCall, slices.Concat(perCall...)
	slices.Sort(l.lat)
}

// attackHTTP sends n requests, built by req from their number k, with attackers
// in flight at once, until all are sent or ctx ends. Once attackers requests
// have gone unanswered the service is taken to hang, and the kind stops: the
// rest would only wait out their timeouts, on CPUs other people share. The
// attackers speak HTTP/1.1 through the harness's own client (http1.go), one
// connection each: net/http's client spent as much CPU on a 50 KB URL as the
// service spent refusing it, CPU taken from the service and the legitimate client
// on this machine and not from them by an attacker elsewhere.
func attackHTTP(ctx context.Context, from *net.Dialer, addr string, n, attackers int, timeout time.Duration, req func(k int) hostileRequest) *kindResult {
	k := &kindResult{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	local, _ := from.LocalAddr.(*net.TCPAddr)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range attackers {
		wg.Go(func() {
			cn := &h1Conn{addr: addr, from: local, limit: timeout}
			defer cn.close()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if k.unanswered() >= attackers {
					k.giveUp()
					cancel()
					return
				}
				wire := req(i).render(addr)
				k.mu.Lock()
				k.sent++
				k.mu.Unlock()
				t0 := time.Now()
				status, body, err := cn.roundTrip(ctx, wire, true)
				if err != nil {
					k.failed(ctx, err)
					continue
				}
				k.answered(outcomeOf(status, body), time.Since(t0), int64(len(body)))
			}
		})
	}
	wg.Wait()
	k.sorted()
	return k
}

// The legitimate client runs in a process of its own ("bench legit"), as a client
// elsewhere would. In the harness's process its calls would wait in the same
// scheduler as the attackers' goroutines (thousands of WebSocket frames a second to
// read, large documents to send), a delay that is the harness's own and that no
// service could shorten (bench/README.md, "Hostile load").

// legitReport is what "bench legit" writes on its standard output when it stops.
type legitReport struct {
	PerCall    [][]time.Duration `json:"perCall"` // by call of legitCalls
	Errors     int               `json:"errors"`
	FirstError string            `json:"firstError,omitempty"`
}

// runLegit is the "legit" subcommand: the legitimate client runs until its
// standard input ends, then writes its calls to standard output.
func runLegit(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench legit", flag.ContinueOnError)
	addr := fs.String("addr", "", "the service's HTTP `address`")
	users := fs.Int("users", 1, "users in the service's dataset")
	rate := fs.Int("rate", 100, "calls per second")
	timeout := fs.Duration("timeout", 10*time.Second, "client timeout of each call")
	run := fs.Int("run", 0, "this run's number, which the names of the users it creates start with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stop := startLegit(context.Background(), *addr, *users, *rate, *timeout, *run)
	io.Copy(io.Discard, stdin)
	res := stop()
	rep := legitReport{PerCall: res.perCall, Errors: res.errors}
	if res.firstErr != nil {
		rep.FirstError = res.firstErr.Error()
	}
	return json.NewEncoder(stdout).Encode(rep)
}

// startLegitProcess starts self (this program) as the legitimate client; the
// function it returns stops the client and gives its calls. A client that could not
// start or report is one failed call.
func startLegitProcess(ctx context.Context, self, addr string, users, rate int, timeout time.Duration, run int) func() legitResult {
	failed := func(err error) func() legitResult {
		return func() legitResult { return legitResult{errors: 1, firstErr: fmt.Errorf("legitimate client: %w", err)} }
	}
	cmd := exec.CommandContext(ctx, self, "legit", "-addr", addr, "-users", strconv.Itoa(users),
		"-rate", strconv.Itoa(rate), "-timeout", timeout.String(), "-run", strconv.Itoa(run))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return failed(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		return failed(err)
	}
	return func() legitResult {
		stdin.Close()
		err := cmd.Wait()
		var rep legitReport
		if err == nil {
			err = json.Unmarshal(out.Bytes(), &rep)
		}
		if err != nil {
			return failed(err)()
		}
		res := legitResult{errors: rep.Errors}
		if rep.FirstError != "" {
			res.firstErr = errors.New(rep.FirstError)
		}
		res.setCalls(rep.PerCall)
		return res
	}
}
