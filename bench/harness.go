package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"quartet/userpb"
)

// runConfig is the harness's configuration, all of it flags.
type runConfig struct {
	quick         bool
	duration      time.Duration
	warmup        time.Duration
	conns         int
	rounds        int
	latencyConns  int
	grpcConns     int
	spread        bool // each HTTP connection from a loopback address of its own
	seed          uint64
	small         GenConfig // the dataset of the side-by-side scenarios
	largeUsers    int
	largeProducts int
	largeOrders   int
	subscribers   int
	fanOutEvents  int
	repo          string
	workDir       string
	keep          bool
	only          *regexp.Regexp
	verbose       bool
}

func parseRunFlags(args []string, stdout io.Writer) (*runConfig, error) {
	c := &runConfig{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.BoolVar(&c.quick, "quick", false, "small data and 2 s per scenario, for development (flags given explicitly still win)")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "measured time per scenario and server")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured load before each measurement")
	fs.IntVar(&c.rounds, "rounds", 4, "side-by-side rounds; the order alternates (service first, then yardstick first) so drift in the machine's other load cancels")
	fs.IntVar(&c.conns, "conns", 32, "HTTP connections (and gRPC concurrent calls) of the side-by-side scenarios")
	fs.IntVar(&c.latencyConns, "latency-conns", 1, "connections of the large-data latency scenarios")
	fs.IntVar(&c.grpcConns, "grpc-conns", 1, "gRPC connections the concurrent calls share")
	fs.BoolVar(&c.spread, "spread-addresses", false, "each HTTP connection from a loopback address of its own (127.0.0.2, .3, …), as many clients; the default is one address, as one client or a reverse proxy")
	fs.Uint64Var(&c.seed, "seed", 1, "dataset `seed`")
	fs.IntVar(&c.small.Users, "users", 1000, "users in the side-by-side dataset")
	fs.IntVar(&c.small.PostsPerUser, "posts-per-user", 5, "posts per user in the side-by-side dataset")
	fs.IntVar(&c.small.CommentsPerPost, "comments-per-post", 3, "comments per post in the side-by-side dataset")
	fs.IntVar(&c.small.Products, "products", 1000, "products in the side-by-side dataset")
	fs.IntVar(&c.small.Orders, "orders", 1000, "orders in the side-by-side dataset")
	fs.IntVar(&c.largeUsers, "large-users", 1_000_000, "users in the large dataset")
	fs.IntVar(&c.largeProducts, "large-products", 100_000, "products in the large dataset")
	fs.IntVar(&c.largeOrders, "large-orders", 200_000, "orders in the large dataset")
	fs.IntVar(&c.subscribers, "subscribers", 10_000, "WebSocket subscribers of the fan-out scenario")
	fs.IntVar(&c.fanOutEvents, "fanout-events", 1, "events measured one after another in the fan-out scenario; the target holds when every one reaches every subscriber in time")
	fs.StringVar(&c.repo, "repo", "..", "`directory` of the quartet repository (the service is built from it)")
	fs.StringVar(&c.workDir, "work", "", "`directory` for the binary and datasets (default: a new temporary one)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory")
	only := fs.String("only", "", "run only the scenarios whose name matches this `regexp`")
	fs.BoolVar(&c.verbose, "v", false, "show the servers' logs (costs CPU during the measurement)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if c.quick {
		for name, v := range map[string]string{
			"duration": "2s", "warmup": "500ms", "rounds": "1", "large-users": "20000", "large-products": "5000", "large-orders": "4000", "subscribers": "500",
		} {
			if !given[name] {
				fs.Set(name, v)
			}
		}
	}
	c.small.Seed = c.seed
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return nil, fmt.Errorf("-only: %w", err)
		}
		c.only = re
	}
	if c.conns < 1 || c.latencyConns < 1 || c.grpcConns < 1 || c.rounds < 1 || c.fanOutEvents < 1 {
		return nil, errors.New("-conns, -latency-conns, -grpc-conns, -rounds and -fanout-events must be positive")
	}
	return c, nil
}

// harness runs the scenarios and collects the rows of the report.
type harness struct {
	cfg        *runConfig
	quartetBin string
	selfBin    string
	schema     string
	smallData  string
	largeData  string
	rows       []row
	notes      []string
	log        io.Writer
	loadBefore string // /proc/loadavg when the run began
}

// row is one line of the report.
type row struct {
	scenario string
	load     string
	quartet  *Result
	peerName string
	peer     *Result
	measure  string // the figure the target is about
	target   string
	verdict  string // PASS, FAIL, SKIP
}

