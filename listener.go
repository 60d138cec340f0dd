package main

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the HTTP listener (gRPC's are in grpcLimits).
const (
	// httpMaxHeaderBytes bounds a request's header block (net/http allows 4096 bytes
	// more before it answers 431).
	httpMaxHeaderBytes = 64 << 10

	// defaultHTTPMaxConns is -http-max-conns's default: the HTTP connections open at
	// once, WebSockets included. Each holds a goroutine and some buffers (tens of KiB
	// at most, bounded by the header and body limits), so 20,000 stay well under a
	// gigabyte, and the process under a usual 65,536 file descriptor limit.
	defaultHTTPMaxConns = 20_000
)

// fullWarningEvery spaces the log lines saying a connection cap was reached.
const fullWarningEvery = time.Minute

// limitListener keeps at most cap(slots) connections open at once: past that, Accept
// waits until one closes, and new clients wait in the kernel's accept queue, so memory
// and file descriptors stay bounded however many clients connect. It also counts the
// open connections, for the log line of a shutdown that had to cut some.
type limitListener struct {
	net.Listener
	name      string                      // "HTTP" or "gRPC", for the log
	wrap      func(*limitedConn) net.Conn // nil: connections are served as accepted
	slots     chan struct{}               // a token per open connection
	closed    chan struct{}               // closed by Close, to end a waiting Accept
	closeOnce sync.Once
	conns     atomic.Int64
	log       *slog.Logger
	warned    time.Time // when the cap was last logged; only Accept's goroutine uses it
}

func newLimitListener(ln net.Listener, name string, maxConns int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, name: name, slots: make(chan struct{}, maxConns), closed: make(chan struct{}), log: log}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now(); now.Sub(l.warned) >= fullWarningEvery {
			l.warned = now
			l.log.Warn(l.name+" connection limit reached; new connections wait to be accepted", "max", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.conns.Add(1)
	lc := &limitedConn{Conn: c, release: sync.OnceFunc(func() {
		l.conns.Add(-1)
		<-l.slots
	})}
	if l.wrap != nil {
		return l.wrap(lc), nil
	}
	return lc, nil
}

// open is the number of accepted connections not yet closed.
func (l *limitListener) open() int64 { return l.conns.Load() }

// Close stops accepting, also for an Accept waiting for a slot; open connections keep
// their slots until they close.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn gives its listener's slot back when it is closed.
type limitedConn struct {
	net.Conn
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite keeps the half-close net/http uses to end a connection without
// resetting it (so the client reads the last answer), which wrapping would hide.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
