// Command quartet serves one store of users, posts, comments, products and orders
// through four interface styles: gRPC, REST, GraphQL and OData.
//
// Usage:
//
//	quartet [flags]            serve (see -h for the flags)
//	quartet token [flags]      print a signed development token
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "quartet:", err)
		}
		os.Exit(2)
	}
}

// config is the service's configuration (CONTRACT.md section 2).
type config struct {
	httpAddr        string
	grpcAddr        string
	load            string
	demo            bool
	dataDir         string
	snapshotBytes   int64
	graphqlMaxDepth int
	wsOrigins       string
	env             string
	streamDelay     time.Duration
	shutdownTimeout time.Duration
	jwt             jwtFlags
	clock           func() time.Time // tests fix the store's clock; nil is the real one
}

// jwtFlags configure bearer-token authentication; it is off when no key is given.
type jwtFlags struct {
	secret, publicKeyFile, issuer, audience string
}

func (j *jwtFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&j.secret, "jwt-secret", "", "HS256 `secret` (at least 32 bytes) for bearer tokens; turns authentication on")
	fs.StringVar(&j.publicKeyFile, "jwt-public-key", "", "PEM `file` with an RSA (RS256) or P-256 (ES256) public key; turns authentication on")
	fs.StringVar(&j.issuer, "jwt-issuer", "", "required token issuer (iss), if set")
	fs.StringVar(&j.audience, "jwt-audience", "", "required token audience (aud), if set")
}

// verifierConfig reads the key the flags name; on is false when authentication is off.
func (j *jwtFlags) verifierConfig() (cfg JWTConfig, on bool, err error) {
	cfg = JWTConfig{Issuer: j.issuer, Audience: j.audience}
	switch {
	case j.secret != "" && j.publicKeyFile != "":
		return cfg, false, errors.New("-jwt-secret and -jwt-public-key exclude each other")
	case j.secret != "":
		cfg.Secret = []byte(j.secret)
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
	var cfg config
	fs := flag.NewFlagSet("quartet", flag.ContinueOnError)
	fs.StringVar(&cfg.httpAddr, "http", ":8080", "`address` of the HTTP server (REST, GraphQL, OData)")
	fs.StringVar(&cfg.grpcAddr, "grpc", ":50051", "`address` of the gRPC server")
	fs.StringVar(&cfg.load, "load", "", "start from the dataset `file` instead of the demo data")
	fs.BoolVar(&cfg.demo, "demo", true, "start from the embedded demo dataset (false: start empty)")
	fs.StringVar(&cfg.dataDir, "data", "", "keep the store durably in `directory` (default: memory only)")
	fs.Int64Var(&cfg.snapshotBytes, "snapshot-bytes", defaultSnapshotBytes, "with -data, journal size that triggers a snapshot")
	fs.StringVar(&cfg.env, "env", "development", "`environment`: development (gRPC reflection on) or production")
	fs.DurationVar(&cfg.streamDelay, "stream-delay", 100*time.Millisecond, "pause after each GetAllUsers item")
	fs.IntVar(&cfg.graphqlMaxDepth, "graphql-max-depth", 12, "deepest field nesting a GraphQL operation may have")
	fs.StringVar(&cfg.wsOrigins, "ws-origins", "", "comma-separated `hosts` (patterns like *.example.com) whose pages may open GraphQL WebSockets; the server's own host always may")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight calls may take to finish on shutdown")
	cfg.jwt.register(fs)
	if err := parseFlags(fs, args, getenv, stdout, "Usage: quartet [flags]"); err != nil {
		return err
	}
	if cfg.env != "development" && cfg.env != "production" {
		return fmt.Errorf("-env must be development or production, not %q", cfg.env)
	}
	if cfg.streamDelay < 0 {
		return errors.New("-stream-delay must not be negative")
	}
	if cfg.graphqlMaxDepth < 1 {
		return errors.New("-graphql-max-depth must be positive")
	}
	if cfg.snapshotBytes < 1 {
		return errors.New("-snapshot-bytes must be positive")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	a, err := start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("quartet serving", "http", a.httpAddr, "grpc", a.grpcAddr, "env", cfg.env, "auth", a.auth != nil)
	<-ctx.Done()
	log.Info("shutting down")
	return a.shutdown()
}

// runToken is "quartet token": it prints an HS256 token for the configured secret.
func runToken(args []string, getenv func(string) string, stdout io.Writer) error {
	var j jwtFlags
	var sub, scope string
	var ttl time.Duration
	fs := flag.NewFlagSet("quartet token", flag.ContinueOnError)
	j.register(fs)
	fs.StringVar(&sub, "sub", "", "the token's subject (sub)")
	fs.StringVar(&scope, "scope", "", "space-separated scopes, e.g. write")
	fs.DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	if err := parseFlags(fs, args, getenv, stdout, "Usage: quartet token -sub NAME [-scope write] [-ttl 1h]"); err != nil {
		return err
	}
	if j.secret == "" {
		return errors.New("token: set -jwt-secret (or QUARTET_JWT_SECRET) to the server's HS256 secret")
	}
	if sub == "" {
		return errors.New("token: -sub is required")
	}
	vc, _, err := j.verifierConfig()
	if err != nil {
		return err
	}
	token, err := SignHS256Token(vc, sub, scope, ttl)
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
	cfg      config
	log      *slog.Logger
	store    *Store
	auth     *authenticator
	httpAddr string
	grpcAddr string
	http     *http.Server
	server   *Server
	grpc     *grpc.Server
	done     sync.WaitGroup
}

// start loads the store and starts listening; it returns once the service accepts
// connections, so a caller can use the bound addresses at once.
func start(cfg config, log *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, log: log}
	vc, on, err := cfg.jwt.verifierConfig()
	if err != nil {
		return nil, err
	}
	if on {
		v, err := NewJWTVerifier(vc)
		if err != nil {
			return nil, err
		}
		a.auth = &authenticator{verifier: v}
	}
	if a.store, err = openStore(cfg, log); err != nil {
		return nil, err
	}
	httpLn, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		a.store.Close()
		return nil, fmt.Errorf("-http %s: %w", cfg.httpAddr, unwrapOpError(err))
	}
	grpcLn, err := net.Listen("tcp", cfg.grpcAddr)
	if err != nil {
		httpLn.Close()
		a.store.Close()
		return nil, fmt.Errorf("-grpc %s: %w", cfg.grpcAddr, unwrapOpError(err))
	}
	a.httpAddr, a.grpcAddr = httpLn.Addr().String(), grpcLn.Addr().String()
	var origins []string
	for _, o := range strings.Split(cfg.wsOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	a.server = NewServer(a.store, log, serverOptions{auth: a.auth, graphqlMaxDepth: cfg.graphqlMaxDepth, wsOrigins: origins})
	a.http = &http.Server{
		Handler:           a.server,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // hijacked WebSockets are exempt: net/http clears deadlines

		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	a.grpc = newGRPCServer(a.store, log, cfg.streamDelay, a.auth, cfg.env == "development")
	a.done.Go(func() {
		if err := a.http.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "error", err)
		}
	})
	a.done.Go(func() {
		if err := a.grpc.Serve(grpcLn); err != nil {
			log.Error("grpc server", "error", err)
		}
	})
	// The load's garbage is gone now; give its memory back while already serving.
	go debug.FreeOSMemory()
	return a, nil
}

