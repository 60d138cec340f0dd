package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hostile check: a legitimate client's latency and the service's
// memory are measured alone, then again while attackers send the hostile requests
// of each kind below (bench/README "Hostile load"), one kind after another. The service passes when the attacks
// leave the legitimate client's p99 within a factor of its baseline and the
// service's RSS returns near its baseline, and when every hostile request was
// answered (a refusal is an answer; a timeout is not).
//
// The check measures whatever the service does: against a service without the
// bounds an attack may hold gigabytes or minutes of CPU, so each kind has a time
// budget and a memory ceiling. A kind that passes either, or leaves requests
// unanswered, has failed; the service is then restarted so that the next kind is
// measured on its own.

// hostileConfig is the hostile check's configuration, all of it flags.
type hostileConfig struct {
	quick        bool
	enforce      bool // exit non-zero when the verdict is FAIL
	data         GenConfig
	sizes        attackSizes
	requests     int           // hostile requests of each HTTP kind
	attackers    int           // concurrent hostile requests
	timeout      time.Duration // per request, hostile or legitimate
	budget       time.Duration // per kind
	baseline     time.Duration // the legitimate client alone
	control      time.Duration // the legitimate client beside busy loops, no attack
	legitRate    int           // legitimate calls per second
	settle       time.Duration // how long RSS may take to come back after the attack
	maxRSS       int64         // the guard's ceiling, bytes
	maxP99Ratio  float64
	maxRSSGrowth float64
	grpcStreams  int
	grpcParallel int
	grpcHold     time.Duration
	wsHold       time.Duration
	kinds        *regexp.Regexp
	attackerIP   string // the attackers' source address; the legitimate client's is the default
	serviceFlags []string
	repo         string
	bin          string // a built service; "" builds it from repo
	workDir      string
	keep         bool
	verbose      bool
}

// attackSizes are the dimensions of the hostile documents, as the check states them.
type attackSizes struct {
	overlapFields int // user(id:i){id} fields with the same response name
	nestedAliases int // aliases of the depth-8 users/posts/comments/author query
	operations    int // named operations in one document ...
	opFields      int // ... of this many fields each
	directives    int // unknown @foo directives on one field
	variables     int // unused variable definitions
	docBytes      int // size of each distinct, valid document
	orderbyKeys   int // $orderby=isActive repeated
	filterTerms   int // literals of $filter=id in (...)
	grpcUsers     int // users sent on one CreateUsers stream
	wsSockets     int // WebSockets from one client address ...
	wsSubs        int // ... with this many subscriptions each
}

// fullSizes are the sizes of the full check's attacks (bench/README, "Hostile load").
var fullSizes = attackSizes{
	overlapFields: 300, nestedAliases: 30, operations: 45, opFields: 1990, directives: 20_000,
	variables: 3000, docBytes: 16 << 10, orderbyKeys: 6000, filterTerms: 10_000,
	grpcUsers: 100_000, wsSockets: 500, wsSubs: 100,
}

// quickSizes are a tenth of fullSizes (the sockets fewer still), so that the
// quick mode exercises every code path in a few seconds even against a service
// whose cost is quadratic in them.
var quickSizes = attackSizes{
	overlapFields: 30, nestedAliases: 3, operations: 5, opFields: 199, directives: 2000,
	variables: 300, docBytes: 1600, orderbyKeys: 600, filterTerms: 1000,
	grpcUsers: 1000, wsSockets: 3, wsSubs: 5,
}

