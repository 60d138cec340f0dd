package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runFlood is the "flood" subcommand: one client address floods the service with a
// costly GraphQL query over many connections while another address reads single
// users, both in closed loops at once, on the service with its default flags. It
// reports both sides' throughput and latency: the queue must keep the reader fast and
// still serve the flood.
func runFlood(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench flood", flag.ContinueOnError)
	fs.SetOutput(stdout)
	users := fs.Int("users", 20_000, "users in the dataset")
	floodConns := fs.Int("flood-conns", 64, "connections of the flooding client")
	readerConns := fs.Int("reader-conns", 1, "connections of the reading client")
	floodFrom := fs.String("flood-from", "127.0.0.2", "source `address` of the flood")
	readerFrom := fs.String("reader-from", "127.0.0.1", "source `address` of the reader")
	query := fs.String("query", "{ users { id name email } }", "the flood's GraphQL `query`")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured load first")
	extra := fs.String("flags", "", "extra service `flags`, space-separated (e.g. \"-work-slots 0\")")
	bin := fs.String("bin", "", "service `binary` to start instead of building ..")
	repo := fs.String("repo", "..", "`directory` of the quartet repository")
	verbose := fs.Bool("v", false, "show the service's log")
	addr := fs.String("addr", "", "`host:port` of a running service (or of a proxy in front of one) holding at least -users users, instead of starting one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target := *addr
	if target == "" {
		work, err := os.MkdirTemp("", "quartet-flood-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		if *bin == "" {
			*bin = filepath.Join(work, "quartet")
			if err := buildService(ctx, *repo, *bin); err != nil {
				return err
			}
		}
		data := filepath.Join(work, "users.json")
		if err := writeDataset(data, GenConfig{Seed: 1, Users: *users, PostsPerUser: 1}); err != nil {
			return err
		}
		p, err := startService(ctx, *bin, data, strings.Fields(*extra), *verbose)
		if err != nil {
			return err
		}
		defer p.stop()
		target = p.httpAddr
	}

	flood := newH1Client(target, *floodConns, httpRequest{method: "POST", path: "/graphql",
		body:   []byte(`{"query":` + strconv.Quote(*query) + `}`),
		header: map[string][]string{"Content-Type": {"application/json"}}}, false)
	reader := newH1Client(target, *readerConns, httpRequest{method: "GET", pathFor: func(dst []byte, rng *rand.Rand) []byte {
		return strconv.AppendInt(append(dst, "/api/users/"...), int64(1+rng.IntN(*users)), 10)
	}}, false)
	for _, side := range []struct {
		c    *h1Client
		from string
	}{{flood, *floodFrom}, {reader, *readerFrom}} {
		ip := net.ParseIP(side.from)
		if ip == nil {
			return fmt.Errorf("%q is not an IP address", side.from)
		}
		for i := range side.c.conns {
			side.c.conns[i].from = &net.TCPAddr{IP: ip}
		}
		defer side.c.close()
	}
	if body, err := flood.do(ctx, 0, nil, true); err != nil || !strings.Contains(string(body), `"users":[`) {
		return fmt.Errorf("probe of the flood's query: %v %.200s", err, body)
	}

	var results [2]Result
	var wg sync.WaitGroup
	for i, c := range []*h1Client{flood, reader} {
		load := Load{Workers: len(c.conns), Warmup: *warmup, Duration: *duration, Call: c.call}
		wg.Go(func() { results[i] = load.Run(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(stdout, "flood: %d connections from %s, %q on %d users; reader: %d from %s, GET /api/users/{id}; %v measured; service flags %q\n\n",
		*floodConns, *floodFrom, *query, *users, *readerConns, *readerFrom, *duration, *extra)
	fmt.Fprintf(stdout, "| client | req/s | p50 | p99 | max | errors |\n|---|---|---|---|---|---|\n")
	for i, name := range []string{"flood", "reader"} {
		r := results[i]
		if r.OK == 0 {
			return fmt.Errorf("%s: no call succeeded (%d errors, first: %v)", name, r.Errors, r.FirstErr)
		}
		fmt.Fprintf(stdout, "| %s | %.0f | %v | %v | %v | %d |\n", name, r.Throughput(), r.Percentile(50).Round(10*time.Microsecond),
			r.Percentile(99).Round(10*time.Microsecond), r.Latencies[len(r.Latencies)-1].Round(10*time.Microsecond), r.Errors)
		if r.FirstErr != nil {
			fmt.Fprintf(stdout, "  first error: %v\n", r.FirstErr)
		}
	}
	if results[1].Errors > 0 {
		return errors.New("the reader saw errors")
	}
	return nil
}