func runHarness(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseRunFlags(args, stdout)
	if err != nil {
		return err
	}
	h := &harness{cfg: cfg, log: os.Stderr}
	if h.selfBin, err = os.Executable(); err != nil {
		return err
	}
	repo, err := filepath.Abs(cfg.repo)
	if err != nil {
		return err
	}
	h.schema = filepath.Join(repo, "schema.graphql")
	if cfg.workDir == "" {
		if cfg.workDir, err = os.MkdirTemp("", "quartet-bench-"); err != nil {
			return err
		}
		if !cfg.keep {
			defer os.RemoveAll(cfg.workDir)
		}
	} else if err := os.MkdirAll(cfg.workDir, 0o755); err != nil {
		return err
	}

	started := time.Now()
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		h.loadBefore = strings.Join(strings.Fields(string(la))[:3], " ")
	}
	h.logf("building the service from %s", repo)
	h.quartetBin = filepath.Join(cfg.workDir, "quartet")
	if err := buildService(ctx, repo, h.quartetBin); err != nil {
		return err
	}
	h.smallData = filepath.Join(cfg.workDir, "small.json")
	h.largeData = filepath.Join(cfg.workDir, "large.json")
	large := GenConfig{Seed: cfg.seed, Users: cfg.largeUsers, Products: cfg.largeProducts, Orders: cfg.largeOrders}
	for _, d := range []struct {
		path string
		cfg  GenConfig
	}{{h.smallData, cfg.small}, {h.largeData, large}} {
		t0 := time.Now()
		if err := writeDataset(d.path, d.cfg); err != nil {
			return err
		}
		fi, _ := os.Stat(d.path)
		h.logf("generated %s (%+v): %.1f MiB in %v", filepath.Base(d.path), d.cfg, float64(fi.Size())/(1<<20), time.Since(t0).Round(time.Millisecond))
	}
	runtime.GC()
	debug.FreeOSMemory() // the generator's garbage must not sit in the client's memory

	h.sideBySide(ctx)
	h.largeData_(ctx)
	h.fanOut(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	h.report(stdout, time.Since(started))
	return nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "bench: "+format+"\n", args...)
}

func (h *harness) logResult(res *Result, err error) {
	switch {
	case err != nil:
		h.logf("  error: %v", err)
	case res != nil:
		h.logf("  %.0f/s, p50 %s, p99 %s, CPU/req: server %s, client %s; %d errors", res.Throughput(), fmtDur(res.Percentile(50)), fmtDur(res.Percentile(99)),
			fmtDur(res.CPUPerCall()), fmtDur(res.ClientCPU/time.Duration(max(res.OK, 1))), res.Errors)
	}
}

func (h *harness) selected(name string) bool {
	return h.cfg.only == nil || h.cfg.only.MatchString(name)
}

// startQuartet starts the built service on the dataset file. Every client of these
// scenarios connects from 127.0.0.1, and the fan-out scenario opens thousands of
// WebSockets there, so the WebSocket and per-address connection caps meant for
// hostile clients are lifted.
func (h *harness) startQuartet(ctx context.Context, dataset string) (*proc, error) {
	return startService(ctx, h.quartetBin, dataset, unlimitedWebSockets, h.cfg.verbose)
}

// unlimitedWebSockets are the service flags that lift its WebSocket caps and its
// connection caps per client address (0: no limit).
var unlimitedWebSockets = []string{"-ws-max-sockets", "0", "-ws-max-sockets-per-client", "0",
	"-ws-max-subscriptions", "0", "-ws-max-subscriptions-per-client", "0",
	"-http-max-conns-per-client", "0", "-grpc-max-conns-per-client", "0"}

// buildService builds the service from the repository directory repo into out.
func buildService(ctx context.Context, repo, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the service: %w", err)
	}
	return nil
}

// startService starts the service binary bin on the dataset file, on free loopback
// ports, with the extra flags after the harness's own (so they win).
func startService(ctx context.Context, bin, dataset string, extra []string, verbose bool) (*proc, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	argv := []string{bin, "-http", httpAddr, "-grpc", grpcAddr, "-load", dataset, "-env", "production"}
	argv = append(argv, extra...)
	return startProc(ctx, "quartet", argv, httpAddr, grpcAddr, verbose)
}

