package main

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// Bounds of the HTTP listener.
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

// httpListener is the HTTP server's listener. It keeps at most maxConns connections
// open at once: past that, Accept waits until one closes, and new clients wait in
// the kernel's accept queue, so memory and file descriptors stay bounded however many
// clients connect. Each connection is a framingConn (framing.go).
type httpListener struct {
	net.Listener
	slots     chan struct{} // a token per open connection
	closed    chan struct{} // closed by Close, to end a waiting Accept
	closeOnce sync.Once
	log       *slog.Logger
	warned    time.Time // when the cap was last logged; only Accept's goroutine uses it
}

// fullWarningEvery spaces the log lines saying the connection cap was reached.
const fullWarningEvery = time.Minute

func newHTTPListener(ln net.Listener, maxConns int, log *slog.Logger) *httpListener {
	return &httpListener{Listener: ln, slots: make(chan struct{}, maxConns), closed: make(chan struct{}), log: log}
}

// Accept waits for a free slot, then for a connection.
func (l *httpListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now(); now.Sub(l.warned) >= fullWarningEvery {
			l.warned = now
			l.log.Warn("HTTP connection limit reached; new connections wait to be accepted", "max", cap(l.slots))
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
	return &framingConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close stops accepting; open connections keep their slots until they close.
func (l *httpListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
