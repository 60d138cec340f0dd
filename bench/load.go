package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Result is what one measured run of a load produced.
type Result struct {
	OK        int             // calls that succeeded
	Errors    int             // calls that failed (transport error or unexpected status)
	FirstErr  error           // the first failure, for the report
	Elapsed   time.Duration   // wall time of the measured phase
	ServerCPU time.Duration   // CPU time the server used in the measured phase, when known
	ClientCPU time.Duration   // CPU time the load client used in the measured phase, when known
	Latencies []time.Duration // of the successful calls, sorted ascending
}

// Throughput is successful calls per second.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of the latencies:
// the smallest latency that at least p percent of the calls did not exceed.
func (r Result) Percentile(p float64) time.Duration { return percentile(r.Latencies, p) }

func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	k := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(k, 1), n)-1]
}

// callFunc makes one call; worker identifies the caller and rng is its own source,
// so a worker's sequence of calls is the same in every run.
type callFunc func(ctx context.Context, worker int, rng *rand.Rand) error

// Load is a closed-loop load: Workers callers each making one call after another.
type Load struct {
	Workers  int
	Warmup   time.Duration // calls in this first phase are made but not counted
	Duration time.Duration // the measured phase
	Call     callFunc
	// Measuring, when set, is called just before the measured phase; the function it
	// returns is called just after, and gives Result.ServerCPU and ClientCPU.
	Measuring func() func() (server, client time.Duration)
}

// Run runs the warm-up and then the measured phase. Each phase stops issuing calls at
// its deadline and waits for the calls in flight.
func (l Load) Run(ctx context.Context) Result {
	rngs := make([]*rand.Rand, l.Workers)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(uint64(w)+1, 0x9e3779b97f4a7c15))
	}
	if l.Warmup > 0 {
		l.phase(ctx, rngs, l.Warmup, false)
	}
	var done func() (time.Duration, time.Duration)
	if l.Measuring != nil {
		done = l.Measuring()
	}
	res := l.phase(ctx, rngs, l.Duration, true)
	if done != nil {
		res.ServerCPU, res.ClientCPU = done()
	}
	return res
}

// CPUPerCall is the server's CPU time per successful call, 0 when unknown.
func (r Result) CPUPerCall() time.Duration {
	if r.OK == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.OK)
}

func (l Load) phase(ctx context.Context, rngs []*rand.Rand, d time.Duration, record bool) Result {
	type tally struct {
		lat      []time.Duration
		errs     int
		firstErr error
	}
	tallies := make([]tally, l.Workers)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range l.Workers {
		wg.Go(func() {
			t := &tallies[w]
			if record {
				t.lat = make([]time.Duration, 0, 4096)
			}
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				err := l.Call(ctx, w, rngs[w])
				el := time.Since(t0)
				switch {
				case err != nil:
					t.errs++
					if t.firstErr == nil {
						t.firstErr = err
					}
					// A server that refuses at once must not turn the loop into a spin.
					time.Sleep(time.Millisecond)
				case record:
					t.lat = append(t.lat, el)
				}
			}
		})
	}
	wg.Wait()
	res := Result{Elapsed: time.Since(start)}
	for _, t := range tallies {
		res.OK += len(t.lat)
		res.Errors += t.errs
		if res.FirstErr == nil {
			res.FirstErr = t.firstErr
		}
		res.Latencies = append(res.Latencies, t.lat...)
	}
	slices.Sort(res.Latencies)
	return res
}

// newHTTPClient is an HTTP/1.1 keep-alive client with at most conns connections,
// all kept idle between calls.
func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// httpRequest describes one HTTP call of a scenario.
type httpRequest struct {
	method string
	path   string // with the query
	body   []byte
	header http.Header
}

// httpCall returns a callFunc that sends the request next(rng) makes to base and
// reads the whole answer, which must have status 200.
func httpCall(client *http.Client, base string, next func(rng *rand.Rand) httpRequest) callFunc {
	return func(ctx context.Context, _ int, rng *rand.Rand) error {
		_, err := doHTTP(ctx, client, base, next(rng), false)
		return err
	}
}

// doHTTP makes one call and, when keep is set, returns the body of a 200 answer;
// otherwise the body is read and dropped, as a client that only measures would.
func doHTTP(ctx context.Context, client *http.Client, base string, hr httpRequest, keep bool) ([]byte, error) {
	var body io.Reader
	if hr.body != nil {
		body = bytes.NewReader(hr.body)
	}
	req, err := http.NewRequestWithContext(ctx, hr.method, base+hr.path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hr.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	var b []byte
	if keep || resp.StatusCode != http.StatusOK {
		b, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s %s: status %d: %.200s", hr.method, hr.path, resp.StatusCode, b)
	}
	return b, nil
}