// startPeer starts this program as the yardstick kind on the dataset file.
func (h *harness) startPeer(ctx context.Context, kind, dataset string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	argv := []string{h.selfBin, "peer", "-kind", kind, "-load", dataset, "-schema", h.schema}
	httpAddr, grpcAddr := addr, ""
	if kind == "grpc" {
		httpAddr, grpcAddr = "", addr
		argv = append(argv, "-grpc", addr)
	} else {
		argv = append(argv, "-http", addr)
	}
	return startProc(ctx, kind+" peer", argv, httpAddr, grpcAddr, h.cfg.verbose)
}

// workload is what a scenario sends: HTTP requests or gRPC GetUser calls.
type workload struct {
	http  httpRequest        // when not grpc
	grpc  bool               // GetUser with a random id
	check func([]byte) error // checks the answer of the probe call (HTTP)
}

// measure probes p once, then runs the load against it.
func (h *harness) measure(ctx context.Context, p *proc, wl workload, conns int) (*Result, error) {
	var load Load
	load.Workers, load.Warmup, load.Duration = conns, h.cfg.warmup, h.cfg.duration
	users := int32(h.cfg.small.Users)
	if wl.grpc {
		clients := make([]userpb.UserServiceClient, h.cfg.grpcConns)
		for i := range clients {
			cc, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return nil, err
			}
			defer cc.Close()
			clients[i] = userpb.NewUserServiceClient(cc)
		}
		u, err := clients[0].GetUser(ctx, &userpb.GetUserRequest{Id: 7})
		if err != nil {
			return nil, fmt.Errorf("probe GetUser(7): %w", err)
		}
		if u.GetId() != 7 || u.GetName() == "" {
			return nil, fmt.Errorf("probe GetUser(7) answered %v", u)
		}
		load.Call = func(ctx context.Context, w int, rng *rand.Rand) error {
			_, err := clients[w%len(clients)].GetUser(ctx, &userpb.GetUserRequest{Id: 1 + rng.Int32N(users)})
			return err
		}
	} else {
		body, err := probeHTTP(ctx, p.httpAddr, wl.http)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		if err := wl.check(body); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		client := newH1Client(p.httpAddr, conns, wl.http, h.cfg.spread)
		defer client.close()
		load.Call = client.call
	}
	load.Measuring = func() func() (time.Duration, time.Duration) {
		server0, err := p.cpuTime()
		client0, cerr := selfCPUTime()
		return func() (server, client time.Duration) {
			if server1, err2 := p.cpuTime(); err == nil && err2 == nil {
				server = server1 - server0
			}
			if client1, cerr2 := selfCPUTime(); cerr == nil && cerr2 == nil {
				client = client1 - client0
			}
			return server, client
		}
	}
	res := load.Run(ctx)
	return &res, ctx.Err()
}

