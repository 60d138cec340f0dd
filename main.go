// Command quartet serves one store of users, posts, comments, products and orders
// through four interface styles: gRPC, REST, GraphQL and OData.
//
// Usage:
//
//	quartet [flags]            serve (see -h for the flags)
//	quartet token [flags]      print a signed development token
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"quartet/graphql"
	"quartet/internal/accesslog"
	"quartet/internal/admission"
	"quartet/internal/cors"
	"quartet/internal/jwt"
	"quartet/internal/memory"

	"google.golang.org/grpc/codes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// -h is answered by the usage, printed: it is not an error.
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "quartet:", err)
		os.Exit(2)
	}
}

// config is the service's configuration (docs/configuration.md).
type config struct {
	httpAddr, grpcAddr, load, dataDir string
	demo, repair                      bool
	snapshotBytes                     int64
	graphqlMaxDepth, graphqlMaxCost   int
	graphqlMaxBytes, graphqlBatchMax  int    // batch 0: arrays of operations refused
	graphqlPQFile                     string // the Apollo manifest to pin
	graphqlPQOnly                     bool
	httpMaxConns                      int // 0: the default, or what the open-file limit leaves (httpConnLimit)
	httpPerClient                     int // 0: no limit
	admission                         admission.Limits
	proxies                           admission.Proxies // admission's trusted proxies, parsed
	corsOrigins, wsOrigins            string            // wsOrigins: a deprecated alias, merged
	env, pprof, publicURL             string            // publicURL without a trailing slash
	streamDelay, shutdownTimeout      time.Duration
	grpcLimits                        grpcLimits
	jwt                               jwtFlags
	authReads                         bool             // every read needs a valid token, not only writes
	clock, jwtClock                   func() time.Time // tests fix the store's and the token verifier's clocks; nil is the real one
}

// jwtFlags configure bearer-token authentication, off when no key is given.
type jwtFlags struct {
	secret, secretFile, publicKeyFile, issuer, audience string
}

func (j *jwtFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&j.secret, "jwt-secret", "", "HS256 `secret` of at least 32 bytes, which turns authentication on (docs/authentication.md)")
	fs.StringVar(&j.secretFile, "jwt-secret-file", "", "`file` holding the HS256 secret, unlike -jwt-secret not visible in ps (docs/authentication.md)")
	fs.StringVar(&j.publicKeyFile, "jwt-public-key", "", "PEM `file` of an RS256 or ES256 public key, which turns authentication on (docs/authentication.md)")
	fs.StringVar(&j.issuer, "jwt-issuer", "", "the issuer (iss) every token must name, if set (docs/configuration.md)")
	fs.StringVar(&j.audience, "jwt-audience", "", "the audience (aud) every token must name, if set (docs/configuration.md)")
}

// verifierConfig reads the key the flags name; on is false when authentication is off.
func (j *jwtFlags) verifierConfig() (cfg jwt.Config, on bool, err error) {
	cfg = jwt.Config{Issuer: j.issuer, Audience: j.audience}
	var given []string // the key flags set: one at most
	for _, f := range []struct{ name, value string }{{"-jwt-secret", j.secret}, {"-jwt-secret-file", j.secretFile}, {"-jwt-public-key", j.publicKeyFile}} {
		if f.value != "" {
			given = append(given, f.name)
		}
	}
	switch {
	case len(given) > 1:
		return cfg, false, errors.New(strings.Join(given, " and ") + " exclude each other")
	case j.secret != "":
		cfg.Secret = []byte(j.secret)
	case j.secretFile != "":
		secret, err := os.ReadFile(j.secretFile)
		if err != nil {
			return cfg, false, fmt.Errorf("-jwt-secret-file: %w", unwrapPathError(err))
		}
		if trimmed, ok := bytes.CutSuffix(secret, []byte("\n")); ok { // as editors and echo end a file
			secret = bytes.TrimSuffix(trimmed, []byte("\r"))
		}
		if len(secret) == 0 {
			return cfg, false, fmt.Errorf("-jwt-secret-file: %s is empty", j.secretFile)
		}
		cfg.Secret = secret
	case j.publicKeyFile != "":
		pem, err := os.ReadFile(j.publicKeyFile)
		if err != nil {
			return cfg, false, fmt.Errorf("-jwt-public-key: %w", unwrapPathError(err))
		}
		cfg.PublicKeyPEM = pem
	default:
		return cfg, false, nil
	}
	return cfg, true, nil
}

