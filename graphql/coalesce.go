package graphql

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// coalescer sits between the WebSocket library's buffered writer and the
// socket. The library sends every message at once, a system call each; when
// several of a connection's operations have results for one event, its
// writer holds them and sends them together, one system call for a queue.
//
// It also stamps every write to the socket, the library's own (pongs, the
// close frame) included, with the time it began: the handler drops a socket
// that takes one write for WriteTimeout (WebSocketHandler.checkWrites). A
// stamp is two atomic stores; a socket deadline set and cleared around each
// message was two runtime timer changes, which a fan-out to many sockets
// felt (bench/README.md).
type coalescer struct {
	conn  net.Conn
	since atomic.Int64 // when the write under way began (sinceStart, +1); 0: none

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
	return w.write(p)
}

// write writes p to the socket, with the time it began stamped meanwhile.
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

// processStart is the origin of the write stamps: an int64 holds a
// monotonic time as the duration since it.
var processStart = time.Now()

func sinceStart() time.Duration { return time.Since(processStart) }

// hold keeps what is written until release.
func (w *coalescer) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// release sends what was held and passes writes on again. The buffer is
// kept for the next batch unless it grew large.
func (w *coalescer) release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = false
	if len(w.buf) == 0 {
		return nil
	}
	w.writes++
	_, err := w.write(w.buf)
	w.buf = w.buf[:0]
	if cap(w.buf) > maxPooledFrame {
		w.buf = nil
	}
	return err
}
