package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/testkit"
)

// streamRequest opens a streamed answer of /graphql: body POSTed with accept, or a GET
// when body is "", with header pairs.
func streamRequest(t *testing.T, httpAddr, accept, body string, headers ...string) *http.Response {
	t.Helper()
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+httpAddr+"/graphql", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// streamReader reads a streamed answer up to a delimiter at a time, failing the test
// if nothing comes for 5 s: an event held back (by gzip, say) fails it.
type streamReader struct {
	t  *testing.T
	br *bufio.Reader
}

func newStreamReader(t *testing.T, resp *http.Response) *streamReader {
	t.Helper()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	return &streamReader{t, bufio.NewReader(r)}
}

// upTo returns what comes up to and including delim; what came before the end of
// the stream, at its end.
func (sr *streamReader) upTo(delim string) string {
	sr.t.Helper()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		for !strings.HasSuffix(b.String(), delim) {
			c, err := sr.br.ReadByte()
			if err != nil {
				break
			}
			b.WriteByte(c)
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(5 * time.Second):
		sr.t.Fatal("nothing more came in 5s")
		return ""
	}
}

// rest returns what comes up to the end of the stream.
func (sr *streamReader) rest() string {
	sr.t.Helper()
	return sr.upTo("\x00") // never in a stream of JSON
}

const (
	sseAccept       = "text/event-stream"
	multipartAccept = `multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json`
	userSub         = `{"query":"subscription { onUserCreated { id name } }"}`
)

// TestStreamsFromEverySurfaceThroughGzip: SSE and multipart subscribers asking for gzip
// get each user created over REST, gRPC and GraphQL, each event as soon as it is
// written: the first is read before the second user exists.
func TestStreamsFromEverySurfaceThroughGzip(t *testing.T) {
	a, _ := startApp(t, testConfig())
	sse := newStreamReader(t, streamRequest(t, a.httpAddr, sseAccept, userSub, "Accept-Encoding", "gzip"))
	multi := newStreamReader(t, streamRequest(t, a.httpAddr, multipartAccept, userSub, "Accept-Encoding", "gzip"))
	if got := multi.upTo("\r\n--graphql"); got != "\r\n--graphql" {
		t.Fatalf("multipart preamble: %q", got)
	}
	testkit.Eventually(t, subscribersReach(a.store, 2))
	if _, err := a.store.CreateUser("First", "first@example.com"); err != nil {
		t.Fatal(err)
	}
	if got, want := sse.upTo("\n\n"), "event: next\ndata: {\"data\":{\"onUserCreated\":{\"id\":7,\"name\":\"First\"}}}\n\n"; got != want {
		t.Fatalf("SSE: %q, want %q", got, want)
	}
	part := "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	if got, want := multi.upTo("\r\n--graphql"), part+`{"payload":{"data":{"onUserCreated":{"id":7,"name":"First"}}}}`+"\r\n--graphql"; got != want {
		t.Fatalf("multipart: %q, want %q", got, want)
	}
	createUserOnEverySurface(t, a)
	for i, name := range []string{"Rest", "Grpc", "Gql"} {
		data := `{"data":{"onUserCreated":{"id":` + strconv.Itoa(8+i) + `,"name":"` + name + `"}}}`
		if got, want := sse.upTo("\n\n"), "event: next\ndata: "+data+"\n\n"; got != want {
			t.Errorf("SSE: %q, want %q", got, want)
		}
		if got, want := multi.upTo("\r\n--graphql"), part+`{"payload":`+data+"}\r\n--graphql"; got != want {
			t.Errorf("multipart: %q, want %q", got, want)
		}
	}
}

// TestStreamEndsWhenItsTokenExpires: with -auth-reads, an SSE or multipart stream
// admitted by a token sends no event past the token's end: it ends with the error.
func TestStreamEndsWhenItsTokenExpires(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clock := newTestClock(t0)
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.authReads = true
	cfg.jwtClock = clock.now
	a, _ := startApp(t, cfg)
	exp := t0.Add(time.Hour)
	bearer := "Bearer " + tokenExpiring(t, exp)
	sse := newStreamReader(t, streamRequest(t, a.httpAddr, sseAccept, userSub, "Authorization", bearer))
	multi := newStreamReader(t, streamRequest(t, a.httpAddr, multipartAccept, userSub, "Authorization", bearer))
	multi.upTo("\r\n--graphql")
	testkit.Eventually(t, subscribersReach(a.store, 2))

	clock.set(exp.Add(jwtLeeway - time.Nanosecond))
	if _, err := a.store.CreateUser("Before", "before@example.com"); err != nil {
		t.Fatal(err)
	}
	if got := sse.upTo("\n\n"); !strings.Contains(got, `"name":"Before"`) {
		t.Fatalf("SSE before the expiry: %q", got)
	}
	if got := multi.upTo("\r\n--graphql"); !strings.Contains(got, `"name":"Before"`) {
		t.Fatalf("multipart before the expiry: %q", got)
	}
	clock.set(exp.Add(jwtLeeway))
	if _, err := a.store.CreateUser("After", "after@example.com"); err != nil {
		t.Fatal(err)
	}
	expired := `{"errors":[{"message":"Forbidden: authorization expired","extensions":{"code":"FORBIDDEN"}}]}`
	if got, want := sse.rest(), "event: next\ndata: "+expired+"\n\nevent: complete\ndata:\n\n"; got != want {
		t.Errorf("SSE at the expiry: %q, want %q", got, want)
	}
	part := "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"
	if got, want := multi.rest(), part+`{"payload":null,`+expired[1:]+"\r\n--graphql--\r\n"; got != want {
		t.Errorf("multipart at the expiry: %q, want %q", got, want)
	}
	testkit.Eventually(t, noSubscribers(a.store))

	refused := newStreamReader(t, streamRequest(t, a.httpAddr, sseAccept, userSub))
	if got := refused.upTo("\n\n"); !strings.Contains(got, "FORBIDDEN") {
		t.Errorf("SSE without a token under -auth-reads: %q", got)
	}
}