// run is the whole program: it parses args (with environment fallbacks read through
// getenv), serves until ctx ends, then shuts down in order.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "token" {
		return runToken(args[1:], getenv, stdout)
	}
	cfg := config{grpcLimits: defaultGRPCLimits(), admission: admission.Defaults()}
	fs := flag.NewFlagSet("quartet", flag.ContinueOnError)
	fs.StringVar(&cfg.httpAddr, "http", "", "`address` of the HTTP server: REST, GraphQL, OData (default localhost:8080 in development, :8080 in production; docs/configuration.md)")
	fs.StringVar(&cfg.grpcAddr, "grpc", "", "`address` of the gRPC server (default localhost:50051 in development, :50051 in production; docs/configuration.md)")
	fs.IntVar(&cfg.httpMaxConns, "http-max-conns", 0, fmt.Sprintf("most HTTP connections open at once, WebSockets included (default %d, or less as the open-file limit leaves room; docs/limits.md)", defaultHTTPMaxConns))
	fs.IntVar(&cfg.httpPerClient, "http-max-conns-per-client", defaultHTTPMaxConnsPerClient, "most HTTP connections of one client address open at once, 0 for no limit (docs/limits.md)")
	fs.StringVar(&cfg.load, "load", "", "start from the dataset `file` instead of the demo data (docs/data.md)")
	fs.BoolVar(&cfg.demo, "demo", true, "start from the embedded demo dataset; false starts empty (docs/data.md)")
	fs.StringVar(&cfg.dataDir, "data", "", "keep the store durably in `directory`; without it, in memory only (docs/durability.md)")
	fs.Int64Var(&cfg.snapshotBytes, "snapshot-bytes", defaultSnapshotBytes, "with -data, the journal size that triggers a snapshot (docs/durability.md)")
	fs.BoolVar(&cfg.repair, "repair", false, "with -data, cut a damaged journal at the damage instead of refusing to start (docs/durability.md)")
	fs.StringVar(&cfg.env, "env", "development", "`environment`: development or production (docs/configuration.md)")
	fs.StringVar(&cfg.publicURL, "public-url", "", "`URL` clients reach the service at, which starts OData context URLs (docs/odata.md)")
	fs.StringVar(&cfg.pprof, "pprof", "auto", "serve /debug/pprof/ to this machine: on, off or auto (docs/configuration.md)")
	fs.DurationVar(&cfg.streamDelay, "stream-delay", 100*time.Millisecond, "pause after each GetAllUsers item (docs/grpc.md)")
	fs.IntVar(&cfg.grpcLimits.maxConns, "grpc-max-conns", cfg.grpcLimits.maxConns, "most gRPC connections open at once; more wait to be accepted (docs/limits.md)")
	fs.IntVar(&cfg.grpcLimits.maxConnsPerClient, "grpc-max-conns-per-client", cfg.grpcLimits.maxConnsPerClient, "most gRPC connections of one client address open at once, 0 for no limit (docs/limits.md)")
	fs.DurationVar(&cfg.grpcLimits.firstCallTimeout, "grpc-first-call-timeout", cfg.grpcLimits.firstCallTimeout, "close a gRPC connection that has made no call this long after it was accepted (docs/limits.md)")
	fs.IntVar(&cfg.grpcLimits.maxStreams, "grpc-max-streams", cfg.grpcLimits.maxStreams, "most gRPC calls at once on one connection (docs/limits.md)")
	fs.DurationVar(&cfg.grpcLimits.maxIdle, "grpc-max-idle", cfg.grpcLimits.maxIdle, "close a gRPC connection that had no call for this long (docs/limits.md)")
	fs.IntVar(&cfg.graphqlMaxDepth, "graphql-max-depth", 12, "deepest field nesting a GraphQL operation may have (docs/limits.md)")
	fs.IntVar(&cfg.graphqlMaxCost, "graphql-max-cost", graphql.DefaultLimits.MaxCost, "largest estimated `cost` of a GraphQL operation, refused before it runs (docs/limits.md)")
	fs.IntVar(&cfg.graphqlMaxBytes, "graphql-max-response-bytes", graphql.DefaultLimits.MaxResponseBytes, "largest GraphQL answer in `bytes` (docs/limits.md)")
	fs.IntVar(&cfg.graphqlBatchMax, "graphql-batch-max", 0, "most GraphQL operations one POST may carry as a JSON array, at most 100; 0 refuses arrays (docs/graphql.md)")
	fs.StringVar(&cfg.graphqlPQFile, "graphql-persisted-queries", "", "Apollo persisted query manifest `file`, whose operations are known by hash from the start (docs/graphql.md)")
	fs.BoolVar(&cfg.graphqlPQOnly, "graphql-persisted-only", false, "GraphQL over HTTP runs only the operations of -graphql-persisted-queries (docs/graphql.md)")
	fs.StringVar(&cfg.corsOrigins, "cors-origins", "", "comma-separated `origins` whose browser pages may call every HTTP surface (docs/configuration.md)")
	fs.StringVar(&cfg.wsOrigins, "ws-origins", "", "deprecated: merged into -cors-origins")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight calls may take to finish on shutdown (docs/configuration.md)")
	cfg.admission.Register(fs)
	cfg.jwt.register(fs)
	fs.BoolVar(&cfg.authReads, "auth-reads", false, "with authentication on, every read on every surface needs a valid token, not only writes and gRPC GetUser and GetAllUsers (docs/authentication.md)")
	if err := parseFlags(fs, args, getenv, stdout, usage); err != nil {
		return err
	}
	if err := cfg.check(fs); err != nil {
		return err
	}
	// The log is slog.TextHandler's key=value lines, batched (accesslog): one line per
	// HTTP request (msg=http) and one per gRPC call (msg=grpc).
	logOut := accesslog.NewWriter(stderr)
	defer logOut.Close()
	log := slog.New(slog.NewTextHandler(logOut, nil))
	a, err := start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("quartet serving", "http", a.httpAddr, "grpc", a.grpcAddr, "env", cfg.env, "auth", a.auth != nil)
	if w := a.server.opts.warning; w != "" {
		log.Warn(w)
	}
	<-ctx.Done()
	log.Info("shutting down")
	return a.shutdown()
}

