package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// TestHTTPMaxConns starts the service with -http-max-conns 1: a second connection is
// not served while the first is open, is served once it closes, and shutdown ends
// with the listener full.
func TestHTTPMaxConns(t *testing.T) {
	cfg := testConfig()
	cfg.httpMaxConns = 1
	a, logs := startApp(t, cfg)
	get := "GET /api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", a.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, get); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	read := func(c net.Conn, br *bufio.Reader, wait time.Duration) error {
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	first, firstR := dial()
	if err := read(first, firstR, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The first connection stays open, idle: it holds the one slot. The second
	// waits in the accept queue; a short wait shows it unanswered (a slow machine
	// could only make this pass wrongly, never fail wrongly).
	second, secondR := dial()
	var ne net.Error
	if err := read(second, secondR, 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection answered while the first was open: %v", err)
	}
	first.Close()
	if err := read(second, secondR, 10*time.Second); err != nil {
		t.Fatalf("second connection after the first closed: %v", err)
	}
	if !strings.Contains(logs.String(), "HTTP connection limit reached; new connections wait to be accepted") {
		t.Errorf("the cap was not logged:\n%s", logs)
	}
	// startApp's cleanup shuts down with the second connection holding the slot.
}

func TestHTTPMaxConnsFlag(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"-http-max-conns", "0", "-http-max-conns must be positive"},
		{"-http-max-conns", "-1", "-http-max-conns must be positive"},
		{"-http-max-conns", "1099511627776", "-http-max-conns 1099511627776 is more than the open-file limit"},
		{"-http-max-conns-per-client", "-1", "-http-max-conns-per-client must not be negative (0: no limit)"},
	} {
		err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", c.flag, c.value}, envFrom(nil), io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.flag, c.value, err, c.want)
		}
	}
}

// dialFrom connects to addr from the loopback address from (127.0.0.2 and the rest
// of 127/8 are this machine's on Linux); "" is the system's choice.
func dialFrom(from, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second * testkit.RaceSlowdown}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return d.Dial("tcp", addr)
}

// TestHTTPConnFloodFromOneAddress: one address opening more keep-alive connections
// than it may has those past its cap closed at once, though the server could hold
// more, and another address's request is served beside them.
func TestHTTPConnFloodFromOneAddress(t *testing.T) {
	cfg := testConfig()
	perClient := cfg.httpPerClient
	cfg.httpMaxConns = perClient + 10 // the flood alone would fill it
	a, logs := startApp(t, cfg)
	type conn struct {
		net.Conn
		r *bufio.Reader
	}
	get := func(from string) conn {
		c, err := dialFrom(from, a.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") // refused: the write may fail
		return conn{c, bufio.NewReader(c)}
	}
	answer := func(c conn) (int, error) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second * testkit.RaceSlowdown))
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var flood []conn
	for range perClient + 20 {
		flood = append(flood, get("127.0.0.2"))
	}
	for i, c := range flood {
		status, err := answer(c)
		switch {
		case i < perClient && status != http.StatusOK:
			t.Fatalf("connection %d of the flood: %d, %v; want it served", i+1, status, err)
		case i >= perClient && err == nil:
			t.Fatalf("connection %d of the flood, past the address's %d, was answered %d", i+1, perClient, status)
		case i >= perClient:
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				t.Fatalf("connection %d of the flood, past the address's %d, is held open unanswered", i+1, perClient)
			}
		}
	}
	// The flood's served connections are open and idle, and another address is served.
	if status, err := answer(get("127.0.0.1")); status != http.StatusOK {
		t.Errorf("a request from another address: %d, %v", status, err)
	}
	if got := a.httpLn.Open(); got != perClient+1 {
		t.Errorf("%d connections open, want %d of the flood and the other address's", got, perClient+1)
	}
	if !strings.Contains(logs.String(), `msg="HTTP connections refused: their client address has as many open as it may" count=1 last_client=127.0.0.2 limit=256`) {
		t.Errorf("the first refusal was not logged:\n%s", logs)
	}
}

// TestHTTPConnLimitFromFileLimit: the HTTP connection cap's default fits in the
// open-file limit beside gRPC's connections and the process's own files; an
// explicit cap it cannot hold is refused.
func TestHTTPConnLimitFromFileLimit(t *testing.T) {
	const grpcConns = 100
	for _, c := range []struct {
		requested int
		fileLimit uint64
		want      int
		lowered   bool
		err       string
	}{
		{0, 0, defaultHTTPMaxConns, false, ""},         // limit unknown
		{0, 1<<64 - 1, defaultHTTPMaxConns, false, ""}, // unlimited
		{0, 1_048_576, defaultHTTPMaxConns, false, ""}, // a container's usual limit
		{0, defaultHTTPMaxConns + grpcConns + fileReserve, defaultHTTPMaxConns, false, ""},
		{0, 20_000, 20_000 - grpcConns - fileReserve, true, ""}, // the default does not fit
		{0, 1024, 1024 - grpcConns - fileReserve, true, ""},
		{500, 1024, 500, false, ""},
		{1024 - grpcConns - fileReserve, 1024, 1024 - grpcConns - fileReserve, false, ""},
		{1024 - grpcConns - fileReserve + 1, 1024, 0, false, "-http-max-conns 797 is more than the open-file limit (1024) leaves room for beside -grpc-max-conns 100 and the 128 files kept for the process: at most 796"},
		{50_000, 1_048_576, 50_000, false, ""},
		{0, grpcConns + fileReserve, 0, false, "the open-file limit (228) leaves no room for HTTP connections"},
	} {
		got, lowered, err := httpConnLimit(c.requested, grpcConns, c.fileLimit)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("requested %d, file limit %d: %d, %v; want the error %q", c.requested, c.fileLimit, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || lowered != c.lowered {
			t.Errorf("requested %d, file limit %d: %d (lowered %v), %v; want %d (lowered %v)", c.requested, c.fileLimit, got, lowered, err, c.want, c.lowered)
		}
	}
}
