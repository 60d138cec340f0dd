package graphql

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/admission"
	"quartet/internal/testkit"
)

// streamServer is an httptest server with the package's Handler serving
// WebSockets and Streams over the test schema, onUserCreated fed by a wsHub.
type streamServer struct {
	*httptest.Server
	streams *Streams
	ws      *WebSocketHandler
	hub     *wsHub
}

func newStreamServer(t testing.TB, hubBuf int, opts StreamOptions) *streamServer {
	t.Helper()
	s, hub := newHubSchema(t, hubBuf)
	h := NewHandler(s)
	ws := NewWebSocketHandler(s, WebSocketOptions{Sockets: opts.Sockets, Operations: opts.Operations})
	h.WebSocket = ws
	h.Streams = NewStreams(s, opts)
	srv := &streamServer{Server: httptest.NewServer(h), streams: h.Streams, ws: ws, hub: hub}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wsWait)
		defer cancel()
		hub.end()
		if err := h.Streams.Shutdown(ctx); err != nil {
			t.Errorf("Streams.Shutdown: %v", err)
		}
		ws.Shutdown(ctx)
		srv.Close()
	})
	return srv
}

const subUserSSE = `{"query":"subscription { onUserCreated { id name } }"}`

// request sends method to the server's endpoint with body and headers in
// pairs, and returns the answer, its body unread.
func (s *streamServer) request(t testing.TB, method, query, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+query, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
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

// status sends a request and returns its status and body.
func (s *streamServer) status(t testing.TB, method, query, body string, headers ...string) (int, string) {
	t.Helper()
	resp := s.request(t, method, query, body, headers...)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventReader reads an event stream one event (or comment) at a time.
type eventReader struct {
	t  testing.TB
	br *bufio.Reader
}

func readEvents(t testing.TB, resp *http.Response) *eventReader {
	return &eventReader{t, bufio.NewReader(resp.Body)}
}

// next returns the next event, its lines up to the blank line that ends it;
// "" at the end of the stream. It fails the test if none comes in time.
func (er *eventReader) next() string {
	er.t.Helper()
	got := make(chan string, 1)
	go func() {
		var ev strings.Builder
		for {
			line, err := er.br.ReadString('\n')
			if err != nil {
				got <- ev.String()
				return
			}
			if line == "\n" {
				got <- ev.String()
				return
			}
			ev.WriteString(line)
		}
	}()
	select {
	case ev := <-got:
		return ev
	case <-time.After(wsWait):
		er.t.Fatal("no event came")
		return ""
	}
}

// nextEvent skips keep-alive comments.
func (er *eventReader) nextEvent() string {
	er.t.Helper()
	for {
		if ev := er.next(); !strings.HasPrefix(ev, ":") {
			return ev
		}
	}
}

func expectEvent(t testing.TB, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("event:\n%q\nwant\n%q", got, want)
	}
}

// TestSSEDistinctSubscription: a subscription's events each come as a next
// event, with the streaming headers, and complete when its source ends.
func TestSSEDistinctSubscription(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	resp := srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream")
	for header, want := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(header); got != want {
			t.Errorf("%s: %q, want %q", header, got, want)
		}
	}
	er := readEvents(t, resp)
	srv.hub.waitActive(t, 1)
	srv.hub.publish("Dan")
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"data\":{\"onUserCreated\":{\"id\":11,\"name\":\"Dan\"}}}\n")
	srv.hub.publish("Eve")
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"data\":{\"onUserCreated\":{\"id\":12,\"name\":\"Eve\"}}}\n")
	srv.hub.end()
	expectEvent(t, er.nextEvent(), "event: complete\ndata:\n")
	expectEvent(t, er.next(), "")
}

// TestStreamKeepAlive: an idle SSE stream gets comments, an idle multipart
// subscription empty parts.
func TestStreamKeepAlive(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{KeepAlive: time.Millisecond, Heartbeat: time.Millisecond})
	er := readEvents(t, srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream"))
	expectEvent(t, er.next(), ":\n")

	resp := srv.request(t, "POST", "", subUserSSE, "Accept", "multipart/mixed;subscriptionSpec=1.0, application/json")
	part := make([]byte, len("\r\n--graphql"+partHeader+"{}\r\n--graphql"))
	if _, err := io.ReadFull(resp.Body, part); err != nil {
		t.Fatal(err)
	}
	if want := "\r\n--graphql" + partHeader + "{}\r\n--graphql"; string(part) != want {
		t.Fatalf("multipart heartbeat: %q, want %q", part, want)
	}
}