// sideBySide runs the scenarios whose targets are ratios to a yardstick: for each, the
// service and then the yardstick, each alone on the machine, under the same load.
func (h *harness) sideBySide(ctx context.Context) {
	users := h.cfg.small.Users
	graphql := func(query string) httpRequest {
		body, _ := json.Marshal(map[string]string{"query": query})
		hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
		return httpRequest{method: "POST", path: "/graphql", body: body, header: hdr}
	}
	nestedPosts := min(2, h.cfg.small.PostsPerUser)
	scenarios := []struct {
		name, load string
		peerKind   string
		peerName   string
		wl         workload
		conns      int
		minRatio   float64 // 0: no target, the row is for reading the others
		// subject, when set, is the peer kind measured in the service's place: a
		// ceiling for the service's own row
		subject string
	}{
		{
			name: "REST GET /api/users/{id}", peerKind: "http", peerName: "bare net/http",
			wl: workload{
				http: httpRequest{method: "GET", pathFor: func(dst []byte, rng *rand.Rand) []byte {
					return strconv.AppendInt(append(dst, "/api/users/"...), int64(1+rng.IntN(users)), 10)
				}},
				check: checkRESTUser,
			},
			conns: h.cfg.conns, minRatio: 0.8,
		},
		{
			name: "gRPC GetUser", peerKind: "grpc", peerName: "bare grpc-go",
			wl: workload{grpc: true}, conns: h.cfg.conns, minRatio: 0.85,
		},
		{
			name: "GraphQL { user(id: 7) { id name email } }", peerKind: "graphql", peerName: "graph-gophers",
			wl: workload{
				http:  graphql("{ user(id: 7) { id name email } }"),
				check: checkGraphQL(func(d gqlData) error { return expect(d.User != nil && d.User.ID == 7, "user 7 missing") }),
			},
			conns: h.cfg.conns, minRatio: 1.5,
		},
		{
			// What any GraphQL server on net/http can reach against graph-gophers on this
			// machine: bare net/http reads the body and writes user 7's answer, with no
			// GraphQL work at all.
			name: "ceiling: bare net/http writing the answer to { user(id: 7) … } unparsed", subject: "http", peerKind: "graphql", peerName: "graph-gophers",
			wl: workload{
				http:  graphql("{ user(id: 7) { id name email } }"),
				check: checkGraphQL(func(d gqlData) error { return expect(d.User != nil && d.User.ID == 7, "user 7 missing") }),
			},
			conns: h.cfg.conns,
		},
		{
			name: fmt.Sprintf("GraphQL { users { name posts(limit: 2) { title comments { text } } } }, %d users", users), peerKind: "graphql", peerName: "graph-gophers",
			wl: workload{
				http: graphql("{ users { name posts(limit: 2) { title comments { text } } } }"),
				check: checkGraphQL(func(d gqlData) error {
					posts, comments := 0, 0
					for _, u := range d.Users {
						posts += len(u.Posts)
						for _, p := range u.Posts {
							comments += len(p.Comments)
						}
					}
					return expect(len(d.Users) == users && posts == users*nestedPosts && comments == posts*h.cfg.small.CommentsPerPost,
						fmt.Sprintf("answer has %d users, %d posts, %d comments", len(d.Users), posts, comments))
				}),
			},
			conns: h.cfg.conns, minRatio: 2,
		},
	}
	for _, sc := range scenarios {
		if !h.selected(sc.name) || ctx.Err() != nil {
			continue
		}
		r := row{scenario: sc.name, peerName: sc.peerName, target: "-"}
		if sc.minRatio > 0 {
			r.target = fmt.Sprintf(">= %.2fx", sc.minRatio)
		}
		r.load = fmt.Sprintf("%d conns", sc.conns)
		if sc.wl.grpc {
			r.load = fmt.Sprintf("%d calls/%d conn", sc.conns, h.cfg.grpcConns)
		}
		var q, p *Result
		var qerr, perr error
		for round := range h.cfg.rounds {
			quartet := func() {
				h.logf("%s: quartet (round %d)", sc.name, round+1)
				start := func() (*proc, error) { return h.startQuartet(ctx, h.smallData) }
				if sc.subject != "" {
					start = func() (*proc, error) { return h.startPeer(ctx, sc.subject, h.smallData) }
				}
				res, err := h.run(ctx, start, sc.wl, sc.conns)
				h.logResult(res, err)
				q, qerr = merge(q, res), cmp.Or(qerr, err)
			}
			peer := func() {
				h.logf("%s: %s (round %d)", sc.name, sc.peerName, round+1)
				res, err := h.run(ctx, func() (*proc, error) { return h.startPeer(ctx, sc.peerKind, h.smallData) }, sc.wl, sc.conns)
				h.logResult(res, err)
				p, perr = merge(p, res), cmp.Or(perr, err)
			}
			if round%2 == 0 {
				quartet()
				peer()
			} else {
				peer()
				quartet()
			}
		}
		r.quartet, r.peer = q, p
		switch {
		case qerr != nil:
			r.verdict, r.measure = "ERROR", "quartet: "+qerr.Error()
		case perr != nil:
			r.verdict, r.measure = "ERROR", sc.peerName+": "+perr.Error()
		default:
			ratio := q.Throughput() / p.Throughput()
			r.measure = fmt.Sprintf("%.2fx", ratio)
			r.verdict = verdict(ratio >= sc.minRatio && q.Errors == 0)
			if sc.minRatio == 0 {
				r.verdict = "-"
			}
		}
		h.rows = append(h.rows, r)
	}
}

// merge adds the calls of b to a (either may be nil).
func merge(a, b *Result) *Result {
	if a == nil || b == nil {
		return cmp.Or(a, b)
	}
	m := &Result{OK: a.OK + b.OK, Errors: a.Errors + b.Errors, FirstErr: cmp.Or(a.FirstErr, b.FirstErr),
		Elapsed: a.Elapsed + b.Elapsed, ServerCPU: a.ServerCPU + b.ServerCPU, ClientCPU: a.ClientCPU + b.ClientCPU}
	m.Latencies = slices.Concat(a.Latencies, b.Latencies)
	slices.Sort(m.Latencies)
	return m
}

