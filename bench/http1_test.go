package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// doHTTP makes one call with net/http, the reference the load client is checked
// against, and returns the body of a 200 answer.
func doHTTP(ctx context.Context, client *http.Client, base string, hr httpRequest, keep bool) ([]byte, error) {
	var body io.Reader
	if hr.body != nil {
		body = bytes.NewReader(hr.body)
	}
	req, err := http.NewRequestWithContext(ctx, hr.method, base+hr.path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hr.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s %s: status %d: %.200s", hr.method, hr.path, resp.StatusCode, b)
	}
	return b, nil
}

// testCtx is a context that ends well before the test's own timeout, so a client
// that would hang fails the test instead.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// countConns counts the connections srv accepts; call before srv.Start.
func countConns(srv *httptest.Server) *atomic.Int32 {
	var n atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// The servers must see from the load client the requests they saw from net/http:
// same method, target, Host, header and body.
func TestH1ClientSendsWhatNetHTTPSends(t *testing.T) {
	type seen struct {
		Method, URI, Host string
		Header            http.Header
		Body              string
	}
	var (
		mu   sync.Mutex
		last seen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.RequestURI, r.Host, r.Header, string(b)}
		mu.Unlock()
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	ctx := testCtx(t)
	reference := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer reference.CloseIdleConnections()
	get := func() seen {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	for _, hr := range []httpRequest{
		{method: "GET", path: "/api/users/17"},
		{method: "GET", path: "/api/products?%24filter=price+gt+500&%24top=10"},
		{method: "POST", path: "/graphql", body: []byte(`{"query":"{ user(id: 7) { id } }"}`),
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}},
	} {
		if _, err := doHTTP(ctx, reference, srv.URL, hr, false); err != nil {
			t.Fatal(err)
		}
		want := get()
		if _, err := probeHTTP(ctx, addr, hr); err != nil {
			t.Fatal(err)
		}
		if got := get(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\nnet/http sent    %+v\nthe client sent  %+v", hr.method, hr.path, want, got)
		}
	}

	// A varying path is drawn from the worker's source, one per call.
	hr := httpRequest{method: "GET", pathFor: func(dst []byte, rng *rand.Rand) []byte {
		return strconv.AppendInt(append(dst, "/api/users/"...), int64(1+rng.IntN(1000)), 10)
	}}
	c := newH1Client(addr, 1, hr, false)
	defer c.close()
	rng, want := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for range 3 {
		if err := c.call(ctx, 0, rng); err != nil {
			t.Fatal(err)
		}
		if got, path := get(), "/api/users/"+strconv.Itoa(1+want.IntN(1000)); got.URI != path || got.Method != "GET" {
			t.Errorf("sent %s %s, want GET %s", got.Method, got.URI, path)
		}
	}
	if got := hr.fixed(1).path; !strings.HasPrefix(got, "/api/users/") {
		t.Errorf("fixed path %q", got)
	}
}

// The client reads bodies framed by Content-Length and chunked ones (Go servers
// chunk bodies over 2 KB), keeps one connection for a run of calls, counts a
// non-200 as an error without losing the connection, and reconnects after
// Connection: close.
func TestH1ClientAnswers(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1000) // 16,000 bytes
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, `{"ok":true}`)
		case "/big":
			for i := 0; i < len(big); i += 1000 {
				io.WriteString(w, big[i:i+1000])
			}
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		default:
			http.Error(w, "no such thing", http.StatusNotFound)
		}
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	ctx := testCtx(t)

	// The server frames the two bodies as the test means it to.
	for path, chunked := range map[string]bool{"/small": false, "/big": true} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := len(resp.TransferEncoding) > 0; got != chunked || (!chunked && resp.ContentLength <= 0) {
			t.Fatalf("%s: Transfer-Encoding %v, Content-Length %d", path, resp.TransferEncoding, resp.ContentLength)
		}
	}

	for _, tc := range []struct {
		path      string
		want      string // the body, or a part of the error
		ok        bool
		connsUsed int32 // by the 6 calls
	}{
		{"/small", `{"ok":true}`, true, 1},
		{"/big", big, true, 1},
		{"/missing", "status 404: no such thing", false, 1},
		{"/close", "bye", true, 6},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c := newH1Client(addr, 1, httpRequest{method: "GET", path: tc.path}, false)
			defer c.close()
			before := conns.Load()
			for range 3 {
				body, err := c.do(ctx, 0, nil, true)
				switch {
				case tc.ok && err != nil:
					t.Fatal(err)
				case tc.ok && string(body) != tc.want:
					t.Fatalf("body of %d bytes, want %d", len(body), len(tc.want))
				case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("error %v, want one with %q", err, tc.want)
				}
				if err := c.call(ctx, 0, nil); (err == nil) != tc.ok {
					t.Fatalf("call without keeping the body: %v", err)
				}
			}
			if used := conns.Load() - before; used != tc.connsUsed {
				t.Errorf("6 calls used %d connections, want %d", used, tc.connsUsed)
			}
		})
	}
}

