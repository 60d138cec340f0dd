package accesslog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// lockedBuffer is a bytes.Buffer safe for the flushing goroutine and the test.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestWriterKeepsEveryLineInOrder(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	var want strings.Builder
	var wg sync.WaitGroup
	var mu sync.Mutex // the order lines are handed over is the order they must come out
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				line := fmt.Sprintf("goroutine=%d line=%d\n", g, i)
				mu.Lock()
				w.Write([]byte(line))
				want.WriteString(line)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	w.Close()
	if got := out.String(); got != want.String() {
		t.Fatalf("log differs from what was written: %d bytes, want %d", len(got), want.Len())
	}
	if out.writes >= 4000 {
		t.Errorf("%d writes for 4000 lines: lines are not batched", out.writes)
	}
	w.Write([]byte("after close\n"))
	if !strings.HasSuffix(out.String(), "after close\n") {
		t.Error("a line logged after close was not written straight through")
	}
}

func TestWriterFlushesWithoutClose(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	w.Write([]byte("one line\n"))
	testkit.Eventually(t, func() error {
		if out.String() == "" {
			return errors.New("a logged line never reached the output")
		}
		return nil
	})
	if got := out.String(); got != "one line\n" {
		t.Fatalf("output %q", got)
	}
}

func TestWriterCopiesTheCallersBuffer(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	p := []byte("first\n")
	w.Write(p)
	copy(p, "XXXXX\n") // slog reuses its buffer once Write returns
	w.Close()
	if got := out.String(); got != "first\n" {
		t.Fatalf("output %q", got)
	}
}

func TestWriterWritesAFullBufferAtOnce(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	big := bytes.Repeat([]byte("x"), bufferLimit)
	w.Write(big)
	// The limit was reached: the batch is written before Write returns.
	if got := len(out.String()); got != bufferLimit {
		t.Fatalf("%d bytes written after a full buffer, want %d", got, bufferLimit)
	}
	w.Close()
}

// TestWriterIsStraightOutput compares the log written through Writer with the
// standard way, slog.TextHandler writing straight to its output: the same bytes, once
// closed, with far fewer writes.
func TestWriterIsStraightOutput(t *testing.T) {
	var straight, batched lockedBuffer
	w := NewWriter(&batched)
	logs := []*slog.Logger{slog.New(slog.NewTextHandler(&straight, nil)), slog.New(slog.NewTextHandler(w, nil))}
	at := time.Date(2026, 11, 25, 19, 30, 0, 0, time.UTC)
	for i := range 1000 {
		r := slog.NewRecord(at.Add(time.Duration(i)*time.Millisecond), slog.LevelInfo, "http", 0)
		r.AddAttrs(slog.String("method", "GET"), slog.String("path", fmt.Sprintf("/api/users/%d", i)), slog.Int("status", 200),
			slog.Duration("duration", time.Duration(i)*time.Microsecond), slog.String("remote", "127.0.0.1:1"))
		for _, l := range logs {
			if err := l.Handler().Handle(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	if straight.String() != batched.String() {
		t.Fatalf("the batched log differs from slog's straight output")
	}
	if batched.writes >= straight.writes/2 {
		t.Errorf("%d writes batched for %d straight", batched.writes, straight.writes)
	}
}
