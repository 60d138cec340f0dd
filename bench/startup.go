package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The start-up targets: on 1,000,000 users, 100,000 products and 200,000
// orders, the service serves within 3 s and holds under 650 MiB.
const (
	startupTarget = 3 * time.Second
	rssTarget     = 650 << 20
)

// startupRun is what one start of the service showed.
type startupRun struct {
	startup  time.Duration // exec to the first /healthz 200
	cpu      time.Duration // CPU time the service had used then: less sensitive to other load
	ready    memory        // VmRSS and VmHWM then
	settled  memory        // after -settle, once the service's memory check has run
	records  string        // what /metrics says was loaded
	settleOK bool          // settled was read
}

// runStartup is the "startup" subcommand: it generates the large dataset (or takes
// -data), then starts the service on it -n times, one at a time, and reports each
// start's time to serve and its resident memory, then their median and range. The
// memory is read twice: when /healthz first answers, with the loader's garbage still
// in the heap, and -settle later, after the service's memory check (memory.go) has
// collected it and given it back: the size it keeps while idle.
func runStartup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench startup", flag.ContinueOnError)
	fs.SetOutput(stdout)
	n := fs.Int("n", 5, "number of starts")
	cfg := genFlags(fs, GenConfig{Seed: 1, Users: 1_000_000, Products: 100_000, Orders: 200_000})
	data := fs.String("data", "", "dataset `file` to load instead of generating one")
	bin := fs.String("bin", "", "service `binary` to start instead of building ..")
	repo := fs.String("repo", "..", "`directory` of the quartet repository (the service is built from it)")
	settle := fs.Duration("settle", 12*time.Second, "wait after start-up before reading the settled memory (0: skip)")
	verbose := fs.Bool("v", false, "show the service's log")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *n < 1 {
		return fmt.Errorf("usage: bench startup [-n N] [flags]; see -h")
	}
	work, err := os.MkdirTemp("", "quartet-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	if *bin == "" {
		*bin = filepath.Join(work, "quartet")
		logf("building the service from %s", *repo)
		if err := buildService(ctx, *repo, *bin); err != nil {
			return err
		}
	}
	if *data == "" {
		*data = filepath.Join(work, "large.json")
		t0 := time.Now()
		if err := writeDataset(*data, *cfg); err != nil {
			return err
		}
		logf("generated %+v in %v", *cfg, time.Since(t0).Round(time.Millisecond))
	}
	fi, err := os.Stat(*data)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dataset %s: %.1f MiB\n", *data, mib(fi.Size()))

	var runs []startupRun
	for i := range *n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		run, err := startOnce(ctx, *bin, *data, *settle, *verbose)
		if err != nil {
			return fmt.Errorf("start %d: %w", i+1, err)
		}
		runs = append(runs, run)
		line := fmt.Sprintf("start %d: %v to serve (CPU %v), VmRSS %.0f MiB (peak %.0f) when serving", i+1,
			run.startup.Round(time.Millisecond), run.cpu, mib(run.ready.rss), mib(run.ready.peak))
		if run.settleOK {
			line += fmt.Sprintf(", %.0f MiB after %v", mib(run.settled.rss), *settle)
		}
		fmt.Fprintln(stdout, line+"; loaded "+run.records)
	}
	printStartupSummary(stdout, runs, *settle)
	return nil
}

// startOnce starts the service on data, measures it and stops it.
func startOnce(ctx context.Context, bin, data string, settle time.Duration, verbose bool) (startupRun, error) {
	p, err := startService(ctx, bin, data, nil, verbose)
	if err != nil {
		return startupRun{}, err
	}
	defer p.stop()
	run := startupRun{startup: p.startup}
	if run.cpu, err = p.cpuTime(); err != nil {
		return run, err
	}
	if run.ready, err = p.memory(); err != nil {
		return run, err
	}
	if run.records, err = storeRecords(p.httpBase()); err != nil {
		return run, err
	}
	if settle > 0 {
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return run, ctx.Err()
		}
		if run.settled, err = p.memory(); err != nil {
			return run, err
		}
		run.settleOK = true
	}
	return run, nil
}

// storeRecords reads the quartet_store_records gauges from /metrics, as
// "users=N products=N ...".
func storeRecords(base string) (string, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var parts []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		// quartet_store_records{table="users"} 1e+06
		line, ok := strings.CutPrefix(sc.Text(), `quartet_store_records{table="`)
		if !ok {
			continue
		}
		table, value, ok := strings.Cut(line, `"} `)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return "", fmt.Errorf("/metrics: %q: %w", sc.Text(), err)
		}
		parts = append(parts, fmt.Sprintf("%s=%d", table, int64(f)))
	}
	return strings.Join(parts, " "), sc.Err()
}

// printStartupSummary prints the median and range of each figure, with the targets'
// verdicts.
func printStartupSummary(w io.Writer, runs []startupRun, settle time.Duration) {
	var times, cpus []time.Duration
	var ready, settled []int64
	for _, r := range runs {
		times, cpus = append(times, r.startup), append(cpus, r.cpu)
		ready = append(ready, r.ready.rss)
		if r.settleOK {
			settled = append(settled, r.settled.rss)
		}
	}
	t := spreadOf(times)
	fmt.Fprintf(w, "start-up (exec to /healthz 200), %d starts: median %v, range %v to %v; target < %v: %s\n",
		len(runs), t.median.Round(time.Millisecond), t.min.Round(time.Millisecond), t.max.Round(time.Millisecond), startupTarget, verdict(t.median < startupTarget))
	c := spreadOf(cpus)
	fmt.Fprintf(w, "CPU time used by then: median %v, range %v to %v\n", c.median, c.min, c.max)
	m := spreadOf(ready)
	fmt.Fprintf(w, "VmRSS when serving: median %.0f MiB, range %.0f to %.0f; target < %d MiB: %s\n",
		mib(m.median), mib(m.min), mib(m.max), rssTarget>>20, verdict(m.median < rssTarget))
	if len(settled) > 0 {
		s := spreadOf(settled)
		fmt.Fprintf(w, "VmRSS %v later (the loader's garbage returned): median %.0f MiB, range %.0f to %.0f\n",
			settle, mib(s.median), mib(s.min), mib(s.max))
	}
}

// spread is the median and range of a sample.
type spread[T int64 | time.Duration] struct{ median, min, max T }

// spreadOf is the median (the lower middle one of an even count), least and
// greatest of xs, which must not be empty.
func spreadOf[T int64 | time.Duration](xs []T) spread[T] {
	s := slices.Clone(xs)
	slices.Sort(s)
	return spread[T]{median: s[(len(s)-1)/2], min: s[0], max: s[len(s)-1]}
}
