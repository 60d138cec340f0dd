package graphql

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// coalescer sits between the WebSocket library's buffered writer and the socket.
// The library sends every message at once; while held, the coalescer keeps
// them, to send a connection's results for one event in one system call.
//
// It also stamps every write to the socket with the time it began, for
// checkWrites: two atomic stores, where a socket deadline around each message
// was two timer changes, which a fan-out felt (bench/README.md).
type coalescer struct {
	conn  net.Conn
	since atomic.Int64 // when the write under way began (sinceStart, +1); 0: none

	mu   sync.Mutex
	held bool
	buf  []byte
}

// Write passes p to the socket, or keeps it while held.
func (w *coalescer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	return w.write(p)
}

func (w *coalescer) write(p []byte) (int, error) {
	w.since.Store(int64(sinceStart()) + 1)
	defer w.since.Store(0)
	return w.conn.Write(p)
}

// writingFor is how long the write under way has taken, 0 when there is none.
func (w *coalescer) writingFor() time.Duration {
	s := w.since.Load()
	if s == 0 {
		return 0
	}
	return sinceStart() - time.Duration(s-1)
}

// processStart is the origin of the write stamps, a monotonic time.
var processStart = time.Now()

func sinceStart() time.Duration { return time.Since(processStart) }

// hold keeps what is written until release.
func (w *coalescer) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// release sends what was held and passes writes on again.
func (w *coalescer) release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = false
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.write(w.buf)
	w.buf = w.buf[:0]
	if cap(w.buf) > maxPooledBody {
		w.buf = nil
	}
	return err
}
