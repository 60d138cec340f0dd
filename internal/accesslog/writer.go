// Package accesslog is the plumbing of the request log, one line per request or
// call: a Writer batching the lines, each reaching the underlying writer whole, in
// order, at most flushDelay later and at once from Close on, with bounded memory;
// and TraceAttrs, the trace_id of a request's one valid W3C traceparent.
package accesslog

import (
	"io"
	"sync"
	"time"
)

// Writer writes log lines in batches, a few milliseconds late: many lines a system
// call saves a fifth of a request's CPU (bench/README.md). A SIGKILL loses at most
// flushDelay of lines.
type Writer struct {
	out io.Writer

	mu      sync.Mutex
	buf     []byte
	armed   bool // a flush is scheduled
	closed  bool
	writing sync.Mutex // serialises writes to out, so batches stay in order
}

const (
	flushDelay  = 2 * time.Millisecond
	bufferLimit = 1 << 20 // past it, the logging goroutine writes the batch itself
)

// NewWriter returns a Writer batching the lines for out.
func NewWriter(out io.Writer) *Writer { return &Writer{out: out} }

// Write copies p (slog reuses its buffer) and schedules a flush. It never fails: an
// error of out's has nowhere better to go than the log itself.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.writing.Lock()
		defer w.writing.Unlock()
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= bufferLimit
	if !w.armed && !full {
		w.armed = true
		time.AfterFunc(flushDelay, w.flush)
	}
	w.mu.Unlock()
	if full {
		w.flush()
	}
	return len(p), nil
}

func (w *Writer) flush() {
	w.writing.Lock()
	defer w.writing.Unlock()
	w.mu.Lock()
	batch := w.buf
	w.buf, w.armed = nil, false
	w.mu.Unlock()
	if len(batch) > 0 {
		w.out.Write(batch)
	}
}

// Close writes out every line logged so far; later lines are written straight through.
func (w *Writer) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.flush()
}