// check refuses a configuration that breaks a rule, with the first rule it breaks,
// and completes the rest: listen addresses, the public URL, the proxies.
func (cfg *config) check(fs *flag.FlagSet) error {
	u, urlErr := url.Parse(cfg.publicURL)
	badURL := cfg.publicURL != "" && (urlErr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(cfg.publicURL, " \"<>\\^`{|}"))
	httpMaxConnsGiven := false
	fs.Visit(func(f *flag.Flag) { httpMaxConnsGiven = httpMaxConnsGiven || f.Name == "http-max-conns" })
	l := cfg.admission
	proxies, proxiesErr := admission.ParseProxies(l.TrustedProxies, l.ProxyHeader)
	g := cfg.grpcLimits
	for _, rule := range []struct {
		broken bool
		msg    string
	}{
		{cfg.env != "development" && cfg.env != "production", fmt.Sprintf("-env must be development or production, not %q", cfg.env)},
		{cfg.pprof != "auto" && cfg.pprof != "on" && cfg.pprof != "off", fmt.Sprintf("-pprof must be auto, on or off, not %q", cfg.pprof)},
		{badURL, fmt.Sprintf("-public-url must be an http or https URL with a host and no query, fragment, user or space, such as https://api.example.com, not %q", cfg.publicURL)},
		{cfg.streamDelay < 0 || cfg.shutdownTimeout < 0, "-stream-delay and -shutdown-timeout must not be negative"},
		{g.maxConns < 1, "-grpc-max-conns must be positive"},
		{g.maxConnsPerClient < 0, "-grpc-max-conns-per-client must not be negative (0: no limit)"},
		{g.firstCallTimeout <= 0, "-grpc-first-call-timeout must be positive"},
		{g.maxStreams < 1 || g.maxStreams > 1_000_000, "-grpc-max-streams must be between 1 and 1000000"},
		{g.maxIdle <= 0, "-grpc-max-idle must be positive"},
		{cfg.graphqlMaxDepth < 1, "-graphql-max-depth must be positive"},
		{cfg.graphqlMaxCost < 1 || cfg.graphqlMaxBytes < 1, "-graphql-max-cost and -graphql-max-response-bytes must be positive"},
		{cfg.graphqlBatchMax < 0 || cfg.graphqlBatchMax > maxGraphQLBatch, fmt.Sprintf("-graphql-batch-max must be between 0 (no batching) and %d", maxGraphQLBatch)},
		{cfg.graphqlPQOnly && cfg.graphqlPQFile == "", "-graphql-persisted-only needs -graphql-persisted-queries, the file of the operations to allow"},
		{cfg.httpMaxConns < 0 || cfg.httpMaxConns == 0 && httpMaxConnsGiven, "-http-max-conns must be positive"},
		{cfg.httpPerClient < 0, "-http-max-conns-per-client must not be negative (0: no limit)"},
		{min(l.WorkSlots, l.ClientSlots, l.ClientWaiting) < 0, "-work-slots, -client-slots and -client-waiting must not be negative"},
		{min(l.ClientAnswerBytes, l.TotalAnswerBytes) < admission.AnswerGrace, fmt.Sprintf("-client-answer-bytes and -answer-bytes must be at least %d", admission.AnswerGrace)},
		{proxiesErr != nil, fmt.Sprint("-trusted-proxies: ", proxiesErr)},
		{cfg.snapshotBytes < 1, "-snapshot-bytes must be positive"},
		{cfg.repair && cfg.dataDir == "", "-repair needs -data: it repairs a data directory's journal"},
		{min(l.WSSockets, l.WSSocketsPerClient, l.WSOperations, l.WSOperationsPerClient) < 0,
			"-ws-max-sockets, -ws-max-sockets-per-client, -ws-max-subscriptions and -ws-max-subscriptions-per-client must not be negative (0: no limit)"},
	} {
		if rule.broken {
			return errors.New(rule.msg)
		}
	}
	cfg.publicURL = strings.TrimSuffix(cfg.publicURL, "/")
	cfg.httpAddr = cmp.Or(cfg.httpAddr, defaultListenHost(cfg.env)+":8080")
	cfg.grpcAddr = cmp.Or(cfg.grpcAddr, defaultListenHost(cfg.env)+":50051")
	cfg.proxies = proxies
	return nil
}

