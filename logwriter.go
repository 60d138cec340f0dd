package main

import (
	"io"
	"sync"
	"time"
)

// logWriter collects log lines and writes them to the underlying writer in batches, a
// few milliseconds late: a busy server writes many lines per system call rather than
// one per request. It is the one speed trick on the logging path that pays: measured
// side by side (bench/README.md), the REST requests cost about a fifth less CPU with
// it than with slog writing straight to stderr. The price: a line reaches the log up
// to logFlushDelay after it was logged, and a process killed with SIGKILL loses at
// most that window. close writes out everything logged before it.
type logWriter struct {
	out io.Writer

	mu      sync.Mutex
	buf     []byte
	armed   bool // a flush is scheduled
	closed  bool
	writing sync.Mutex // serialises writes to out, so batches stay in order
}

const (
	logFlushDelay = 2 * time.Millisecond
	// logBufferLimit bounds the memory held for a slow writer: past it, the logging
	// goroutine writes the batch itself and so waits for out, as it would unbuffered.
	logBufferLimit = 1 << 20
)

func newLogWriter(out io.Writer) *logWriter {
	return &logWriter{out: out}
}

// Write copies p (slog reuses its buffer) and schedules a flush. It never fails; an
// error from the underlying writer has nowhere better to go than the log itself.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.writing.Lock()
		defer w.writing.Unlock()
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= logBufferLimit
	if !w.armed && !full {
		w.armed = true
		time.AfterFunc(logFlushDelay, w.flush)
	}
	w.mu.Unlock()
	if full {
		w.flush()
	}
	return len(p), nil
}

// flush writes out what has been collected.
func (w *logWriter) flush() {
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

// close writes out every line logged so far; later lines are written straight through.
func (w *logWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.flush()
}