// run starts a server, measures it and stops it.
func (h *harness) run(ctx context.Context, start func() (*proc, error), wl workload, conns int) (*Result, error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	defer p.stop()
	return h.measure(ctx, p, wl, conns)
}

// largeData_ runs the latency scenarios on the large dataset in one service process,
// then reads its start-up time and memory.
func (h *harness) largeData_(ctx context.Context) {
	c := h.cfg
	page := min(5000, max(1, c.largeUsers/10))
	filter := "price gt 500 and contains(tolower(name),'pro')"
	scenarios := []struct {
		name, path string
		maxP50     time.Duration
		check      func([]byte) error
	}{
		{
			name:   fmt.Sprintf("REST GET /api/users?sortBy=name&page=%d&pageSize=10, %d users", page, c.largeUsers),
			path:   fmt.Sprintf("/api/users?sortBy=name&page=%d&pageSize=10", page),
			maxP50: time.Millisecond, check: checkPage(10),
		},
		{
			name:   fmt.Sprintf("REST GET /api/users?search=ann&pageSize=10, %d users", c.largeUsers),
			path:   "/api/users?search=ann&pageSize=10",
			maxP50: 50 * time.Millisecond, check: checkPage(1),
		},
		{
			name:   fmt.Sprintf("OData /api/products?$filter=%s&$top=10, %d products", filter, c.largeProducts),
			path:   "/api/products?" + url.Values{"$filter": {filter}, "$top": {"10"}}.Encode(),
			maxP50: 3 * time.Millisecond, check: checkODataValue,
		},
		{
			name:   fmt.Sprintf("OData /api/products?$orderby=price desc&$top=10, %d products", c.largeProducts),
			path:   "/api/products?" + url.Values{"$orderby": {"price desc"}, "$top": {"10"}}.Encode(),
			maxP50: 3 * time.Millisecond, check: checkODataValue,
		},
	}
	sizes := fmt.Sprintf("%d users + %d products + %d orders", c.largeUsers, c.largeProducts, c.largeOrders)
	memName, startName := "memory: RSS after the load, "+sizes, "start-up (exec to /healthz OK), "+sizes
	any := h.selected(memName) || h.selected(startName)
	for _, sc := range scenarios {
		any = any || h.selected(sc.name)
	}
	if !any || ctx.Err() != nil {
		return
	}
	h.logf("starting quartet on the large dataset (%s)", sizes)
	p, err := h.startQuartet(ctx, h.largeData)
	if err != nil {
		h.rows = append(h.rows, row{scenario: startName, measure: err.Error(), verdict: "ERROR"})
		return
	}
	defer p.stop()
	if h.selected(startName) {
		h.rows = append(h.rows, row{
			scenario: startName, load: "-", measure: p.startup.Round(time.Millisecond).String(),
			target: "< " + startupTarget.String(), verdict: verdict(p.startup < startupTarget),
		})
	}
	for _, sc := range scenarios {
		if !h.selected(sc.name) || ctx.Err() != nil {
			continue
		}
		h.logf("%s", sc.name)
		path := sc.path
		wl := workload{http: httpRequest{method: "GET", path: path}, check: sc.check}
		r := row{scenario: sc.name, load: fmt.Sprintf("%d conns", c.latencyConns), target: "p50 <= " + sc.maxP50.String()}
		res, err := h.measure(ctx, p, wl, c.latencyConns)
		r.quartet = res
		if err != nil {
			r.verdict, r.measure = "ERROR", err.Error()
		} else {
			r.measure = "p50 " + fmtDur(res.Percentile(50))
			r.verdict = verdict(res.Percentile(50) <= sc.maxP50 && res.Errors == 0)
		}
		h.rows = append(h.rows, r)
	}
	if h.selected(memName) {
		runtime.GC() // only the client's; the server's heap is as the load left it
		m, err := p.memory()
		r := row{scenario: memName, load: "-", target: fmt.Sprintf("< %d MiB", rssTarget>>20)}
		if err != nil {
			r.verdict, r.measure = "ERROR", err.Error()
		} else {
			r.measure = fmt.Sprintf("%.0f MiB (peak %.0f)", mib(m.rss), mib(m.peak))
			r.verdict = verdict(m.rss < rssTarget)
		}
		h.rows = append(h.rows, r)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func expect(ok bool, msg string) error {
	if ok {
		return nil
	}
	return errors.New(msg)
}

// The probe checks: each scenario's first answer must be the real thing, not an
// error or an empty page, or the numbers would measure the wrong path.

func checkRESTUser(b []byte) error {
	var u struct {
		ID    int64  `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return fmt.Errorf("user: %w", err)
	}
	return expect(u.ID > 0 && u.Name != "" && u.Email != "", fmt.Sprintf("incomplete user %s", b))
}

type gqlUser struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Posts []struct {
		Title    string            `json:"title"`
		Comments []json.RawMessage `json:"comments"`
	} `json:"posts"`
}

type gqlData struct {
	User  *gqlUser  `json:"user"`
	Users []gqlUser `json:"users"`
}

func checkGraphQL(check func(gqlData) error) func([]byte) error {
	return func(b []byte) error {
		var resp struct {
			Data   *gqlData          `json:"data"`
			Errors []json.RawMessage `json:"errors"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return fmt.Errorf("GraphQL response: %w", err)
		}
		if len(resp.Errors) > 0 || resp.Data == nil {
			return fmt.Errorf("GraphQL errors: %.300s", b)
		}
		return check(*resp.Data)
	}
}

// checkPage checks a REST page holds at least min items.
func checkPage(min int) func([]byte) error {
	return func(b []byte) error {
		var page struct {
			Items      []json.RawMessage `json:"items"`
			TotalItems int               `json:"totalItems"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("page: %w", err)
		}
		return expect(len(page.Items) >= min, fmt.Sprintf("page has %d items (of %d), want at least %d", len(page.Items), page.TotalItems, min))
	}
}

func checkODataValue(b []byte) error {
	var list struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("OData list: %w", err)
	}
	return expect(len(list.Value) > 0, "OData list is empty")
}

// report prints the table.
func (h *harness) report(w io.Writer, took time.Duration) {
	c := h.cfg
	fmt.Fprintf(w, "\nflags: %s\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(w, "quartet load harness: %s, %s/%s, %d CPUs, GOMAXPROCS %d (client and servers share these CPUs), took %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), took.Round(time.Second))
	if h.loadBefore != "" {
		fmt.Fprintf(w, "load average before the run: %s (other processes on the machine add noise)\n", h.loadBefore)
	}
	fmt.Fprintf(w, "each side: %d round(s) of %v warm-up + %v measured, alone on the machine; side-by-side dataset: %d users, %d posts/user, %d comments/post\n\n",
		c.rounds, c.warmup, c.duration, c.small.Users, c.small.PostsPerUser, c.small.CommentsPerPost)
	tw := newTable(w)
	tw.row("SCENARIO", "LOAD", "QUARTET", "P50", "P99", "CPU/REQ", "ERR", "YARDSTICK", "REQ/S", "P50", "P99", "CPU/REQ", "ERR", "MEASURE", "TARGET", "RESULT")
	for _, r := range h.rows {
		cells := []string{r.scenario, r.load}
		cells = append(cells, resultCells(r.quartet)...)
		cells = append(cells, orDash(r.peerName))
		cells = append(cells, resultCells(r.peer)...)
		cells = append(cells, r.measure, orDash(r.target), r.verdict)
		tw.row(cells...)
	}
	tw.flush()
	for _, r := range h.rows {
		for _, res := range []*Result{r.quartet, r.peer} {
			if res != nil && res.FirstErr != nil {
				fmt.Fprintf(w, "  %s: first error: %v\n", r.scenario, res.FirstErr)
			}
		}
	}
	fmt.Fprintln(w, "note: CPU/REQ is the server process's user+system CPU per successful call in the measured phase (/proc/PID/stat); it is less sensitive than REQ/S to other load on the machine")
	if c.quick {
		h.notes = append(h.notes, "-quick: datasets are smaller than the targets name, so the verdicts are indicative only")
	}
	for _, n := range h.notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func resultCells(r *Result) []string {
	if r == nil {
		return []string{"-", "-", "-", "-", "-"}
	}
	cpu := "-"
	if r.ServerCPU > 0 {
		cpu = fmtDur(r.CPUPerCall())
	}
	rate := "-"
	if r.Elapsed > 0 {
		rate = fmt.Sprintf("%.0f/s", r.Throughput())
	}
	return []string{rate, fmtDur(r.Percentile(50)), fmtDur(r.Percentile(99)), cpu, strconv.Itoa(r.Errors)}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtDur prints a latency with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	}
}

// table aligns cells in columns; tabwriter would too, but counts bytes, and µ is two.
type table struct {
	w    io.Writer
	rows [][]string
}

func newTable(w io.Writer) *table { return &table{w: w} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		fmt.Fprintln(t.w, strings.TrimRight(b.String(), " "))
	}
}