const (
	// defaultHTTPMaxConns is -http-max-conns's default: each connection holds a
	// goroutine and tens of KiB at most, so 20,000 stay well under a gigabyte.
	defaultHTTPMaxConns = 20_000
	// defaultHTTPMaxConnsPerClient leaves room for the 100 WebSockets one address may
	// have and as many browsers again behind one NAT.
	defaultHTTPMaxConnsPerClient = 256
	// fileReserve is the open files kept out of the HTTP connections' share beside
	// gRPC's: standard streams, listeners, the poller, the journal and a snapshot,
	// the data directory's lock, connections being refused, and room to spare.
	fileReserve = 128
)

// httpConnLimit returns the HTTP connection cap: requested, or when that is 0 the
// default, within what the open-file limit fileLimit (0: unknown) leaves after
// grpcConns and fileReserve. The default is lowered to fit, and lowered says so; an
// explicit cap the limit cannot hold is refused, so that the operator learns at
// start-up, not from "too many open files" under load.
func httpConnLimit(requested, grpcConns int, fileLimit uint64) (conns int, lowered bool, err error) {
	conns = cmp.Or(requested, defaultHTTPMaxConns)
	if fileLimit == 0 || fileLimit >= uint64(conns+grpcConns+fileReserve) {
		return conns, false, nil
	}
	room := int64(fileLimit) - int64(grpcConns) - fileReserve
	switch {
	case room < 1:
		return 0, false, fmt.Errorf("the open-file limit (%d) leaves no room for HTTP connections beside -grpc-max-conns %d and the %d files kept for the process; raise the limit (ulimit -n, systemd's LimitNOFILE=) or lower -grpc-max-conns",
			fileLimit, grpcConns, fileReserve)
	case requested != 0:
		return 0, false, fmt.Errorf("-http-max-conns %d is more than the open-file limit (%d) leaves room for beside -grpc-max-conns %d and the %d files kept for the process: at most %d; raise the limit (ulimit -n, systemd's LimitNOFILE=) or lower -http-max-conns",
			requested, fileLimit, grpcConns, fileReserve, room)
	}
	return int(room), true, nil
}

