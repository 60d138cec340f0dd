package admission

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Listener bounds the connections a server keeps open, in all (Max) and per
// client (PerClient). Past Max, Accept holds the connection it has just accepted
// until a slot is free; past PerClient, a connection is closed as soon as it is
// accepted. With FirstUse, a connection not used (Conn.Begin) that long after
// Accept is closed; with Shed, a connection waiting for a slot has the idle
// connection of the client holding the most closed for it, one never used first.
// Such a socket is closed under its server without a word to the peer; the
// server tells of each use with Begin and End. An accept failing for want of file
// descriptors is logged and returned: net/http and grpc-go retry it after a pause
// doubling from 5 ms to 1 s. Log lines come at most once a minute per kind. Set its
// fields before the first Accept.
type Listener struct {
	Max       int                          // connections open at once, at least 1
	PerClient int                          // connections of one client open at once; 0: no bound but Max
	FirstUse  time.Duration                // close a connection not used this long after Accept returned it; 0: never
	Shed      bool                         // when Max are open, close an idle one for the connection waiting
	Exempt    func(remoteAddr string) bool // peers held to Max alone: a proxy carrying many clients

	ln net.Listener

	mu        sync.Mutex
	open      int               // connections Accept returned, not yet closed
	clients   map[string]int    // open connections of each client, with the one Accept holds
	conns     map[connKey]*Conn // the open connections, for Find and Shed
	freed     chan struct{}     // a slot was freed or, while Accept waits, a connection became idle
	waiting   atomic.Int32      // Accepts waiting for a slot
	closed    chan struct{}     // closed by Close, to end a waiting Accept
	closeOnce sync.Once

	full, refused, shed, unused, noFiles tally
}

// NewListener returns a Listener of ln keeping at most maxConns open, named name in its
// log lines ("HTTP connection limit reached").
func NewListener(ln net.Listener, name string, maxConns int, log *slog.Logger) *Listener {
	l := &Listener{Max: maxConns, ln: ln, clients: map[string]int{}, conns: map[connKey]*Conn{},
		freed: make(chan struct{}, 1), closed: make(chan struct{})}
	l.full = tally{log: log, level: slog.LevelWarn, msg: name + " connection limit reached; new connections wait to be accepted"}
	l.refused = tally{log: log, level: slog.LevelWarn, msg: name + " connections refused: their client address has as many open as it may"}
	l.shed = tally{log: log, level: slog.LevelWarn, msg: name + " connection limit reached; idle connections closed to make room"}
	l.unused = tally{log: log, level: slog.LevelInfo, msg: name + " connections closed: not used in time"}
	l.noFiles = tally{log: log, level: slog.LevelError, msg: name + " accept failing for want of file descriptors; retrying"}
	return l
}

// OpenFileLimit is the process's open-file limit (RLIMIT_NOFILE, which the Go
// runtime raised to the hard limit at start-up), 0 if unknown.
func OpenFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}

func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Accept waits for a connection within the bounds and returns it, a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				l.noFiles.add(slog.String("error", err.Error()))
			}
			return nil, err
		}
		client := Of(nc.RemoteAddr().String())
		l.mu.Lock()
		if l.PerClient > 0 && l.clients[client] >= l.PerClient && (l.Exempt == nil || !l.Exempt(nc.RemoteAddr().String())) {
			l.mu.Unlock()
			nc.Close()
			l.refused.add(slog.String("last_client", client), slog.Int("limit", l.PerClient))
			continue
		}
		l.clients[client]++
		if err := l.waitForSlotLocked(); err != nil {
			l.dropClientLocked(client)
			l.mu.Unlock()
			nc.Close()
			return nil, err
		}
		c := &Conn{Conn: nc, l: l, client: client, key: keyOf(nc.LocalAddr(), nc.RemoteAddr())}
		l.open++
		l.conns[c.key] = c
		if l.FirstUse > 0 {
			c.unused = time.AfterFunc(l.FirstUse, c.closeUnused)
		}
		l.mu.Unlock()
		return c, nil
	}
}