func parseHostileFlags(args []string, stdout io.Writer) (*hostileConfig, error) {
	c := &hostileConfig{data: GenConfig{Orders: 1000}}
	fs := flag.NewFlagSet("bench hostile", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.BoolVar(&c.quick, "quick", false, "tiny data, documents a tenth of the full size, 10 requests per kind, verdict not enforced: proves the check runs (flags given explicitly still win)")
	fs.BoolVar(&c.enforce, "enforce", true, "exit non-zero when the verdict is FAIL")
	fs.Uint64Var(&c.data.Seed, "seed", 1, "dataset `seed`")
	fs.IntVar(&c.data.Users, "users", 20_000, "users in the dataset")
	fs.IntVar(&c.data.Products, "products", 20_000, "products in the dataset")
	fs.IntVar(&c.data.PostsPerUser, "posts-per-user", 2, "posts per user (the nested-aliases answer grows with the square of posts and comments)")
	fs.IntVar(&c.data.CommentsPerPost, "comments-per-post", 2, "comments per post")
	fs.IntVar(&c.requests, "n", 1000, "hostile requests of each HTTP kind")
	fs.IntVar(&c.attackers, "attackers", 8, "hostile requests in flight at once")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "client timeout of each request; an unanswered request is a failure")
	fs.DurationVar(&c.budget, "budget", 60*time.Second, "time each attack kind may take; the rest of its requests are not sent")
	fs.DurationVar(&c.baseline, "baseline", 10*time.Second, "how long the legitimate client is measured alone")
	fs.DurationVar(&c.control, "control", 10*time.Second, "how long the legitimate client is measured beside a busy loop per CPU and no attack, for reference: what sharing the CPUs alone costs it (0: skip)")
	fs.IntVar(&c.legitRate, "legit-rate", 100, "legitimate calls per second, the same before and during the attack")
	fs.DurationVar(&c.settle, "settle", 20*time.Second, "how long the service's RSS may take to return to its baseline after the attack")
	maxRSS := fs.Int64("max-rss-mib", 2048, "the guard's ceiling: a kind that takes the service's RSS past it is stopped and the service killed")
	fs.Float64Var(&c.maxP99Ratio, "max-p99-ratio", 3, "the legitimate p99 during the attack may be this many times its baseline")
	fs.Float64Var(&c.maxRSSGrowth, "max-rss-growth", 0.10, "RSS after the attack may exceed its baseline by this fraction")
	fs.IntVar(&c.grpcStreams, "grpc-streams", 32, "CreateUsers streams of the gRPC kind")
	fs.IntVar(&c.grpcParallel, "grpc-parallel", 4, "CreateUsers streams open at once")
	fs.DurationVar(&c.grpcHold, "grpc-hold", time.Second, "how long a stream that took every user is held open before it is cancelled")
	fs.DurationVar(&c.wsHold, "ws-hold", 10*time.Second, "how long the WebSockets stay open while the legitimate client creates users")
	fs.StringVar(&c.attackerIP, "attacker-ip", "127.0.0.2", "source `address` of the attackers' connections: one stranger, apart from the legitimate client (\"\": the same address as it)")
	kinds := fs.String("kinds", "", "run only the attack kinds whose name matches this `regexp`")
	serviceFlags := fs.String("service-flags", "", "extra `flags` for the service, split at spaces (e.g. a WebSocket cap)")
	fs.StringVar(&c.repo, "repo", "..", "`directory` of the quartet repository (the service is built from it)")
	fs.StringVar(&c.bin, "bin", "", "a service `binary` to run instead of building one")
	fs.StringVar(&c.workDir, "work", "", "`directory` for the binary and dataset (default: a new temporary one)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory")
	fs.BoolVar(&c.verbose, "v", false, "show the service's log")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	c.sizes = fullSizes
	if c.quick {
		c.sizes = quickSizes
		for name, v := range map[string]string{
			"users": "50", "products": "50", "n": "10", "attackers": "2", "timeout": "5s", "budget": "20s",
			"baseline": "1s", "control": "1s", "legit-rate": "40", "settle": "500ms", "grpc-streams": "2", "grpc-parallel": "2",
			"grpc-hold": "100ms", "ws-hold": "300ms", "enforce": "false",
		} {
			if !given[name] {
				fs.Set(name, v)
			}
		}
		c.data.Orders = 20
	}
	c.maxRSS = *maxRSS << 20
	c.serviceFlags = strings.Fields(*serviceFlags)
	if *kinds != "" {
		re, err := regexp.Compile(*kinds)
		if err != nil {
			return nil, fmt.Errorf("-kinds: %w", err)
		}
		c.kinds = re
	}
	if c.attackerIP != "" && net.ParseIP(c.attackerIP) == nil {
		return nil, fmt.Errorf("-attacker-ip: %q is not an IP address", c.attackerIP)
	}
	if c.requests < 1 || c.attackers < 1 || c.legitRate < 4 || c.grpcStreams < 1 || c.grpcParallel < 1 || c.data.Users < 1 || c.data.Products < 1 {
		return nil, errors.New("-n, -attackers, -grpc-streams, -grpc-parallel, -users and -products must be positive, -legit-rate at least 4")
	}
	return c, nil
}

