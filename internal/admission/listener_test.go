package admission

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// guard bounds every wait for an event: only a broken listener reaches it.
const guard = 10 * time.Second

// logBuffer is a log the listener writes to and the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// listen returns a Listener on a free port of 127.0.0.1 keeping at most maxConns
// open, its log, and the connections its Accept returns, accepted in a goroutine
// of their own until the test ends.
func listen(t *testing.T, maxConns int, set func(*Listener)) (*Listener, *logBuffer, <-chan *Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	l := NewListener(inner, "TCP", maxConns, slog.New(slog.NewTextHandler(logs, nil)))
	if set != nil {
		set(l)
	}
	accepted := make(chan *Conn, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c.(*Conn)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	return l, logs, accepted
}

// dialFrom connects to l from the loopback address ip (127.0.0.2 and the others
// of 127/8 are this machine's on Linux).
func dialFrom(t *testing.T, ip string, l *Listener) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: guard}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acceptWaits holds, for testkit.Eventually, once Accept waits for a slot.
func acceptWaits(l *Listener) func() error {
	return func() error {
		if l.waiting.Load() == 0 {
			return errors.New("Accept never waited for a slot")
		}
		return nil
	}
}

// next is the next connection Accept returned.
func next(t *testing.T, accepted <-chan *Conn) *Conn {
	t.Helper()
	select {
	case c := <-accepted:
		return c
	case <-time.After(guard):
		t.Fatal("no connection was accepted")
		return nil
	}
}

// closedByServer reports whether the server closed c: its read ends without data.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(guard))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// echo has the server side of c write a byte and the client side read it: c is
// still open at both ends.
func echo(t *testing.T, server *Conn, client net.Conn) {
	t.Helper()
	if _, err := server.Write([]byte{1}); err != nil {
		t.Fatalf("writing to a connection that should be open: %v", err)
	}
	client.SetReadDeadline(time.Now().Add(guard))
	if _, err := io.ReadFull(client, make([]byte, 1)); err != nil {
		t.Fatalf("reading from a connection that should be open: %v", err)
	}
}

// clients is how many open connections each client has.
func clients(l *Listener) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]int{}
	for k, v := range l.clients {
		m[k] = v
	}
	return m
}

func TestPerClient(t *testing.T) {
	l, logs, accepted := listen(t, 10, func(l *Listener) { l.PerClient = 2 })
	var flood []net.Conn
	for range 5 {
		flood = append(flood, dialFrom(t, "127.0.0.2", l))
	}
	for _, c := range flood[:2] {
		echo(t, next(t, accepted), c)
	}
	for i, c := range flood[2:] {
		if !closedByServer(t, c) {
			t.Errorf("connection %d of one address, past its 2, is open", i+3)
		}
	}
	other := dialFrom(t, "127.0.0.1", l)
	c := next(t, accepted)
	echo(t, c, other)
	if got := clients(l); got["127.0.0.2"] != 2 || got["127.0.0.1"] != 1 || l.Open() != 3 {
		t.Errorf("open connections %v (%d in all), want 2 of 127.0.0.2 and 1 of 127.0.0.1", got, l.Open())
	}
	// A closed connection gives its client's place back.
	c.Close()
	if got := clients(l); got["127.0.0.1"] != 0 || l.Open() != 2 {
		t.Errorf("after a close: %v (%d in all)", got, l.Open())
	}
	if n := strings.Count(logs.String(), "TCP connections refused: their client address has as many open as it may"); n != 1 {
		t.Errorf("%d log lines for 3 refusals, want 1 (the others are counted in the next):\n%s", n, logs)
	}
}

// TestExempt: a peer Exempt reports (a trusted proxy) is held to Max alone.
func TestExempt(t *testing.T) {
	l, _, accepted := listen(t, 10, func(l *Listener) {
		l.PerClient = 1
		l.Exempt = func(remoteAddr string) bool { return strings.HasPrefix(remoteAddr, "127.0.0.3:") }
	})
	for range 3 {
		c := dialFrom(t, "127.0.0.3", l)
		echo(t, next(t, accepted), c)
	}
	c := dialFrom(t, "127.0.0.2", l)
	echo(t, next(t, accepted), c)
	if c := dialFrom(t, "127.0.0.2", l); !closedByServer(t, c) {
		t.Error("a second connection of an address not exempt is open")
	}
}

// TestShedBusiestClient: when the listener is full, the newcomer gets the slot of
// an idle connection of the client holding the most, one never used first; busy
// connections and the other clients' are left alone.
func TestShedBusiestClient(t *testing.T) {
	l, logs, accepted := listen(t, 4, func(l *Listener) { l.Shed = true })
	busyC, usedC, unusedC, smallC := dialFrom(t, "127.0.0.2", l), dialFrom(t, "127.0.0.2", l), dialFrom(t, "127.0.0.2", l), dialFrom(t, "127.0.0.3", l)
	busy, usedIdle := next(t, accepted), next(t, accepted)
	next(t, accepted) // unusedC's
	small := next(t, accepted)
	busy.Begin()
	usedIdle.Begin()
	usedIdle.End()
	newcomer := dialFrom(t, "127.0.0.1", l)
	echo(t, next(t, accepted), newcomer)
	if !closedByServer(t, unusedC) {
		t.Error("the unused idle connection of the busiest client is open")
	}
	echo(t, busy, busyC)
	echo(t, usedIdle, usedC)
	echo(t, small, smallC)
	if got := clients(l); got["127.0.0.2"] != 2 || got["127.0.0.3"] != 1 || got["127.0.0.1"] != 1 || l.Open() != 4 {
		t.Errorf("open connections %v (%d in all)", got, l.Open())
	}
	// Next the used idle one goes, as the busiest client's only idle connection.
	second := dialFrom(t, "127.0.0.4", l)
	echo(t, next(t, accepted), second)
	if !closedByServer(t, usedC) {
		t.Error("the used idle connection of the busiest client is open")
	}
	echo(t, busy, busyC)
	if !strings.Contains(logs.String(), "TCP connection limit reached; idle connections closed to make room") {
		t.Errorf("the shedding was not logged:\n%s", logs)
	}
}