// waitForSlotLocked returns once fewer than Max connections are open, closing an
// idle one if it may; l.mu is held, and released while it waits.
func (l *Listener) waitForSlotLocked() error {
	for l.open >= max(l.Max, 1) {
		if l.Shed {
			if v := l.idleVictimLocked(); v != nil {
				l.releaseLocked(v)
				l.mu.Unlock()
				v.Conn.Close()
				l.shed.add(slog.String("last_client", v.client), slog.Int("max", l.Max))
				l.mu.Lock()
				continue
			}
		}
		l.waiting.Add(1)
		l.mu.Unlock()
		l.full.add(slog.Int("max", l.Max))
		select {
		case <-l.freed:
		case <-l.closed:
			l.mu.Lock()
			l.waiting.Add(-1)
			return net.ErrClosed
		}
		l.mu.Lock()
		l.waiting.Add(-1)
	}
	if l.waiting.Load() > 0 && l.open+1 < max(l.Max, 1) {
		l.signal() // another Accept waits, and there is room for it too
	}
	return nil
}

// idleVictimLocked marks for closing and returns the idle connection Shed closes
// first, or nil.
func (l *Listener) idleVictimLocked() *Conn {
	for {
		var v *Conn
		for _, c := range l.conns {
			if c.calls.Load() != 0 {
				continue
			}
			if v == nil || l.clients[c.client] > l.clients[v.client] ||
				l.clients[c.client] == l.clients[v.client] && v.used.Load() && !c.used.Load() {
				v = c
			}
		}
		if v == nil || v.calls.CompareAndSwap(0, closing) {
			return v
		}
		// A use began meanwhile: choose again.
	}
}

// releaseLocked frees c's slot, once.
func (l *Listener) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	l.open--
	l.dropClientLocked(c.client)
	if l.conns[c.key] == c {
		delete(l.conns, c.key)
	}
	if c.unused != nil {
		c.unused.Stop()
	}
	l.signal()
}

func (l *Listener) dropClientLocked(client string) {
	if l.clients[client]--; l.clients[client] <= 0 {
		delete(l.clients, client)
	}
}

func (l *Listener) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Close stops accepting, also for an Accept waiting for a slot, and writes what the
// log holds back; open connections keep their slots until they close.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		for _, t := range []*tally{&l.full, &l.refused, &l.shed, &l.unused, &l.noFiles} {
			t.flush()
		}
	})
	return l.ln.Close()
}

// Open is the number of connections Accept returned that are not closed yet.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Find returns the open connection from remote to local, or nil: for a server that
// learns of a use by its addresses only (a gRPC call's peer).
func (l *Listener) Find(local, remote net.Addr) *Conn {
	k := keyOf(local, remote)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[k]
}

// connKey names a connection by its two ends.
type connKey struct{ local, remote netip.AddrPort }

func keyOf(local, remote net.Addr) connKey { return connKey{addrPort(local), addrPort(remote)} }

func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// closing is Conn.calls of a connection the listener is closing.
const closing = -1

// Conn is a connection Accept returned. Closing it frees its slot.
type Conn struct {
	net.Conn
	l      *Listener
	client string
	key    connKey

	calls  atomic.Int32 // uses under way, or closing
	used   atomic.Bool  // a use has begun
	unused *time.Timer  // FirstUse's; set before Accept returns

	released bool // the slot is free again; under l.mu
}

// Begin tells that a use of c (a call, a request) begins: c is not idle until the
// matching End. A nil c does nothing, so Find's result can be passed on.
func (c *Conn) Begin() {
	if c == nil {
		return
	}
	for {
		n := c.calls.Load()
		if n == closing {
			return // too late: the use fails with the connection
		}
		if c.calls.CompareAndSwap(n, n+1) {
			break
		}
	}
	if !c.used.Load() {
		c.used.Store(true)
		if c.unused != nil {
			c.unused.Stop()
		}
	}
}

// End tells that a use of c begun with Begin has ended.
func (c *Conn) End() {
	if c == nil {
		return
	}
	for {
		n := c.calls.Load()
		if n <= 0 {
			return // Begin came too late to count
		}
		if c.calls.CompareAndSwap(n, n-1) {
			if n == 1 && c.l.waiting.Load() > 0 {
				c.l.signal()
			}
			return
		}
	}
}

// Close closes the connection and frees its slot.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// CloseWrite keeps the half-close net/http ends a connection with, which wrapping
// would hide.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// closeUnused is FirstUse's timer: it closes c if no use has begun.
func (c *Conn) closeUnused() {
	if c.used.Load() || !c.calls.CompareAndSwap(0, closing) {
		return
	}
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	c.l.unused.add(slog.String("last_client", c.client), slog.Duration("within", c.l.FirstUse))
	c.Conn.Close()
}