// errHostileFailed is the hostile check's FAIL verdict, for the exit status.
var errHostileFailed = errors.New("hostile check: FAIL")

// hostile runs the check against one service process at a time.
type hostile struct {
	cfg     *hostileConfig
	bin     string
	dataset string
	p       *proc // the service; nil after a kind that did not hold killed it, until the next kind
	log     io.Writer

	self      string // this program, which runs the legitimate client ("bench legit")
	legitRuns int    // legitimate clients started so far
}

// kindResult is what one attack kind did and what it cost.
type kindResult struct {
	name string
	tally
	detail string // kind-specific counts (subscriptions, users sent)

	overBudget bool
	guard      string        // why the guard stopped the kind; "" when it did not
	serverCPU  time.Duration // the service's CPU time during the kind
	clientCPU  time.Duration // the attackers' CPU time (this process's) during the kind
	peakRSS    int64         // the highest RSS the guard saw during the kind
	rssAfter   int64         // RSS right after the kind, before any settling
	legit      legitResult   // the legitimate client during the kind
	restarted  bool          // the service was restarted after this kind
}

// held reports whether the service answered every request of the kind within the
// client timeout, the budget and the memory ceiling.
func (k *kindResult) held() bool { return k.failures == 0 && !k.overBudget && k.guard == "" }

// hostileReport is the whole check's outcome.
type hostileReport struct {
	cfg         *hostileConfig
	baseline    legitResult
	control     legitResult // beside busy loops, no attack; empty when skipped
	baselineRSS int64
	kinds       []*kindResult
	during      legitResult   // the legitimate client during every kind, merged
	finalRSS    int64         // after the settle window
	settled     time.Duration // how long RSS took to come back; the window when it did not
	restarted   bool          // the final RSS is that of a restarted service
	took        time.Duration
	loadBefore  string // /proc/loadavg when the check began
}

func runHostile(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseHostileFlags(args, stdout)
	if err != nil {
		return err
	}
	rep, err := hostileCheck(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	rep.print(stdout)
	if !rep.pass() && cfg.enforce {
		return errHostileFailed
	}
	return nil
}

// hostileCheck builds the service (unless cfg names a binary), generates the
// dataset and runs the check, logging its progress to log.
func hostileCheck(ctx context.Context, cfg *hostileConfig, log io.Writer) (*hostileReport, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h := &hostile{cfg: cfg, log: log, bin: cfg.bin, self: self}
	workDir := cfg.workDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "quartet-hostile-"); err != nil {
			return nil, err
		}
		if !cfg.keep {
			defer os.RemoveAll(workDir)
		}
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	started := time.Now()
	if h.bin == "" {
		repo, err := filepath.Abs(cfg.repo)
		if err != nil {
			return nil, err
		}
		h.logf("building the service from %s", repo)
		h.bin = filepath.Join(workDir, "quartet")
		if err := buildService(ctx, repo, h.bin); err != nil {
			return nil, err
		}
	}
	h.dataset = filepath.Join(workDir, "hostile.json")
	if err := writeDataset(h.dataset, cfg.data); err != nil {
		return nil, err
	}
	defer func() {
		if h.p != nil {
			h.p.stop()
		}
	}()
	rep, err := h.run(ctx)
	if err != nil {
		return nil, err
	}
	rep.took = time.Since(started)
	return rep, nil
}