// TestMultipartSubscription: each event in a part of its own as a payload,
// the closing delimiter when the source ends.
func TestMultipartSubscription(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	resp := srv.request(t, "POST", "", subUserSSE, "Accept", `multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json`)
	if got, want := resp.Header.Get("Content-Type"), `multipart/mixed; boundary="graphql"; subscriptionSpec="1.0"`; got != want {
		t.Errorf("Content-Type: %q, want %q", got, want)
	}
	srv.hub.waitActive(t, 1)
	srv.hub.publish("Dan")
	srv.hub.end()
	body, _ := io.ReadAll(resp.Body)
	want := "\r\n--graphql" + partHeader + `{"payload":{"data":{"onUserCreated":{"id":11,"name":"Dan"}}}}` + "\r\n--graphql--\r\n"
	if string(body) != want {
		t.Fatalf("body:\n%q\nwant\n%q", body, want)
	}
}

// authorizedFor admits every stream, authorized until d from now.
func streamAuthorizedFor(d time.Duration) InitFunc {
	return func(r *http.Request, _ map[string]any) (context.Context, error) {
		return AuthorizedUntil(r.Context(), time.Now().Add(d)), nil
	}
}

// TestStreamAuthorizationExpires: at its authorization's end a stream ends
// with an error: a next event and complete over SSE, a transport error over
// multipart; the subscription is gone.
func TestStreamAuthorizationExpires(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{Authorize: streamAuthorizedFor(50 * time.Millisecond)})
	er := readEvents(t, srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream"))
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"errors\":[{\"message\":\"Forbidden: authorization expired\",\"extensions\":{\"code\":\"FORBIDDEN\"}}]}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata:\n")
	expectEvent(t, er.next(), "")

	resp := srv.request(t, "POST", "", subUserSSE, "Accept", "multipart/mixed;subscriptionSpec=1.0")
	body, _ := io.ReadAll(resp.Body)
	want := "\r\n--graphql" + partHeader + `{"payload":null,"errors":[{"message":"Forbidden: authorization expired","extensions":{"code":"FORBIDDEN"}}]}` + "\r\n--graphql--\r\n"
	if string(body) != want {
		t.Fatalf("body:\n%q\nwant\n%q", body, want)
	}
	srv.hub.waitActive(t, 0)

	srv = newStreamServer(t, 8, StreamOptions{Authorize: streamAuthorizedFor(-time.Second)})
	er = readEvents(t, srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream"))
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"errors\":[{\"message\":\"Forbidden: authorization expired\",\"extensions\":{\"code\":\"FORBIDDEN\"}}]}\n")
}