// defaultListenHost is where the servers listen unless -http or -grpc says otherwise:
// a development service, often without authentication, is reachable from this
// machine only.
func defaultListenHost(env string) string {
	if env == "production" {
		return ""
	}
	return "localhost"
}

// profiling says whether /debug/pprof/ is served: with authentication on, the service
// holds something worth guarding, so auto leaves it off.
func (c config) profiling(authOn bool) bool {
	return c.pprof == "on" || c.pprof == "auto" && c.env == "development" && !authOn
}

// httpWriteTimeout bounds an HTTP answer; a gRPC-Web call ends 5 s before it, with its status.
const httpWriteTimeout = 60 * time.Second

// openInProductionWarning is logged and shown by /healthz when a production service
// runs without authentication: right behind a gateway that authenticates, otherwise
// a mistake.
const openInProductionWarning = "authentication is off in production: anyone who reaches the service can change its data (set -jwt-secret or -jwt-public-key)"

// usage heads "quartet -h": the service and its one subcommand.
const usage = `Usage: quartet [flags]          serve, with the flags below
       quartet token [flags]    print a bearer token signed with the HS256 secret (quartet token -h)`

// runToken is "quartet token": it prints an HS256 token for the configured secret.
func runToken(args []string, getenv func(string) string, stdout io.Writer) error {
	var j jwtFlags
	var sub, scope string
	var ttl time.Duration
	fs := flag.NewFlagSet("quartet token", flag.ContinueOnError)
	// What signs, under the server's names; a public key only verifies.
	fs.StringVar(&j.secret, "jwt-secret", "", "the server's HS256 `secret` to sign with")
	fs.StringVar(&j.secretFile, "jwt-secret-file", "", "`file` holding the server's HS256 secret (one trailing newline ignored)")
	fs.StringVar(&j.issuer, "jwt-issuer", "", "the token's issuer (iss), as the server's -jwt-issuer requires")
	fs.StringVar(&j.audience, "jwt-audience", "", "the token's audience (aud), as the server's -jwt-audience requires")
	fs.StringVar(&sub, "sub", "", "the token's subject (sub)")
	fs.StringVar(&scope, "scope", "", "space-separated scopes, e.g. write")
	fs.DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	if err := parseFlags(fs, args, getenv, stdout, "Usage: quartet token -sub NAME [-scope write] [-ttl 1h]"); err != nil {
		return err
	}
	if j.secret == "" && j.secretFile == "" {
		return errors.New("token: set -jwt-secret or -jwt-secret-file (or QUARTET_JWT_SECRET[_FILE]) to the server's HS256 secret")
	}
	if sub == "" {
		return errors.New("token: -sub is required")
	}
	vc, _, err := j.verifierConfig()
	if err != nil {
		return err
	}
	token, err := jwt.SignHS256(vc, sub, scope, ttl)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, token)
	return err
}

// parseFlags parses args into fs; a flag not given takes the environment variable
// QUARTET_<NAME> (upper case, dashes as underscores) when that is set. Errors are
// returned, not printed, so main reports them in one line; -h prints the usage.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, stdout io.Writer, usage string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, usage+"\n\nEvery flag can also be set as QUARTET_<NAME> in the environment; flags win.")
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "QUARTET_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && !given[f.Name] && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("invalid value %q for %s: %v", v, env, err)
			}
		}
	})
	return envErr
}

