package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"quartet/internal/connlimit"
)

// Bounds of the HTTP listener (gRPC's are in grpcLimits).
const (
	// httpMaxHeaderBytes bounds a request's header block (net/http allows 4096 bytes
	// more before it answers 431).
	httpMaxHeaderBytes = 64 << 10

	// defaultHTTPMaxConns is -http-max-conns's default, unless the open-file limit
	// leaves room for fewer (httpConnLimit): the HTTP connections open at once,
	// WebSockets included. Each holds a goroutine and some buffers (tens of KiB at
	// most, bounded by the header and body limits), so 20,000 stay well under a
	// gigabyte.
	defaultHTTPMaxConns = 20_000

	// defaultHTTPMaxConnsPerClient is -http-max-conns-per-client's default: the HTTP
	// connections of one client address open at once. Room for the 100 WebSockets
	// the address may have (-ws-max-sockets-per-client) and as many browsers again
	// behind one NAT, six connections each; few enough that it takes 79 addresses to
	// fill the default cap.
	defaultHTTPMaxConnsPerClient = 256

	// fileReserve is how many of the open-file limit's descriptors are kept out of
	// the HTTP connections' share, beside gRPC's connections: the standard streams,
	// the two listening sockets, the runtime's poller, the journal, a snapshot
	// being written and its directory, the data directory's lock, the one
	// connection each listener holds while it waits for a slot, the ones it
	// accepts to close at once, and room to spare.
	fileReserve = 128
)

// httpConnLimit returns the HTTP connection cap: requested, or when that is 0 the
// default, within what the open-file limit fileLimit leaves after grpcConns gRPC
// connections and fileReserve. The default is lowered to fit, and lowered says so;
// an explicit cap the limit cannot hold is refused rather than lowered, so that the
// operator who asked for it learns at start-up, not from "accept4: too many open
// files" under load. fileLimit 0 is unknown: no bound.
func httpConnLimit(requested, grpcConns int, fileLimit uint64) (conns int, lowered bool, err error) {
	conns = requested
	if conns == 0 {
		conns = defaultHTTPMaxConns
	}
	if fileLimit == 0 || fileLimit >= uint64(conns+grpcConns+fileReserve) {
		return conns, false, nil
	}
	room := int64(fileLimit) - int64(grpcConns) - fileReserve
	switch {
	case room < 1:
		return 0, false, fmt.Errorf("the open-file limit (%d) leaves no room for HTTP connections beside -grpc-max-conns %d and the %d files kept for the process; raise the limit (ulimit -n, systemd's LimitNOFILE=) or lower -grpc-max-conns",
			fileLimit, grpcConns, fileReserve)
	case requested != 0:
		return 0, false, fmt.Errorf("-http-max-conns %d is more than the open-file limit (%d) leaves room for beside -grpc-max-conns %d and the %d files kept for the process: at most %d; raise the limit (ulimit -n, systemd's LimitNOFILE=) or lower -http-max-conns",
			requested, fileLimit, grpcConns, fileReserve, room)
	}
	return int(room), true, nil
}

// openFileLimit is the process's open-file limit (RLIMIT_NOFILE), 0 if unknown;
// unlimited is the largest uint64. The Go runtime has raised the soft limit to
// the hard one (less one) at start-up, in package syscall's init, as servers
// commonly do themselves: this is the limit the process runs with.
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}

// limitListener is a server's listener, bounding its connections
// (internal/connlimit), whose connections are served as wrap makes them.
type limitListener struct {
	*connlimit.Listener
	wrap func(*limitedConn) net.Conn // nil: connections are served as accepted
}

// limitedConn is a connection of a limitListener.
type limitedConn = connlimit.Conn

// newLimitListener returns a listener of ln keeping at most maxConns connections
// open, named name ("HTTP", "gRPC") in the log. Its per-client and idle bounds are
// set on it before it serves.
func newLimitListener(ln net.Listener, name string, maxConns int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: connlimit.New(ln, name, maxConns, log)}
}

// Accept waits for a connection within the bounds.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.wrap == nil {
		return c, err
	}
	return l.wrap(c.(*limitedConn)), nil
}

// open is the number of accepted connections not yet closed.
func (l *limitListener) open() int64 { return int64(l.Open()) }

// trackUnaryCalls and trackStreamCalls wrap a gRPC server's first interceptor
// so that it tells l when each call begins and ends, for the bounds that depend
// on a connection's use: the first call's deadline (-grpc-first-call-timeout)
// and, when l is full, which idle connection to close.
//
// Why so: grpc-go's own idle bound (MaxConnectionIdle) is one
// duration for a connection's whole life, and keeps the minutes between calls
// that clients rely on. A stats.Handler would have grpc-go build an event for
// every call's start, headers, each message in and out, and end; an interceptor
// of its own would make grpc-go build a chain of handlers for every call.
// Wrapped into the first interceptor, a call costs a map lookup.
//
// A call is seen from when the interceptors start, after its headers and, for a
// unary call, its one message have arrived: a connection whose first call is
// still arriving when its deadline passes is closed, and that call fails as
// UNAVAILABLE.
func (l *limitListener) trackUnaryCalls(next grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c := l.callConn(ctx)
		c.Begin()
		defer c.End()
		return next(ctx, req, info, handler)
	}
}

func (l *limitListener) trackStreamCalls(next grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		c := l.callConn(ss.Context())
		c.Begin()
		defer c.End()
		return next(srv, ss, info, handler)
	}
}

// callConn is the connection of the call with context ctx; nil if unknown.
func (l *limitListener) callConn(ctx context.Context) *limitedConn {
	if p, ok := peer.FromContext(ctx); ok {
		return l.Find(p.LocalAddr, p.Addr)
	}
	return nil
}