// TestSSESingleConnection: a reservation, its stream, operations on it by id,
// one stopped by DELETE, a second stream refused, and the reservation gone
// with its stream.
func TestSSESingleConnection(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	status, token := srv.status(t, "PUT", "", "")
	if status != http.StatusCreated || token == "" {
		t.Fatalf("PUT: %d %q", status, token)
	}
	tok := []string{EventStreamTokenHeader, token}
	resp := srv.request(t, "GET", "?token="+url.QueryEscape(token), "", "Accept", "text/event-stream")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	er := readEvents(t, resp)
	if status, _ := srv.status(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...); status != http.StatusConflict {
		t.Errorf("a second stream: %d, want 409", status)
	}
	post := func(id, query string) (int, string) {
		return srv.status(t, "POST", "", `{"query":"`+query+`","extensions":{"operationId":"`+id+`"}}`, tok...)
	}
	if status, body := post("s", "subscription { onUserCreated { id } }"); status != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	srv.hub.waitActive(t, 1)
	if status, body := post("s", "{ user(id: 1) { name } }"); status != http.StatusConflict {
		t.Errorf("an id in use: %d %s", status, body)
	}
	if status, body := post("q", "{ user(id: 1) { name } }"); status != http.StatusAccepted {
		t.Fatalf("query: %d %s", status, body)
	}
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"q\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}}}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"q\"}\n")
	srv.hub.publish("Dan")
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"s\",\"payload\":{\"data\":{\"onUserCreated\":{\"id\":11}}}}\n")
	if status, body := post("v", "{ nope }"); status != http.StatusBadRequest || !strings.Contains(body, "GRAPHQL_VALIDATION_FAILED") {
		t.Errorf("a validation error: %d %s", status, body)
	}
	if status, body := srv.status(t, "POST", "", `{"query":"{ user(id: 1) { name } }"}`, tok...); status != http.StatusBadRequest || !strings.Contains(body, "operationId") {
		t.Errorf("no operationId: %d %s", status, body)
	}
	if status, _ := srv.status(t, "DELETE", "?operationId=s", "", tok...); status != http.StatusOK {
		t.Errorf("DELETE: %d", status)
	}
	srv.hub.waitActive(t, 0)
	resp.Body.Close()
	waitFor(t, "the reservation to end with its stream", func() bool {
		status, _ := srv.status(t, "POST", "", `{"query":"{ user(id: 1) { name } }","extensions":{"operationId":"x"}}`, tok...)
		return status == http.StatusNotFound
	})
}

// TestSSESingleConnectionAnswersBudget: a reserved stream's events hold their
// bytes of the client's answers budget until the stream writes them; one that
// would pass the budget ends its operation with TOO_MANY_REQUESTS, and nothing
// stays held once the reservation ends.
func TestSSESingleConnectionAnswersBudget(t *testing.T) {
	answers := admission.NewBudget("answer bytes waiting to be read", 150, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Answers: answers})
	status, token := srv.status(t, "PUT", "", "")
	if status != http.StatusCreated {
		t.Fatalf("PUT: %d", status)
	}
	tok := []string{EventStreamTokenHeader, token}
	post := func(id, query string) {
		t.Helper()
		if status, body := srv.status(t, "POST", "", `{"query":"`+query+`","extensions":{"operationId":"`+id+`"}}`, tok...); status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", id, status, body)
		}
	}
	post("a", "{ user(id: 1) { name } }") // no stream yet: its event waits, holding its bytes
	waitFor(t, "the first event to hold its bytes", func() bool { return answers.Held() > 0 })
	post("b", "{ user(id: 1) { name email } }") // both together would pass 150 bytes
	resp := srv.request(t, "GET", "?token="+url.QueryEscape(token), "", "Accept", "text/event-stream")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	er := readEvents(t, resp)
	var got []string
	for range 4 {
		got = append(got, er.nextEvent())
	}
	slices.Sort(got)
	want := []string{
		"event: complete\ndata: {\"id\":\"a\"}\n",
		"event: complete\ndata: {\"id\":\"b\"}\n",
		"event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}}}}\n",
	}
	if len(got) != 4 || !slices.Equal(got[:3], want) || !strings.Contains(got[3], `"id":"b"`) || !strings.Contains(got[3], codeTooManyRequests) {
		t.Errorf("events:\n%s\nwant a's result and complete, and b's TOO_MANY_REQUESTS and complete", strings.Join(got, "\n"))
	}
	resp.Body.Close()
	waitFor(t, "the held bytes to be given back", func() bool { return answers.Held() == 0 })
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, func() error {
		if cond() {
			return nil
		}
		return errors.New("still waiting for " + what)
	})
}

// TestSSEReservationExpires: a reservation no stream takes ends, and gives
// its socket back.
func TestSSEReservationExpires(t *testing.T) {
	sockets := admission.NewBudget("WebSocket connections", 1, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Sockets: sockets, ReservationTimeout: time.Millisecond})
	status, token := srv.status(t, "PUT", "", "")
	if status != http.StatusCreated {
		t.Fatalf("PUT: %d", status)
	}
	waitFor(t, "the reservation to expire", func() bool { return sockets.Held() == 0 })
	if status, _ := srv.status(t, "GET", "?token="+url.QueryEscape(token), "", "Accept", "text/event-stream"); status != http.StatusNotFound {
		t.Errorf("the stream of an expired reservation: %d, want 404", status)
	}
}