// shutdown stops accepting, ends every subscription, and lets in-flight calls finish
// within the configured bound before cutting them off.
func (a *app) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.shutdownTimeout)
	defer cancel()
	a.store.CloseFeed() // first, so subscribers get their last events before the close frame
	grpcDone := make(chan struct{})
	go func() {
		a.grpc.GracefulStop()
		close(grpcDone)
	}()
	wsErr := a.server.Shutdown(ctx)
	err := cmp.Or(a.http.Shutdown(ctx), wsErr)
	select {
	case <-grpcDone:
	case <-ctx.Done():
		a.grpc.Stop()
		<-grpcDone
	}
	a.done.Wait()
	if serr := a.store.Close(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// openStore builds the store the configuration asks for: from DIR when -data names
// one that holds a store, else from -load, the demo data or nothing.
//
// A large load makes much short-lived garbage (the decoded file, the dataset); the
// collector is held back while loading (start's caller gives the memory back to the
// system once the service is up), so start-up is quicker.
func openStore(cfg config, log *slog.Logger) (*Store, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	seed := func() (*Dataset, error) {
		switch {
		case cfg.load != "":
			f, err := os.Open(cfg.load)
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
	withClock := func(s *Store) *Store {
		if cfg.clock != nil {
			s.clock = cfg.clock
		}
		return s
	}
	if cfg.dataDir != "" {
		if cfg.load != "" {
			// Loading over a stored state would silently drop one or the other.
			if has, err := HasStore(cfg.dataDir); err != nil {
				return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
			} else if has {
				return nil, fmt.Errorf("-load %s: -data %s already holds a store; drop -load, or use an empty directory", cfg.load, cfg.dataDir)
			}
		}
		s, err := OpenDurableStore(cfg.dataDir, func() (*Dataset, error) {
			ds, err := seed()
			if err == nil {
				log.Info("initialising the data directory", "dir", cfg.dataDir, "from", cfg.seedName())
			}
			return ds, err
		}, log, cfg.snapshotBytes)
		if err != nil {
			return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
		}
		return withClock(s), nil
	}
	ds, err := seed()
	if err != nil {
		return nil, err
	}
	store := withClock(NewStore())
	if err := store.Load(ds); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", cfg.seedName(), err)
	}
	return store, nil
}

// seedName says where a new store's data comes from.
func (cfg config) seedName() string {
	switch {
	case cfg.load != "":
		return cfg.load
	case cfg.demo:
		return "demo"
	}
	return "empty"
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