// app is a started service.
type app struct {
	cfg                config
	log                *slog.Logger
	store              *Store
	auth               *authenticator
	httpAddr, grpcAddr string
	http               *http.Server
	server             *Server
	grpc               *grpcServer
	door               *admission.Door // every server's entrance
	done               sync.WaitGroup
	quit               chan struct{}       // closed on shutdown, for the background work in done
	httpLn, grpcLn     *admission.Listener // bound and count the open connections
}

// start loads the store and starts listening; it returns once the service accepts
// connections, so a caller can use the bound addresses at once.
func start(cfg config, log *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, log: log, quit: make(chan struct{})}
	fileLimit := admission.OpenFileLimit()
	httpMaxConns, lowered, err := httpConnLimit(cfg.httpMaxConns, cfg.grpcLimits.maxConns, fileLimit)
	if err != nil {
		return nil, err
	}
	if lowered {
		log.Info("the open-file limit leaves room for fewer HTTP connections than the default",
			"max", httpMaxConns, "default", defaultHTTPMaxConns, "openFileLimit", fileLimit)
	}
	if a.auth, err = newAuthenticator(cfg); err != nil {
		return nil, err
	}
	var origins cors.Policy // -ws-origins is a deprecated alias: the two lists are merged
	if err := cmp.Or(origins.Add("-cors-origins", cfg.corsOrigins), origins.Add("-ws-origins", cfg.wsOrigins)); err != nil {
		return nil, err
	}
	if a.store, err = openStore(cfg, log); err != nil {
		return nil, err
	}
	if err := a.listen(httpMaxConns); err != nil {
		a.store.Close()
		return nil, err
	}
	if err := a.newServers(origins); err != nil {
		a.httpLn.Close()
		a.grpcLn.Close()
		a.store.Close()
		return nil, err
	}
	a.serve()
	return a, nil
}

// newAuthenticator checks tokens with the key the flags name; nil: authentication off.
func newAuthenticator(cfg config) (*authenticator, error) {
	vc, on, err := cfg.jwt.verifierConfig()
	if err != nil {
		return nil, err
	}
	if !on {
		if cfg.authReads {
			return nil, errors.New("-auth-reads needs a key: -jwt-secret or -jwt-public-key")
		}
		return nil, nil
	}
	vc.Now = cfg.jwtClock
	v, err := jwt.New(vc)
	if err != nil {
		return nil, err
	}
	return &authenticator{verifier: v, reads: cfg.authReads}, nil
}

// listen binds both ports, each behind a listener that bounds its connections, and
// makes the one door both servers enter by.
func (a *app) listen(httpMaxConns int) error {
	cfg := a.cfg
	httpLn, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("-http %s: %w", cfg.httpAddr, unwrapOpError(err))
	}
	grpcLn, err := net.Listen("tcp", cfg.grpcAddr)
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("-grpc %s: %w", cfg.grpcAddr, unwrapOpError(err))
	}
	a.httpAddr, a.grpcAddr = httpLn.Addr().String(), grpcLn.Addr().String()
	// One door for both servers: a client's HTTP requests, gRPC calls and WebSocket
	// messages share its slots and budgets.
	a.door = admission.NewDoor(cfg.admission, cfg.proxies, a.log)
	a.httpLn = admission.NewListener(httpLn, "HTTP", httpMaxConns, a.log)
	a.httpLn.PerClient = cfg.httpPerClient
	a.grpcLn = admission.NewListener(grpcLn, "gRPC", cfg.grpcLimits.maxConns, a.log)
	a.grpcLn.PerClient = cfg.grpcLimits.maxConnsPerClient
	// A trusted proxy carries many clients' connections: only the overall caps hold it.
	a.httpLn.Exempt, a.grpcLn.Exempt = cfg.proxies.Contains, cfg.proxies.Contains
	a.grpcLn.FirstUse = cfg.grpcLimits.firstCallTimeout
	// A newcomer takes an idle connection's place (callLog tells which are idle):
	// grpc-go's MaxConnectionIdle would also end the pauses clients rely on.
	a.grpcLn.Shed = true
	return nil
}