// rawServer serves each connection with handle, for answers net/http would not give.
func rawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c, bufio.NewReader(c))
			})
		}
	})
	return ln.Addr().String()
}

// readRequest reads a request head (the tests send no bodies to raw servers).
func readRequest(br *bufio.Reader) bool {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return false
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return true
		}
	}
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// A server that closes the connection without answering makes a call fail, and
// the next call connects again; one that never answers is cut off by the context.
func TestH1ClientServerHangsUp(t *testing.T) {
	var n atomic.Int32
	addr := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(br) && n.Add(1)%2 == 0 {
			io.WriteString(c, okAnswer)
		}
	})
	ctx := testCtx(t)
	c := newH1Client(addr, 1, httpRequest{method: "GET", path: "/"}, false)
	defer c.close()
	for i := range 4 {
		err := c.call(ctx, 0, nil)
		if (err == nil) != (i%2 == 1) {
			t.Fatalf("call %d: %v", i, err)
		}
	}

	silent := rawServer(t, func(c net.Conn, br *bufio.Reader) { io.Copy(io.Discard, br) })
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	c2 := newH1Client(silent, 1, httpRequest{method: "GET", path: "/"}, false)
	defer c2.close()
	t0 := time.Now()
	if err := c2.call(short, 0, nil); err == nil || time.Since(t0) > 5*time.Second {
		t.Fatalf("a silent server: %v after %v", err, time.Since(t0))
	}
}

// A server that closes an idle keep-alive connection (without saying so) costs the
// next call a reconnection, not an error, as with net/http.
func TestH1ClientRetriesStaleConnection(t *testing.T) {
	var conns atomic.Int32
	addr := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		if readRequest(br) {
			io.WriteString(c, okAnswer) // then close
		}
	})
	ctx := testCtx(t)
	c := newH1Client(addr, 1, httpRequest{method: "GET", path: "/"}, false)
	defer c.close()
	for i := range 3 {
		if err := c.call(ctx, 0, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 calls", n)
	}
}

// Framings the harness's servers do not send but HTTP/1.1 allows.
func TestH1ReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		status       int
		body         string
		close        bool
		bad          bool
	}{
		{name: "length", answer: okAnswer, status: 200, body: "ok"},
		{name: "chunk extension and trailer", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n", status: 200, body: "abc0123456789"},
		{name: "interim 100", answer: "HTTP/1.1 100 Continue\r\n\r\n" + okAnswer, status: 200, body: "ok"},
		{name: "Connection: close", answer: "HTTP/1.1 200 OK\r\nconnection: Close\r\ncontent-length: 2\r\n\r\nok", status: 200, body: "ok", close: true},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", close: true},
		{name: "to the end", answer: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, body: "all of it", close: true},
		{name: "no content", answer: "HTTP/1.1 204 No Content\r\n\r\n", status: 204},
		{name: "status", answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", status: 503, body: "busy"},
		{name: "short body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", bad: true},
		{name: "short chunk", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok", bad: true},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", bad: true},
		{name: "bad length", answer: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", bad: true},
		{name: "bad status", answer: "HTTP/1.1 2x0 OK\r\n\r\n", bad: true},
		{name: "not HTTP", answer: "SSH-2.0-OpenSSH\r\n", bad: true},
		{name: "empty", answer: "", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.answer))
			h, err := readHead(br)
			var body []byte
			if err == nil {
				err = h.readBody(br, &body)
			}
			if tc.bad {
				if err == nil {
					t.Fatalf("read %+v, body %q", h, body)
				}
				return
			}
			if err != nil || h.status != tc.status || string(body) != tc.body || h.close != tc.close {
				t.Fatalf("read %+v, body %q, %v", h, body, err)
			}
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Fatalf("left %q unread", rest)
			}
		})
	}
}

// A call allocates nothing in the client (the server here allocates nothing
// either, so the process's count is the client's).
func TestH1ClientAllocs(t *testing.T) {
	addr := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		answer := []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
		for readRequest(br) {
			if _, err := c.Write(answer); err != nil {
				return
			}
		}
	})
	ctx := testCtx(t)
	c := newH1Client(addr, 1, httpRequest{method: "GET", pathFor: func(dst []byte, rng *rand.Rand) []byte {
		return strconv.AppendInt(append(dst, "/api/users/"...), int64(1+rng.IntN(1000)), 10)
	}}, false)
	defer c.close()
	rng := rand.New(rand.NewPCG(1, 1))
	var err error
	allocs := testing.AllocsPerRun(2000, func() {
		if e := c.call(ctx, 0, rng); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs > 0.1 {
		t.Errorf("%.2f allocations per call", allocs)
	}
}
