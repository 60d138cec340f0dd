// Command bench is quartet's load harness. It builds the service, generates
// deterministic datasets, starts the service and its yardsticks (a bare net/http
// server, a bare grpc-go server and a graph-gophers/graphql-go server, each in a
// process of its own), drives each in turn from this process over HTTP/1.1
// keep-alive (a lean client of its own, http1.go) or gRPC, and prints one table of
// throughput, latency and the ratios the performance targets are stated in.
//
// Usage (from the bench directory):
//
//	go run . [flags]                  run the harness (see -h)
//	go run . gen [flags] -o FILE      write a generated dataset
//	go run . hostile [flags]          the hostile-load check (hostile.go)
//	go run . startup [flags]          start-up time and memory on the large dataset (startup.go)
//	go run . flood [flags]            one address floods, another reads: the queue's fairness (flood.go)
//	go run . peer -kind K -load FILE  serve as a yardstick (the harness does this)
//	go run . legit -addr HOST:PORT    the hostile check's legitimate client (the check does this)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	err := dispatch(os.Args[1:])
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func dispatch(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "gen":
			return runGen(args[1:])
		case "peer":
			return runPeer(args[1:])
		case "legit":
			return runLegit(args[1:], os.Stdin, os.Stdout)
		case "hostile":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runHostile(ctx, args[1:], os.Stdout)
		case "flood":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runFlood(ctx, args[1:], os.Stdout)
		case "startup":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runStartup(ctx, args[1:], os.Stdout)
		case "run":
			args = args[1:]
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runHarness(ctx, args, os.Stdout)
}

// runGen is the "gen" subcommand.
func runGen(args []string) error {
	fs := flag.NewFlagSet("bench gen", flag.ContinueOnError)
	cfg := genFlags(fs, GenConfig{Seed: 1, Users: 1000, PostsPerUser: 5, CommentsPerPost: 3, Products: 1000, Orders: 1000})
	out := fs.String("o", "", "output `file` (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return Generate(os.Stdout, *cfg)
	}
	return writeDataset(*out, *cfg)
}

// genFlags defines on fs the flags of a generated dataset, with defaults def, and
// returns the configuration they fill.
func genFlags(fs *flag.FlagSet, def GenConfig) *GenConfig {
	cfg := &GenConfig{}
	fs.Uint64Var(&cfg.Seed, "seed", def.Seed, "random `seed`; the same seed and sizes give the same file")
	fs.IntVar(&cfg.Users, "users", def.Users, "number of users")
	fs.IntVar(&cfg.PostsPerUser, "posts-per-user", def.PostsPerUser, "posts per user")
	fs.IntVar(&cfg.CommentsPerPost, "comments-per-post", def.CommentsPerPost, "comments per post")
	fs.IntVar(&cfg.Products, "products", def.Products, "number of products")
	fs.IntVar(&cfg.Orders, "orders", def.Orders, "number of orders")
	return cfg
}

// writeDataset generates cfg into the file path.
func writeDataset(path string, cfg GenConfig) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Generate(f, cfg); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
