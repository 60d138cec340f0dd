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
	"strings"
	"sync"
	"syscall"
	"time"
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
	load            string
	demo            bool
	shutdownTimeout time.Duration
}

// run is the whole program: it parses args (with environment fallbacks read through
// getenv), serves until ctx ends, then shuts down in order.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	a, err := start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("quartet serving", "http", a.httpAddr)
	<-ctx.Done()
	log.Info("shutting down")
	return a.shutdown()
}

// parseConfig reads flags; a flag not given takes the environment variable
// QUARTET_<NAME> (upper case, dashes as underscores) when that is set.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("quartet", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by main, in one line
	fs.StringVar(&cfg.httpAddr, "http", ":8080", "`address` of the HTTP server (REST, GraphQL, OData)")
	fs.StringVar(&cfg.load, "load", "", "start from the dataset `file` instead of the demo data")
	fs.BoolVar(&cfg.demo, "demo", true, "start from the embedded demo dataset (false: start empty)")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests may take to finish on shutdown")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: quartet [flags]\n\nEvery flag can also be set as QUARTET_<NAME> in the environment; flags win.")
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
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
	return cfg, envErr
}

// app is a started service.
type app struct {
	cfg      config
	log      *slog.Logger
	store    *Store
	httpAddr string
	http     *http.Server
	done     sync.WaitGroup
}

// start loads the store and starts listening; it returns once the service accepts
// connections, so a caller can use the bound addresses at once.
func start(cfg config, log *slog.Logger) (*app, error) {
	store, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return nil, fmt.Errorf("-http %s: %w", cfg.httpAddr, unwrapOpError(err))
	}
	a := &app{cfg: cfg, log: log, store: store, httpAddr: ln.Addr().String()}
	a.http = &http.Server{
		Handler:           NewServer(store, log),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	a.done.Go(func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "error", err)
		}
	})
	return a, nil
}

// shutdown stops accepting, lets in-flight requests finish within the configured
// bound, and ends every subscription.
func (a *app) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.shutdownTimeout)
	defer cancel()
	a.store.CloseFeed()
	err := a.http.Shutdown(ctx)
	a.done.Wait()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// openStore builds the store the configuration asks for.
func openStore(cfg config) (*Store, error) {
	store := NewStore()
	var ds *Dataset
	switch {
	case cfg.load != "":
		f, err := os.Open(cfg.load)
		if err != nil {
			return nil, fmt.Errorf("-load: %w", unwrapPathError(err))
		}
		defer f.Close()
		if ds, err = ReadDataset(f); err != nil {
			return nil, fmt.Errorf("-load %s: %w", cfg.load, err)
		}
	case cfg.demo:
		ds = DemoDataset()
	default:
		return store, nil
	}
	if err := store.Load(ds); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", cmp.Or(cfg.load, "demo"), err)
	}
	return store, nil
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