// TestShutdownEndsStreams: stopping the service ends an SSE subscription with
// complete (its source ends first) and the answer, and shutdown succeeds.
func TestShutdownEndsStreams(t *testing.T) {
	a, err := start(testConfig(), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	sse := newStreamReader(t, streamRequest(t, a.httpAddr, sseAccept, userSub))
	testkit.Eventually(t, subscribersReach(a.store, 1))
	done := make(chan error, 1)
	go func() { done <- a.shutdown() }()
	if got, want := sse.rest(), "event: complete\ndata:\n\n"; got != want {
		t.Errorf("at shutdown: %q, want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestCurlStreams: curl -N reads a @defer query's events over SSE as they come, and
// a multipart subscription's parts.
func TestCurlStreams(t *testing.T) {
	testkit.RequireCommand(t, "curl", "apt-get install curl")
	a, _ := startApp(t, testConfig())
	out, err := exec.CommandContext(t.Context(), "curl", "-sSN", "--compressed", "-H", "Accept: text/event-stream",
		"--json", `{"query":"{ user(id: 1) { id ... @defer { email } } }"}`, "http://"+a.httpAddr+"/graphql").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "event: next\ndata: {\"data\":{\"user\":{\"id\":1}},\"hasNext\":true}\n\n" +
		"event: next\ndata: {\"incremental\":[{\"data\":{\"email\":\"alice@example.com\"},\"path\":[\"user\"]}],\"hasNext\":false}\n\n" +
		"event: complete\ndata:\n\n"
	if string(out) != want {
		t.Errorf("curl -N, SSE @defer:\n%q\nwant\n%q", out, want)
	}

	cmd := exec.CommandContext(t.Context(), "curl", "-sSN", "-H", "Accept: "+multipartAccept, "--json", userSub, "http://"+a.httpAddr+"/graphql")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	testkit.Eventually(t, subscribersReach(a.store, 1))
	if _, err := a.store.CreateUser("Curl", "curl@example.com"); err != nil {
		t.Fatal(err)
	}
	sr := &streamReader{t, bufio.NewReader(stdout)}
	sr.upTo("\r\n--graphql")
	if got := sr.upTo("\r\n--graphql"); !strings.Contains(got, `{"payload":{"data":{"onUserCreated":{"id":7,"name":"Curl"}}}}`) {
		t.Errorf("curl -N, multipart subscription: %q", got)
	}
}

// TestStreamsCountWithWebSockets: with -ws-max-sockets-per-client 1, a client with a
// WebSocket open gets 429 for an SSE stream, a multipart subscription and a
// reservation; once it closes the socket, a stream opens, and a WebSocket is refused.
func TestStreamsCountWithWebSockets(t *testing.T) {
	cfg := testConfig()
	cfg.admission.WSSocketsPerClient = 1
	a, _ := startApp(t, cfg)
	c := dialSubscription(t, a.httpAddr, "subscription { onUserCreated { id } }")
	testkit.Eventually(t, subscribersReach(a.store, 1))
	for _, accept := range []string{sseAccept, multipartAccept} {
		resp := streamRequest(t, a.httpAddr, accept, userSub)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s beside a WebSocket at the cap: %d", accept, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+a.httpAddr+"/graphql", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a reservation beside a WebSocket at the cap: %v %v", resp, err)
	}
	c.CloseNow()
	testkit.Eventually(t, noSubscribers(a.store))
	testkit.Eventually(t, func() error {
		resp := streamRequest(t, a.httpAddr, sseAccept, userSub)
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("no stream once the socket closed: %d", resp.StatusCode)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, "ws://"+a.httpAddr+"/graphql", nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a WebSocket beside a stream at the cap: %v %v", resp, err)
	}
}