func (h *hostile) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "bench hostile: "+format+"\n", args...)
}

func (h *hostile) start(ctx context.Context) error {
	p, err := startService(ctx, h.bin, h.dataset, h.cfg.serviceFlags, h.cfg.verbose)
	if err != nil {
		return err
	}
	h.p = p
	return nil
}

// run measures the baseline, runs every selected kind and lets RSS settle.
func (h *hostile) run(ctx context.Context) (*hostileReport, error) {
	cfg := h.cfg
	rep := &hostileReport{cfg: cfg}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.loadBefore = strings.Join(strings.Fields(string(la))[:3], " ")
	}
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	h.logf("baseline: the legitimate client alone for %v at %d calls/s", cfg.baseline, cfg.legitRate)
	warm := h.legit(ctx)
	time.Sleep(min(time.Second, cfg.baseline/4)) // connections and caches warm, not measured
	warm()
	stop := h.legit(ctx)
	time.Sleep(cfg.baseline)
	rep.baseline = stop()
	m, err := h.p.memory()
	if err != nil {
		return nil, err
	}
	rep.baselineRSS = m.rss
	h.logf("  %s; RSS %.0f MiB", rep.baseline.summary(), mib(m.rss))
	if rep.baseline.errors > 0 {
		return nil, fmt.Errorf("the legitimate client failed without any attack: %v", rep.baseline.firstErr)
	}
	if cfg.control > 0 {
		h.logf("control: the legitimate client beside %d busy loops (one per CPU), no attack, for %v", runtime.NumCPU(), cfg.control)
		stop := h.legit(ctx)
		spin(runtime.NumCPU(), cfg.control)
		rep.control = stop()
		h.logf("  %s", rep.control.summary())
	}

	for _, a := range h.attacks() {
		if cfg.kinds != nil && !cfg.kinds.MatchString(a.name) {
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		k, err := h.runKind(ctx, a)
		if err != nil {
			return nil, err
		}
		rep.kinds = append(rep.kinds, k)
		rep.during = rep.during.merge(k.legit)
		rep.restarted = rep.restarted || k.restarted
	}
	if h.p == nil { // the last kind's service was killed
		if err := h.start(ctx); err != nil {
			return nil, err
		}
	}
	rep.finalRSS, rep.settled = h.settle(ctx, rep.baselineRSS)
	return rep, nil
}

// spin keeps n goroutines busy for d. They stand for load that the service has
// no part in, such as an attacker's own work on a machine shared with it.
func spin(n int, d time.Duration) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := 0
			for !done.Load() {
				x++
			}
			spinSink.Add(int64(x))
		})
	}
	time.Sleep(d)
	done.Store(true)
	wg.Wait()
}

// spinSink keeps spin's loops from being optimised away.
var spinSink atomic.Int64

// legit starts the legitimate client against the current service; the function it
// returns stops it and gives its calls.
func (h *hostile) legit(ctx context.Context) func() legitResult {
	h.legitRuns++
	return startLegitProcess(ctx, h.self, h.p.httpAddr, h.cfg.data.Users, h.cfg.legitRate, h.cfg.timeout, h.legitRuns)
}

