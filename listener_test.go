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
	err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-http-max-conns", "0"}, envFrom(nil), io.Discard, io.Discard)
	if err == nil || err.Error() != "-http-max-conns must be positive" {
		t.Errorf("-http-max-conns 0: %v", err)
	}
}