// newServers builds the gRPC server and the HTTP one, which serves gRPC-Web too.
func (a *app) newServers(origins cors.Policy) error {
	cfg, log := a.cfg, a.log
	warning := ""
	if cfg.env == "production" && a.auth == nil {
		warning = openInProductionWarning
	}
	m := newMetrics() // one set for both servers: /metrics reports gRPC calls too
	a.grpc = newGRPCServer(a.store, log, cfg.streamDelay, a.auth, cfg.env == "development", cfg.grpcLimits, m, a.door, a.grpcLn)
	a.server = NewServer(a.store, log, serverOptions{metrics: m, pprof: cfg.profiling(a.auth != nil), auth: a.auth, graphqlMaxDepth: cfg.graphqlMaxDepth, graphqlMaxCost: cfg.graphqlMaxCost, graphqlMaxBytes: cfg.graphqlMaxBytes, graphqlBatchMax: cfg.graphqlBatchMax, persistedOnly: cfg.graphqlPQOnly, origins: origins,
		door: a.door, proxies: cfg.proxies, warning: warning, publicURL: cfg.publicURL, grpcAddr: a.grpcAddr,
		grpcWeb: cfg.grpcLimits.webHandler(a.grpc.Server, a.door)})
	if cfg.graphqlPQFile != "" {
		if err := a.server.pinPersistedQueries(cfg.graphqlPQFile, log); err != nil {
			return err
		}
	}
	a.http = &http.Server{
		Handler:           origins.Handler(a.server),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      httpWriteTimeout, // hijacked WebSockets are exempt: net/http clears deadlines
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10, // net/http allows 4096 bytes more before it answers 431
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return nil
}

// serve starts both servers and the background work.
func (a *app) serve() {
	a.done.Go(func() {
		if err := a.http.Serve(a.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server", "error", err)
		}
	})
	a.done.Go(func() {
		if err := a.grpc.Serve(a.grpcLn); err != nil {
			a.log.Error("grpc server", "error", err)
		}
	})
	// The load's garbage is gone: give its memory back while already serving, and
	// after every burst to come.
	go debug.FreeOSMemory()
	a.done.Go(func() { memory.Manage(a.quit) })
}

// shutdown stops accepting, ends every subscription, and lets in-flight calls finish
// within -shutdown-timeout before cutting them off. Cutting them is no failure: it is
// logged, and shutdown still returns nil, so the process exits 0.
func (a *app) shutdown() error {
	bound, cancel := context.WithTimeout(context.Background(), a.cfg.shutdownTimeout)
	defer cancel()
	close(a.quit)
	a.store.CloseFeed() // first, so subscribers get their last events before the close frame
	// HTTP (its WebSockets first) and gRPC drain side by side until done or cut.
	cut, cutNow := context.WithCancel(context.Background())
	defer cutNow()
	httpDone := make(chan error, 1)
	go func() {
		wsErr := a.server.Shutdown(cut) // once cut, it drops the WebSockets left
		httpDone <- cmp.Or(a.http.Shutdown(cut), wsErr)
	}()
	grpcDone := make(chan error, 1)
	go func() {
		a.grpc.health.shutdown() // first: a client watching it stops sending new calls
		a.grpc.GracefulStop()
		grpcDone <- nil
	}()
	var err error
	for httpDone != nil || grpcDone != nil {
		select {
		case err = <-httpDone:
			httpDone = nil
		case <-grpcDone:
			grpcDone = nil
		case <-bound.Done():
			a.log.Warn("shutdown: calls still running after -shutdown-timeout are cut",
				"timeout", a.cfg.shutdownTimeout, "httpConnections", a.httpLn.Open(), "grpcConnections", a.grpcLn.Open())
			cutNow()
			a.http.Close() // http.Shutdown leaves busy connections open
			a.grpc.Stop()
			for _, done := range []chan error{httpDone, grpcDone} {
				if done != nil {
					<-done
				}
			}
			httpDone, grpcDone, err = nil, nil, nil
		}
	}
	a.done.Wait()
	a.door.Close()
	if err = cmp.Or(err, a.store.Close()); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// openStore builds the store the configuration asks for: from -data when it holds a
// store, else from -load, the demo data or nothing.
func openStore(cfg config, log *slog.Logger) (*Store, error) {
	seed := func() (*Dataset, error) {
		switch {
		case cfg.load != "":
			f, err := os.OpenFile(cfg.load, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO would block, to be refused
			if err != nil {
				return nil, fmt.Errorf("-load: %w", unwrapPathError(err))
			}
			defer f.Close()
			ds, err := ReadDataset(f)
			if err != nil {
				return nil, fmt.Errorf("-load %s: %w", cfg.load, err)
			}
			return ds, nil
		case cfg.demo:
			return DemoDataset(), nil
		}
		return &Dataset{}, nil
	}
	seedName := "empty"
	if cfg.demo {
		seedName = "demo"
	}
	withClock := func(s *Store) *Store {
		if cfg.clock != nil {
			s.clock = cfg.clock
		}
		return s
	}
	if cfg.dataDir == "" {
		ds, err := seed()
		if err != nil {
			return nil, err
		}
		store := withClock(NewStore())
		if err := store.Load(ds); err != nil {
			if cfg.load != "" { // named as the decoding's errors name it
				return nil, fmt.Errorf("-load %s: %w", cfg.load, err)
			}
			return nil, fmt.Errorf("dataset %s: %w", seedName, err)
		}
		return store, nil
	}
	if cfg.load != "" { // loading over a stored state would silently drop one or the other
		if has, err := HasStore(cfg.dataDir); err != nil {
			return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
		} else if has {
			return nil, fmt.Errorf("-load %s: -data %s already holds a store; drop -load, or use an empty directory", cfg.load, cfg.dataDir)
		}
	}
	s, err := OpenDurableStore(cfg.dataDir, func() (*Dataset, error) {
		ds, err := seed()
		if err == nil {
			log.Info("initialising the data directory", "dir", cfg.dataDir, "from", cmp.Or(cfg.load, seedName))
		}
		return ds, err
	}, log, DurableOptions{SnapshotBytes: cfg.snapshotBytes, Repair: cfg.repair})
	if err != nil {
		return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
	}
	return withClock(s), nil
}

// unwrapOpError drops the "listen tcp" prefix that would repeat what the caller says.
func unwrapOpError(err error) error {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Err != nil {
		if sys, ok := errors.AsType[*os.SyscallError](op.Err); ok {
			return sys.Err
		}
		return op.Err
	}
	return err
}

func unwrapPathError(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// kindCodes is each Kind's code on each surface: the HTTP status (every HTTP
// surface), the gRPC code, GraphQL's extensions.code and the OData error code. It
// lives with the wiring, not in errors.go, so that the domain imports no transport.
var kindCodes = [...]struct {
	http    int
	grpc    codes.Code
	graphql string
	odata   string
}{
	KindInternal:        {http.StatusInternalServerError, codes.Internal, "INTERNAL_SERVER_ERROR", "InternalServerError"},
	KindInvalid:         {http.StatusBadRequest, codes.InvalidArgument, "BAD_USER_INPUT", "BadRequest"},
	KindNotFound:        {http.StatusNotFound, codes.NotFound, "NOT_FOUND", "NotFound"},
	KindConflict:        {http.StatusConflict, codes.AlreadyExists, "CONFLICT", "Conflict"},
	KindUnauthenticated: {http.StatusUnauthorized, codes.Unauthenticated, "UNAUTHENTICATED", "Unauthorized"},
	KindForbidden:       {http.StatusForbidden, codes.PermissionDenied, "FORBIDDEN", "Forbidden"},
	KindPrecondition:    {http.StatusPreconditionFailed, codes.FailedPrecondition, "PRECONDITION_FAILED", "PreconditionFailed"},
	KindExhausted:       {http.StatusTooManyRequests, codes.ResourceExhausted, "TOO_MANY_REQUESTS", "TooManyRequests"},
}