// TestStreamCapsSharedWithWebSockets: streams, reservations and WebSockets
// claim from one Sockets budget, operations from one Operations budget.
func TestStreamCapsSharedWithWebSockets(t *testing.T) {
	sockets := admission.NewBudget("WebSocket connections", 1, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Sockets: sockets})
	c := dialWS(t, "ws"+strings.TrimPrefix(srv.URL, "http"), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	for _, tc := range []struct {
		name, method, body, accept string
	}{
		{"SSE", "POST", subUserSSE, "text/event-stream"},
		{"multipart", "POST", subUserSSE, "multipart/mixed;subscriptionSpec=1.0"},
		{"reservation", "PUT", "", ""},
	} {
		status, body := srv.status(t, tc.method, "", tc.body, "Accept", tc.accept)
		if status != http.StatusTooManyRequests || !strings.Contains(body, codeTooManyRequests) {
			t.Errorf("%s at the socket cap: %d %s", tc.name, status, body)
		}
	}
	c.CloseNow()
	waitFor(t, "the socket to be given back", func() bool { return sockets.Held() == 0 })
	resp := srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream")
	srv.hub.waitActive(t, 1)
	if err := dialWSErr(srv); err == nil {
		t.Error("a WebSocket opened beside a stream at the socket cap")
	}
	resp.Body.Close()

	ops := admission.NewBudget("WebSocket operations", 1, 0, nil)
	srv = newStreamServer(t, 8, StreamOptions{Operations: ops})
	srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream")
	srv.hub.waitActive(t, 1)
	if status, _ := srv.status(t, "POST", "", subUserSSE, "Accept", "text/event-stream"); status != http.StatusTooManyRequests {
		t.Errorf("a second operation at the operations cap: %d", status)
	}
}

// dialWSErr opens a WebSocket to srv and returns why it was refused.
func dialWSErr(srv *streamServer) error {
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{ProtocolTransportWS}})
	if err == nil {
		c.CloseNow()
	}
	return err
}

// TestStreamSlowReader: a client that stops reading loses its stream once a
// write waits for WriteTimeout; its subscription ends.
func TestStreamSlowReader(t *testing.T) {
	srv := newStreamServer(t, 1<<20, StreamOptions{WriteTimeout: 50 * time.Millisecond})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(subUserSSE))+"\r\n\r\n"+subUserSSE)
	srv.hub.waitActive(t, 1)
	big := strings.Repeat("x", 256<<10)
	waitFor(t, "the unread stream to end", func() bool {
		srv.hub.publish(big)
		return len(srv.hub.subscribers()) == 0
	})
}

// TestStreamShutdown: Shutdown ends open streams and reservations, and refuses
// new ones with 503.
func TestStreamShutdown(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	er := readEvents(t, srv.request(t, "POST", "", subUserSSE, "Accept", "text/event-stream"))
	_, token := srv.status(t, "PUT", "", "")
	reserved := readEvents(t, srv.request(t, "GET", "", "", EventStreamTokenHeader, token, "Accept", "text/event-stream"))
	srv.hub.waitActive(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	if err := srv.streams.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, er.next(), "")
	expectEvent(t, reserved.next(), "")
	srv.hub.waitActive(t, 0)
	if status, _ := srv.status(t, "POST", "", subUserSSE, "Accept", "text/event-stream"); status != http.StatusServiceUnavailable {
		t.Errorf("a stream after Shutdown: %d, want 503", status)
	}
	if status, _ := srv.status(t, "PUT", "", ""); status != http.StatusServiceUnavailable {
		t.Errorf("a reservation after Shutdown: %d, want 503", status)
	}
}