// runKind runs one attack kind with the legitimate client alongside, under the
// time budget and the memory guard.
func (h *hostile) runKind(ctx context.Context, a attack) (*kindResult, error) {
	if h.p == nil {
		h.logf("restarting the service")
		if err := h.start(ctx); err != nil {
			return nil, err
		}
	}
	h.logf("%s", a.name)
	p := h.p
	stopLegit := h.legit(ctx)
	cpu0, _ := p.cpuTime()
	self0, _ := selfCPUTime()
	kctx, cancel := context.WithTimeout(ctx, h.cfg.budget)
	g := startGuard(kctx, p, h.cfg.maxRSS, cancel)
	k := a.run(kctx, target{httpAddr: p.httpAddr, grpcAddr: p.grpcAddr, from: h.attackerDialer()})
	k.name = a.name
	k.overBudget = errors.Is(kctx.Err(), context.DeadlineExceeded)
	cancel()
	k.guard, k.peakRSS = g.wait()
	k.legit = stopLegit()
	self1, _ := selfCPUTime()
	k.clientCPU = self1 - self0
	if k.guard == "" {
		cpu1, _ := p.cpuTime()
		k.serverCPU = cpu1 - cpu0
		if m, err := p.memory(); err == nil {
			k.rssAfter = m.rss
		}
	}
	h.logf("  %s; legit p99 %s (%d calls, %d errors; %s); peak RSS %.0f MiB; %s", k.summary(), fmtDur(k.legit.percentile(99)),
		len(k.legit.lat), k.legit.errors, k.legit.byCall(), mib(k.peakRSS), k.failNote())
	if !k.held() {
		// Requests the service is still working on would be charged to the next kind.
		if k.guard == "" {
			p.kill()
		}
		h.p, k.restarted = nil, true
	}
	return k, nil
}

