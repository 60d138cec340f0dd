package main

import (
	"context"
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

func percentile(sorted []time.Duration, p float64) time.Duration { return nearestRank(sorted, p) }

// nearestRank is the nearest-rank p-th percentile of sorted values, the zero value
// when there are none.
func nearestRank[T any](sorted []T, p float64) T {
	n := len(sorted)
	if n == 0 {
		var zero T
		return zero
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

// httpRequest describes one HTTP call of a scenario.
type httpRequest struct {
	method string
	path   string // with the query
	// pathFor, when set, replaces path: it appends the path of one call, drawn with
	// rng (random ids), to dst, so that the load client renders each request into a
	// buffer it reuses and allocates nothing.
	pathFor func(dst []byte, rng *rand.Rand) []byte
	body    []byte
	header  http.Header
}

// fixed is the request with the path that pathFor draws first from a source seeded
// with seed, for the calls that are made once (the probe).
func (hr httpRequest) fixed(seed uint64) httpRequest {
	if hr.pathFor != nil {
		hr.path = string(hr.pathFor(nil, rand.New(rand.NewPCG(seed, seed))))
		hr.pathFor = nil
	}
	return hr
}