// TestShedWaitsForIdle: with every connection busy, a newcomer waits; once one
// becomes idle it is closed for the newcomer.
func TestShedWaitsForIdle(t *testing.T) {
	l, logs, accepted := listen(t, 1, func(l *Listener) { l.Shed = true })
	firstC := dialFrom(t, "127.0.0.2", l)
	first := next(t, accepted)
	first.Begin()
	newcomer := dialFrom(t, "127.0.0.1", l)
	testkit.Eventually(t, acceptWaits(l))
	echo(t, first, firstC) // Accept waits: the busy connection is open
	first.End()
	echo(t, next(t, accepted), newcomer)
	if !closedByServer(t, firstC) {
		t.Error("the connection that became idle is open")
	}
	if !strings.Contains(logs.String(), "TCP connection limit reached; new connections wait to be accepted") {
		t.Errorf("the wait was not logged:\n%s", logs)
	}
}

// TestFirstUse: a connection not used within FirstUse is closed; one used before
// it is not, though its FirstUse ended first.
func TestFirstUse(t *testing.T) {
	l, logs, accepted := listen(t, 10, func(l *Listener) { l.FirstUse = 50 * time.Millisecond })
	usedC := dialFrom(t, "127.0.0.2", l)
	used := next(t, accepted)
	used.Begin()
	used.End()
	unusedC := dialFrom(t, "127.0.0.2", l)
	next(t, accepted)
	if !closedByServer(t, unusedC) {
		t.Fatal("the unused connection was not closed")
	}
	echo(t, used, usedC)
	if l.Open() != 1 {
		t.Errorf("%d connections open, want the used one", l.Open())
	}
	if !strings.Contains(logs.String(), `TCP connections closed: not used in time" count=1 last_client=127.0.0.2 within=50ms`) {
		t.Errorf("the close was not logged:\n%s", logs)
	}
}

func TestFind(t *testing.T) {
	l, _, accepted := listen(t, 10, nil)
	client := dialFrom(t, "127.0.0.2", l)
	c := next(t, accepted)
	if got := l.Find(client.RemoteAddr(), client.LocalAddr()); got != c {
		t.Errorf("Find(%v, %v) = %p, want %p", client.RemoteAddr(), client.LocalAddr(), got, c)
	}
	if got := l.Find(client.LocalAddr(), client.RemoteAddr()); got != nil {
		t.Error("Find with the ends swapped found a connection")
	}
	c.Close()
	if got := l.Find(client.RemoteAddr(), client.LocalAddr()); got != nil {
		t.Error("Find found a closed connection")
	}
	var none *Conn // what Find returns for a connection it does not know
	none.Begin()
	none.End()
}

// filesListener fails its first accepts with EMFILE, as a process out of file
// descriptors does, then accepts from the listener it wraps.
type filesListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (f *filesListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

// TestOutOfFiles: an accept failing for want of descriptors is returned, for the
// server to retry after its pause, and logged once a minute with a count.
func TestOutOfFiles(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	l := NewListener(&filesListener{Listener: inner, fails: 12}, "TCP", 10, slog.New(slog.NewTextHandler(logs, nil)))
	defer l.Close()
	for i := range 12 {
		if _, err := l.Accept(); !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("accept %d: %v, want EMFILE", i, err)
		}
	}
	client := dialFrom(t, "127.0.0.1", l)
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	defer c.Close()
	echo(t, c.(*Conn), client)
	line := `level=ERROR msg="TCP accept failing for want of file descriptors; retrying" count=1 error="accept tcp: accept4: too many open files"`
	if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, line) {
		t.Errorf("log:\n%s\nwant the one line\n%s", got, line)
	}
	l.Close() // writes the count held back
	if got := logs.String(); !strings.Contains(got, `retrying" count=11 `) {
		t.Errorf("log after Close:\n%s", got)
	}
}

// TestCloseWhileFull: Close ends an Accept holding a connection while it waits for
// a slot, and closes that connection.
func TestCloseWhileFull(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner, "TCP", 1, nil)
	dialFrom(t, "127.0.0.1", l)
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	held := dialFrom(t, "127.0.0.2", l)
	result := make(chan error)
	go func() {
		_, err := l.Accept()
		result <- err
	}()
	testkit.Eventually(t, acceptWaits(l))
	l.Close()
	if err := <-result; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if !closedByServer(t, held) {
		t.Error("the connection Accept held is open")
	}
	if got := clients(l); len(got) != 1 {
		t.Errorf("clients after Close %v, want the first connection's only", got)
	}
}