// TestStreamAccept: which Accept headers ask for an event stream, and which for
// Apollo's multipart subscriptions.
func TestStreamAccept(t *testing.T) {
	for _, tc := range []struct {
		accept            string
		sse, subscription bool
	}{
		{"text/event-stream", true, false},
		{"text/event-stream, application/json", true, false},
		{"application/json, text/event-stream;q=0.5", false, false},
		{"text/event-stream;q=0", false, false},
		{"application/json", false, false},
		{"", false, false},
		{"multipart/mixed;subscriptionSpec=1.0, application/json", false, true},
		{`multipart/mixed;boundary="graphql";subscriptionSpec="1.0",application/json`, false, true},
		{"multipart/mixed;subscriptionSpec=1.0;q=0", false, false},
		{"multipart/mixed;deferSpec=20220824", false, false},
		{"multipart/mixed, text/event-stream;q=0.9", false, false},
		// urql: a query names JSON first, a subscription only the streams.
		{"application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed", false, false},
		{"text/event-stream, multipart/mixed", true, false},
	} {
		if got := acceptsEventStream(acceptRanges(tc.accept)); got != tc.sse {
			t.Errorf("acceptsEventStream(%q) = %v", tc.accept, got)
		}
		if got := acceptsSubscriptionSpec(acceptRanges(tc.accept)); got != tc.subscription {
			t.Errorf("acceptsSubscriptionSpec(%q) = %v", tc.accept, got)
		}
	}
}

// FuzzSSERequest: whatever a request to the streams holds, the answer is either
// refused as JSON or an event stream of next events, each holding one JSON
// value, ended by complete.
func FuzzSSERequest(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{ user(id: 1) { id ... @defer { email } } }"}`,
		`{"query":"{ users @stream(initialCount: 1) { id } }"}`,
		`{"query":"mutation { deleteUser(id: 1) }"}`,
		`{"query":"subscription { onUserCreated { id } }"}`,
		`{"query":"{ nope }","variables":{"a":[1,{"b":null}]}}`,
		`[{"query":"{ user(id: 1) { id } }"}]`,
		`{"query":"{ user(id: 1) { id } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`,
		`not json`,
	} {
		f.Add("POST", seed)
	}
	f.Add("GET", "query={ user(id: 1) { name } }")
	srv := newStreamServer(f, 8, StreamOptions{})
	h := srv.Config.Handler
	f.Fuzz(func(t *testing.T, method, body string) {
		if method != "GET" && method != "POST" {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a subscription ends at once rather than wait for events
		r := httptest.NewRequestWithContext(ctx, method, "/", strings.NewReader(body))
		if method == "GET" {
			r = httptest.NewRequestWithContext(ctx, method, "/?"+url.PathEscape(body), nil)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			return
		}
		for ev := range strings.SplitSeq(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n") {
			if ev == "event: complete\ndata:" || ev == "" {
				continue
			}
			data, ok := strings.CutPrefix(ev, "event: next\ndata: ")
			if !ok || !json.Valid([]byte(data)) {
				t.Fatalf("event %q", ev)
			}
		}
	})
}

// TestSSESingleConnectionExpires: at the end of the authorization its
// reservation was made with, each operation on the stream ends with the error,
// then complete, and the stream ends.
func TestSSESingleConnectionExpires(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{Authorize: streamAuthorizedFor(time.Second)})
	status, token := srv.status(t, "PUT", "", "")
	if status != http.StatusCreated {
		t.Fatalf("PUT: %d", status)
	}
	er := readEvents(t, srv.request(t, "GET", "", "", EventStreamTokenHeader, token, "Accept", "text/event-stream"))
	if status, body := srv.status(t, "POST", "", `{"query":"subscription { onUserCreated { id } }","extensions":{"operationId":"s"}}`, EventStreamTokenHeader, token); status != http.StatusAccepted {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"s\",\"payload\":{\"errors\":[{\"message\":\"Forbidden: authorization expired\",\"extensions\":{\"code\":\"FORBIDDEN\"}}]}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"s\"}\n")
	expectEvent(t, er.next(), "")
	srv.hub.waitActive(t, 0)
}