// settle polls the service's RSS until it is within the allowed growth over base,
// or the settle window has passed; each poll makes one call that does nothing (a
// health check), as an idle service would see. It returns the last RSS and how
// long the wait was.
func (h *hostile) settle(ctx context.Context, base int64) (int64, time.Duration) {
	limit := int64(float64(base) * (1 + h.cfg.maxRSSGrowth))
	t0 := time.Now()
	for {
		healthz(ctx, h.p.httpAddr)
		m, err := h.p.memory()
		if err != nil || m.rss <= limit || time.Since(t0) >= h.cfg.settle || ctx.Err() != nil {
			return m.rss, time.Since(t0)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// guard watches the service's RSS during a kind: it records the peak, and past the
// ceiling it kills the service and cancels the kind, so that an unbounded attack
// cannot take the machine's memory. A service that dies on its own stops the kind
// too.
type guard struct {
	done   chan struct{}
	reason string
	peak   int64
}

func startGuard(ctx context.Context, p *proc, ceiling int64, stop context.CancelFunc) *guard {
	g := &guard{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := p.memory(); err == nil {
				g.peak = max(g.peak, m.rss)
				if m.rss > ceiling {
					g.reason = fmt.Sprintf("RSS %.0f MiB over the %.0f MiB ceiling", mib(m.rss), mib(ceiling))
					stop() // first, so the requests the kill breaks count as stopped, not failed
					p.kill()
					return
				}
			}
			select {
			case <-p.exited:
				g.reason = fmt.Sprintf("the service exited (%v)", p.waitErr)
				stop()
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return g
}

// wait waits for the guard to end (after the kind's context is done) and returns
// why it stopped the kind ("" when it did not) and the peak RSS.
func (g *guard) wait() (string, int64) {
	<-g.done
	return g.reason, g.peak
}

func (k *kindResult) summary() string {
	s := fmt.Sprintf("%d sent: %s", k.sent, k.outcomeList())
	if len(k.lat) > 0 {
		s += fmt.Sprintf("; p50 %s, p99 %s", fmtDur(percentile(k.lat, 50)), fmtDur(percentile(k.lat, 99)))
	}
	if k.detail != "" {
		s += "; " + k.detail
	}
	return s
}

// failNote says why the kind failed, for the log and the report; "" when it held.
func (k *kindResult) failNote() string {
	var why []string
	if k.failures > 0 {
		why = append(why, fmt.Sprintf("%d unanswered (%v)", k.failures, k.firstErr))
	}
	if k.gaveUp {
		why = append(why, "stopped: the service hangs")
	}
	if k.overBudget {
		why = append(why, "over the time budget")
	}
	if k.guard != "" {
		why = append(why, "guard: "+k.guard)
	}
	if len(why) == 0 {
		return ""
	}
	return "FAILED: " + strings.Join(why, "; ")
}

// The verdict's three parts.

func (r *hostileReport) p99OK() bool {
	return r.during.percentile(99) <= time.Duration(float64(r.baseline.percentile(99))*r.cfg.maxP99Ratio) && r.during.errors == 0
}

func (r *hostileReport) rssOK() bool {
	return !r.restarted && float64(r.finalRSS) <= float64(r.baselineRSS)*(1+r.cfg.maxRSSGrowth)
}

func (r *hostileReport) allHeld() bool {
	return !slices.ContainsFunc(r.kinds, func(k *kindResult) bool { return !k.held() })
}

func (r *hostileReport) pass() bool { return r.p99OK() && r.rssOK() && r.allHeld() }

func (r *hostileReport) print(w io.Writer) {
	c := r.cfg
	fmt.Fprintf(w, "\nflags: %s\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(w, "quartet hostile check: %s, %d CPUs (client and service share them), took %v\n",
		runtime.Version(), runtime.NumCPU(), r.took.Round(time.Second))
	if r.loadBefore != "" {
		fmt.Fprintf(w, "load average before the run: %s (other processes on the machine add noise)\n", r.loadBefore)
	}
	fmt.Fprintf(w, "dataset: %d users (%d posts, %d comments each), %d products; %d requests per HTTP kind, %d attackers, timeout %v, budget %v per kind\n",
		c.data.Users, c.data.PostsPerUser, c.data.CommentsPerPost, c.data.Products, c.requests, c.attackers, c.timeout, c.budget)
	fmt.Fprintf(w, "legitimate client: %d calls/s, a quarter each of GET /api/users/{id}, POST /api/users, GraphQL user(id){name posts{title}}, GET /api/products?$top=10\n\n", c.legitRate)

	t := newTable(w)
	t.row("ATTACK", "SENT", "OUTCOMES", "P50", "P99", "ANSWER P50", "ANSWER MAX", "SERVER CPU", "ATTACKER CPU", "PEAK RSS", "RSS AFTER", "LEGIT P99 (RATIO, CALLS OVER TARGET)", "HELD")
	for _, k := range r.kinds {
		held := "yes"
		if !k.held() {
			held = "NO"
		}
		cpu, after := "-", "-" // the guard killed the service
		if k.guard == "" {
			cpu, after = fmtDur(k.serverCPU), fmt.Sprintf("%.0f MiB", mib(k.rssAfter))
		}
		p50, p99, b50, bmax := "-", "-", "-", "-"
		if len(k.lat) > 0 {
			p50, p99 = fmtDur(percentile(k.lat, 50)), fmtDur(percentile(k.lat, 99))
			b50, bmax = fmtBytes(nearestRank(k.bytes, 50)), fmtBytes(nearestRank(k.bytes, 100))
		}
		t.row(k.name, fmt.Sprint(k.sent), k.outcomeList(), p50, p99, b50, bmax, cpu, fmtDur(k.clientCPU), fmt.Sprintf("%.0f MiB", mib(k.peakRSS)),
			after, r.legitCell(k.legit), held)
	}
	t.flush()
	for _, k := range r.kinds {
		if k.detail != "" {
			fmt.Fprintf(w, "  %s: %s\n", k.name, k.detail)
		}
		if !k.held() {
			note := k.failNote()
			if k.restarted {
				note += " (service restarted)"
			}
			fmt.Fprintf(w, "  %s: %s\n", k.name, note)
		}
	}

	fmt.Fprintln(w)
	t = newTable(w)
	t.row("CHECK", "BASELINE", "UNDER ATTACK", "TARGET", "RESULT")
	t.row("legitimate p99", fmtDur(r.baseline.percentile(99)), fmt.Sprintf("%s (%d calls, %d errors)", fmtDur(r.during.percentile(99)), len(r.during.lat), r.during.errors),
		fmt.Sprintf("<= %gx baseline, no errors", c.maxP99Ratio), verdict(r.p99OK()))
	t.row("legitimate p50", fmtDur(r.baseline.percentile(50)), fmtDur(r.during.percentile(50)), "-", "-")
	after := fmt.Sprintf("%.0f MiB after %v", mib(r.finalRSS), r.settled.Round(100*time.Millisecond))
	if r.restarted {
		after += " (of a restarted service)"
	}
	t.row("service RSS", fmt.Sprintf("%.0f MiB", mib(r.baselineRSS)), after, fmt.Sprintf("<= +%.0f%%, settle <= %v", 100*c.maxRSSGrowth, c.settle), verdict(r.rssOK()))
	held := 0
	for _, k := range r.kinds {
		if k.held() {
			held++
		}
	}
	t.row("attacks answered in time", "-", fmt.Sprintf("%d of %d kinds", held, len(r.kinds)), "all", verdict(r.allHeld()))
	t.flush()
	fmt.Fprintf(w, "  legitimate p99 by call: baseline %s; under attack %s\n", r.baseline.byCall(), r.during.byCall())
	fmt.Fprintf(w, "  legitimate calls slower than %gx the baseline p99: %d of %d (the target allows %d)\n", c.maxP99Ratio, r.over(r.during), len(r.during.lat), len(r.during.lat)/100)
	if len(r.control.lat) > 0 {
		fmt.Fprintf(w, "  reference: beside a busy loop per CPU and no attack, the legitimate p99 was %.1fx the baseline (%d of %d calls over): what sharing the CPUs alone costs, whatever the service does\n",
			float64(r.control.percentile(99))/float64(r.baseline.percentile(99)), r.over(r.control), len(r.control.lat))
	}
	if r.during.firstErr != nil {
		fmt.Fprintf(w, "  legitimate client, first error under attack: %v\n", r.during.firstErr)
	}
	v := verdict(r.pass())
	if !c.enforce {
		v += " (not enforced)"
	}
	fmt.Fprintf(w, "\nverdict: %s\n", v)
	if c.quick {
		fmt.Fprintln(w, "note: -quick: tiny data and documents, the figures prove only that the check runs")
	}
}

// legitCell is the legitimate client's p99 during one kind, with its ratio to
// the baseline p99 that the verdict compares (over all kinds together).
func (r *hostileReport) legitCell(l legitResult) string {
	base := r.baseline.percentile(99)
	if len(l.lat) == 0 || base == 0 {
		return "-"
	}
	s := fmt.Sprintf("%s (%.1fx, %d over)", fmtDur(l.percentile(99)), float64(l.percentile(99))/float64(base), r.over(l))
	if l.errors > 0 {
		s += fmt.Sprintf(", %d errors", l.errors)
	}
	return s
}

// over counts l's calls slower than the p99 target: the calls that decide the
// verdict, since the whole attack's p99 passes while fewer than 1% are.
func (r *hostileReport) over(l legitResult) int {
	limit := time.Duration(float64(r.baseline.percentile(99)) * r.cfg.maxP99Ratio)
	i, _ := slices.BinarySearch(l.lat, limit+1)
	return len(l.lat) - i
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// attackerDialer dials from -attacker-ip, so that the service tells the attacker
// from the legitimate client as it tells any two clients apart: by address.
func (h *hostile) attackerDialer() *net.Dialer {
	if h.cfg.attackerIP == "" {
		return &net.Dialer{}
	}
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(h.cfg.attackerIP)}}
}
