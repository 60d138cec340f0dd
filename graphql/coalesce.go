package graphql

import (
	"net"
	"sync"
	"time"
)

// coalescer sits between the WebSocket library's buffered writer and the
// socket. The library sends every message at once, a system call each; when
// several of a connection's operations have results for one event, its
// writer holds them and sends them together, one system call for a queue.
type coalescer struct {
	conn net.Conn

	mu     sync.Mutex
	held   bool
	buf    []byte
	writes int // system calls made, for tests
}

// Write passes p to the socket, or keeps it while held.
func (w *coalescer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.writes++
	return w.conn.Write(p)
}

// hold keeps what is written until release.
func (w *coalescer) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// holding reports whether writes are being kept, not sent.
func (w *coalescer) holding() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

// release sends what was held, within timeout, and passes writes on again.
// The buffer is kept for the next batch unless it grew large.
func (w *coalescer) release(timeout time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = false
	if len(w.buf) == 0 {
		return nil
	}
	w.writes++
	w.conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err := w.conn.Write(w.buf)
	w.conn.SetWriteDeadline(time.Time{})
	w.buf = w.buf[:0]
	if cap(w.buf) > maxPooledFrame {
		w.buf = nil
	}
	return err
}