// TestSSESingleConnectionRenderClaims: a reserved operation's result holds its
// bytes of the client's answers budget from when they are rendered, in its
// POST, not only once its event is queued; the event then holds that claim,
// not a second one, and gives it back when written.
func TestSSESingleConnectionRenderClaims(t *testing.T) {
	answers := admission.NewBudget("answer bytes waiting to be read", 1<<20, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Answers: answers})
	const size = 200 << 10
	srv.streams.schema.SetResolver("Query", "echo", func(ResolveParams) (any, error) { return strings.Repeat("x", size), nil })
	rendered, goOn := make(chan int64), make(chan struct{})
	srv.streams.schema.SetResolver("Query", "fail", func(ResolveParams) (any, error) {
		rendered <- answers.Held()
		<-goOn
		return nil, nil
	})
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	posted := make(chan int)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"query":"{ echo fail }","extensions":{"operationId":"big"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(tok[0], tok[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			posted <- 0
			return
		}
		resp.Body.Close()
		posted <- resp.StatusCode
	}()
	if held := <-rendered; held < size {
		t.Errorf("while rendering, %d bytes held after %d rendered", held, size)
	}
	close(goOn)
	if status := <-posted; status != http.StatusAccepted {
		t.Fatalf("POST: %d", status)
	}
	waitFor(t, "the event and complete to be queued", func() bool {
		srv.streams.mu.Lock()
		defer srv.streams.mu.Unlock()
		return len(srv.streams.reservations[token].out) == 2
	})
	if held := answers.Held(); held < size || held > 2*size {
		t.Errorf("the queued event holds %d bytes, want its own (%d and some), once", held, size)
	}
	resp := srv.request(t, "GET", "?token="+url.QueryEscape(token), "", "Accept", "text/event-stream")
	er := readEvents(t, resp)
	if ev := er.nextEvent(); len(ev) < size || !strings.Contains(ev, `"id":"big"`) {
		t.Fatalf("event: %.200q", ev)
	}
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"big\"}\n")
	waitFor(t, "the held bytes to be given back", func() bool { return answers.Held() == 0 })
}

// blockFail makes Query.fail signal rendering, then wait for goOn to close.
func blockFail(srv *streamServer) (rendering, goOn chan struct{}) {
	rendering, goOn = make(chan struct{}), make(chan struct{})
	srv.streams.schema.SetResolver("Query", "fail", func(ResolveParams) (any, error) {
		close(rendering)
		<-goOn
		return "stale", nil
	})
	return rendering, goOn
}

// TestSSESingleConnectionStopWhileRendering: an operation stopped by DELETE
// while it renders sends nothing more, and its id is free again only once it
// has ended, so that the end of the stopped operation cannot end another that
// took its id.
func TestSSESingleConnectionStopWhileRendering(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	rendering, goOn := blockFail(srv)
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	er := readEvents(t, srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...))
	post := func(query string) (int, string) {
		return srv.status(t, "POST", "", `{"query":"`+query+`","extensions":{"operationId":"a"}}`, tok...)
	}
	if status, body := post("{ user(id: 1) { name } ... @defer { fail } }"); status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", status, body)
	}
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}},\"hasNext\":true}}\n")
	<-rendering
	if status, _ := srv.status(t, "DELETE", "?operationId=a", "", tok...); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	if status, body := post("subscription { onUserCreated { id } }"); status != http.StatusConflict {
		t.Errorf("the id of an operation still ending: %d %s, want 409", status, body)
	}
	close(goOn)
	waitFor(t, "the id to be free", func() bool {
		status, _ := post("subscription { onUserCreated { id } }")
		return status == http.StatusAccepted
	})
	srv.hub.waitActive(t, 1)
	srv.hub.publish("Dan")
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"onUserCreated\":{\"id\":11}}}}\n")
}

// TestSSESingleConnectionExpiresAfterStop: when the authorization ends, an
// operation stopped by DELETE whose goroutine has not ended yet gets no error
// and no complete; the others do.
func TestSSESingleConnectionExpiresAfterStop(t *testing.T) {
	clock := &wsClock{}
	until := time.Now().Add(time.Hour)
	srv := newStreamServer(t, 8, StreamOptions{Now: clock.now, Authorize: func(r *http.Request, _ map[string]any) (context.Context, error) {
		return AuthorizedUntil(r.Context(), until), nil
	}})
	rendering, goOn := blockFail(srv)
	defer close(goOn)
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	er := readEvents(t, srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...))
	post := func(id, query string) {
		if status, body := srv.status(t, "POST", "", `{"query":"`+query+`","extensions":{"operationId":"`+id+`"}}`, tok...); status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", id, status, body)
		}
	}
	post("b", "subscription { onUserCreated { id } }")
	srv.hub.waitActive(t, 1)
	post("a", "{ user(id: 1) { name } ... @defer { fail } }")
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}},\"hasNext\":true}}\n")
	<-rendering
	if status, _ := srv.status(t, "DELETE", "?operationId=a", "", tok...); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	clock.set(until)
	srv.hub.publish("Dan") // an event finds the authorization lapsed
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"b\",\"payload\":{\"errors\":[{\"message\":\"Forbidden: authorization expired\",\"extensions\":{\"code\":\"FORBIDDEN\"}}]}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"b\"}\n")
	expectEvent(t, er.next(), "")
}

