package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestSpreadOf(t *testing.T) {
	got := spreadOf([]time.Duration{5, 1, 4, 2, 3})
	if got != (spread[time.Duration]{median: 3, min: 1, max: 5}) {
		t.Errorf("odd count: %+v", got)
	}
	if got := spreadOf([]int64{4, 1, 3, 2}); got != (spread[int64]{median: 2, min: 1, max: 4}) {
		t.Errorf("even count: %+v", got)
	}
}

// TestStartupSmall runs the startup subcommand on a small dataset: each start is
// reported with what it loaded, and the summary follows.
func TestStartupSmall(t *testing.T) {
	bin := buildQuartet(t)
	var out bytes.Buffer
	args := []string{"-n", "2", "-bin", bin, "-users", "300", "-products", "40", "-orders", "500", "-posts-per-user", "1", "-settle", "100ms"}
	if err := runStartup(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"start 1: ", "start 2: ", "loaded comments=0 orders=500 posts=300 products=40 users=300",
		"start-up (exec to /healthz 200), 2 starts: median ", "CPU time used by then: median ", "VmRSS when serving: median ", "VmRSS 100ms later",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