// TestSSESingleConnectionShutdownLastEvents: at Shutdown, after the event
// sources have ended, a reserved stream still gets each subscription's last
// events and complete, then ends.
func TestSSESingleConnectionShutdownLastEvents(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	er := readEvents(t, srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...))
	for _, id := range []string{"a", "b"} {
		if status, body := srv.status(t, "POST", "", `{"query":"subscription { onUserCreated { id } }","extensions":{"operationId":"`+id+`"}}`, tok...); status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", id, status, body)
		}
	}
	srv.hub.waitActive(t, 2)
	srv.hub.publish("Dan")
	srv.hub.end()
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	if err := srv.streams.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := er.nextEvent(); ev != ""; ev = er.nextEvent() {
		got = append(got, ev)
	}
	slices.Sort(got)
	want := []string{
		"event: complete\ndata: {\"id\":\"a\"}\n",
		"event: complete\ndata: {\"id\":\"b\"}\n",
		"event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"onUserCreated\":{\"id\":11}}}}\n",
		"event: next\ndata: {\"id\":\"b\",\"payload\":{\"data\":{\"onUserCreated\":{\"id\":11}}}}\n",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// zeroReleaseGate is an answers budget that bounds nothing and holds each
// release of nothing (a complete's) until open is closed.
type zeroReleaseGate struct{ open chan struct{} }

func (zeroReleaseGate) Claim(string, int64) error { return nil }
func (g zeroReleaseGate) Release(_ string, n int64) {
	if n == 0 {
		<-g.open
	}
}

// TestSSESingleConnectionIDFreeAtComplete: once a client has an operation's
// complete, it may start another with the same id, whatever the ended
// operation's goroutine still does; the new operation runs to its end.
func TestSSESingleConnectionIDFreeAtComplete(t *testing.T) {
	gate := zeroReleaseGate{make(chan struct{})}
	srv := newStreamServer(t, 8, StreamOptions{Answers: gate})
	var once sync.Once
	open := func() { once.Do(func() { close(gate.open) }) }
	t.Cleanup(open) // before the server's cleanup, which waits for the stream
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	er := readEvents(t, srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...))
	post := func() {
		t.Helper()
		if status, body := srv.status(t, "POST", "", `{"query":"{ user(id: 1) { name } }","extensions":{"operationId":"q"}}`, tok...); status != http.StatusAccepted {
			t.Fatalf("POST: %d %s", status, body)
		}
	}
	post()
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"q\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}}}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"q\"}\n")
	post() // the first operation's goroutine is held in its last release
	open()
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"q\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}}}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"q\"}\n")
}

// TestSSEShutdownLastEvents: a subscription stream that finds its source ended
// and the server shutting down at once still sends the source's last event and
// complete. Select picks at random between ready cases: twenty rounds find a
// stream that leaves at shutdown first.
func TestSSEShutdownLastEvents(t *testing.T) {
	for range 20 {
		s, hub := newHubSchema(t, 8)
		h := NewHandler(s)
		streams := NewStreams(s, StreamOptions{})
		op, errs, _ := streams.start(t.Context(), h, http.MethodPost, &httpParams{Query: "subscription { onUserCreated { id } }"})
		if errs != nil {
			t.Fatal(errs)
		}
		hub.publish("Dan")
		hub.end()
		if err := streams.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		streams.follow(t.Context(), openStream(rec, sseFraming{}, time.Second), op, time.Time{}, time.Hour)
		if got, want := rec.Body.String(), "event: next\ndata: {\"data\":{\"onUserCreated\":{\"id\":11}}}\n\nevent: complete\ndata:\n\n"; got != want {
			t.Fatalf("stream: %q, want %q", got, want)
		}
	}
}

// TestSSESingleConnectionStoppedEventsDropped: events an operation queued
// before DELETE stopped it are never written, even once another operation has
// taken its id, and their bytes of the answers budget are given back.
func TestSSESingleConnectionStoppedEventsDropped(t *testing.T) {
	answers := admission.NewBudget("answer bytes waiting to be read", 1<<20, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Answers: answers})
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	post := func(query string) int {
		status, _ := srv.status(t, "POST", "", `{"query":"`+query+`","extensions":{"operationId":"a"}}`, tok...)
		return status
	}
	if status := post("subscription { onUserCreated { id } }"); status != http.StatusAccepted {
		t.Fatalf("subscribe: %d", status)
	}
	srv.hub.waitActive(t, 1)
	srv.hub.publish("Dan") // no stream yet: the event waits in the queue
	waitFor(t, "the event to be queued", func() bool { return answers.Held() > 0 })
	if status, _ := srv.status(t, "DELETE", "?operationId=a", "", tok...); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	waitFor(t, "the id to be free", func() bool { return post("{ user(id: 1) { name } }") == http.StatusAccepted })
	er := readEvents(t, srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...))
	expectEvent(t, er.nextEvent(), "event: next\ndata: {\"id\":\"a\",\"payload\":{\"data\":{\"user\":{\"name\":\"Alice\"}}}}\n")
	expectEvent(t, er.nextEvent(), "event: complete\ndata: {\"id\":\"a\"}\n")
	waitFor(t, "the held bytes to be given back", func() bool { return answers.Held() == 0 })
}

// TestSSESingleConnectionCycles: hundreds of operations started and stopped
// by DELETE on one reservation leave nothing behind once it ends: no
// goroutine, no source, nothing held of the client's budgets.
func TestSSESingleConnectionCycles(t *testing.T) {
	ops := admission.NewBudget("WebSocket operations", 1000, 0, nil)
	answers := admission.NewBudget("answer bytes waiting to be read", 1<<20, 0, nil)
	srv := newStreamServer(t, 8, StreamOptions{Operations: ops, Answers: answers})
	base := runtime.NumGoroutine()
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	resp := srv.request(t, "GET", "", "", append(tok, "Accept", "text/event-stream")...)
	go io.Copy(io.Discard, resp.Body)
	for i := range 300 {
		id := strconv.Itoa(i)
		q := "subscription { onUserCreated { id } }"
		if i%2 == 1 {
			q = "{ user(id: 1) { name } }"
		}
		if status, body := srv.status(t, "POST", "", `{"query":"`+q+`","extensions":{"operationId":"`+id+`"}}`, tok...); status != http.StatusAccepted {
			t.Fatalf("POST %d: %d %s", i, status, body)
		}
		srv.status(t, "DELETE", "?operationId="+id, "", tok...)
	}
	srv.hub.waitActive(t, 0)
	resp.Body.Close()
	waitFor(t, "the reservation to end", func() bool {
		status, _ := srv.status(t, "DELETE", "?operationId=x", "", tok...)
		return status == http.StatusNotFound
	})
	waitFor(t, "the budgets to be given back", func() bool { return ops.Held() == 0 && answers.Held() == 0 })
	http.DefaultClient.CloseIdleConnections()
	waitGoroutines(t, base)
}

// TestSSESingleConnectionLongID: an operationId past maxOperationID bytes is
// refused with 400 and starts nothing.
func TestSSESingleConnectionLongID(t *testing.T) {
	srv := newStreamServer(t, 8, StreamOptions{})
	_, token := srv.status(t, "PUT", "", "")
	tok := []string{EventStreamTokenHeader, token}
	for id, want := range map[string]int{strings.Repeat("i", maxOperationID): http.StatusAccepted, strings.Repeat("i", maxOperationID+1): http.StatusBadRequest} {
		if status, body := srv.status(t, "POST", "", `{"query":"subscription { onUserCreated { id } }","extensions":{"operationId":"`+id+`"}}`, tok...); status != want {
			t.Errorf("an operationId of %d bytes: %d %.100s, want %d", len(id), status, body, want)
		}
	}
	srv.hub.waitActive(t, 1)
}
