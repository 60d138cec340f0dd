package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"quartet/internal/testkit"
)

// dialSubscription opens a graphql-transport-ws socket and starts query as id "1".
func dialSubscription(t *testing.T, httpAddr, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+httpAddr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	wsjson.Write(ctx, c, map[string]any{"type": "connection_init"})
	var ack map[string]any
	if err := wsjson.Read(ctx, c, &ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("ack: %v %v", ack, err)
	}
	wsjson.Write(ctx, c, map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": query}})
	return c
}

// TestSubscriptionOverWebSocketFromEverySurface creates a user over REST, gRPC and
// GraphQL while a WebSocket subscriber listens: it gets all three, in order, with its
// selected fields only.
func TestSubscriptionOverWebSocketFromEverySurface(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := dialSubscription(t, a.httpAddr, "subscription { onUserCreated { id name } }")
	testkit.Eventually(t, subscribersReach(a.store, 1))
	createUserOnEverySurface(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, want := range []string{
		`{"id":"1","payload":{"data":{"onUserCreated":{"id":7,"name":"Rest"}}},"type":"next"}`,
		`{"id":"1","payload":{"data":{"onUserCreated":{"id":8,"name":"Grpc"}}},"type":"next"}`,
		`{"id":"1","payload":{"data":{"onUserCreated":{"id":9,"name":"Gql"}}},"type":"next"}`,
	} {
		var msg json.RawMessage
		if err := wsjson.Read(ctx, c, &msg); err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal(msg, &v)
		got, _ := json.Marshal(v) // keys sorted, for a stable comparison
		if string(got) != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	}
}

// TestShutdownClosesWebSockets checks that stopping the service ends a live
// subscription cleanly: complete, then a going-away close frame; no error, and not
// a dropped connection.
func TestShutdownClosesWebSockets(t *testing.T) {
	a, err := start(testConfig(), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	c := dialSubscription(t, a.httpAddr, "subscription { onPostCreated { id } }")
	testkit.Eventually(t, subscribersReach(a.store, 1))
	done := make(chan error, 1)
	go func() { done <- a.shutdown() }()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var code websocket.StatusCode = -1
	var got []string
	for code == -1 {
		var msg json.RawMessage
		if err := wsjson.Read(ctx, c, &msg); err != nil {
			code = websocket.CloseStatus(err)
		} else {
			got = append(got, string(msg))
		}
	}
	if code != websocket.StatusGoingAway {
		t.Errorf("close status %v, want 1001 going away", code)
	}
	if want := []string{`{"id":"1","type":"complete"}`}; !slices.Equal(got, want) {
		t.Errorf("before the close: %q, want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// subscribersReach holds, for testkit.Eventually, once the store's change feed has
// n subscribers or more, i.e. the subscriptions started over the sockets listen.
func subscribersReach(s *Store, n int) func() error {
	return func() error {
		if got := feedSubscribers(s); got < n {
			return fmt.Errorf("%d subscribers, want %d", got, n)
		}
		return nil
	}
}

// testClock is a clock a test sets; it stands still in between.
type testClock struct {
	at atomic.Pointer[time.Time]
}

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.set(t)
	return c
}

func (c *testClock) now() time.Time  { return *c.at.Load() }
func (c *testClock) set(t time.Time) { c.at.Store(&t) }

// tokenExpiring is a token of testSecret for "alice", read scope only, whose exp is
// exp, to the millisecond.
func tokenExpiring(t *testing.T, exp time.Time) string {
	t.Helper()
	payload := fmt.Sprintf(`{"sub":"alice","exp":%.3f}`, float64(exp.UnixMilli())/1000)
	return jwtSign(t, []byte(testSecret), `{"alg":"HS256","typ":"JWT"}`, payload)
}

// tokenSocket opens a socket speaking protocol, authorized by token: in the
// connection_init payload for graphql-transport-ws, in the upgrade request's
// Authorization header for the legacy protocol (either protocol takes either place;
// this way both places are tried), and starts query as operation "1". It does not wait for the ack, which a
// socket that expires at once may never send.
func tokenSocket(t *testing.T, httpAddr, protocol, token, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{Subprotocols: []string{protocol}}
	init := map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}
	start := map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": query}}
	if protocol == "graphql-ws" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
		init = map[string]any{"type": "connection_init"}
		start["type"] = "start"
	}
	c, _, err := websocket.Dial(ctx, "ws://"+httpAddr+"/graphql", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	wsjson.Write(ctx, c, init)
	wsjson.Write(ctx, c, start) // after a close, this fails and the reader sees why
	return c
}

// readMessage reads one message, or returns the error that ended the socket.
func readMessage(t *testing.T, c *websocket.Conn) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if ctx.Err() != nil {
		t.Fatal("no message from the server within 20s")
	}
	return string(data), err
}

// readUntilClose reads messages until the socket closes, and returns them and the
// close.
func readUntilClose(t *testing.T, c *websocket.Conn) ([]string, websocket.CloseError) {
	t.Helper()
	var got []string
	for {
		msg, err := readMessage(t, c)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("the socket ended without a close frame: %v", err)
			}
			return got, ce
		}
		got = append(got, msg)
	}
}

// skipAcks drops the acknowledgement messages of both protocols from msgs.
func skipAcks(msgs []string) []string {
	return slices.DeleteFunc(msgs, func(m string) bool {
		return m == `{"type":"connection_ack"}` || m == `{"type":"ka"}`
	})
}

// readEvent reads the messages of c, speaking protocol, up to the event that
// carries the new user's e-mail; anything else but an acknowledgement fails.
func readEvent(t *testing.T, protocol string, c *websocket.Conn, email string) {
	t.Helper()
	for {
		msg, err := readMessage(t, c)
		if err != nil {
			t.Fatalf("%s: %v, want the event for %s", protocol, err, email)
		}
		if strings.Contains(msg, email) {
			return
		}
		if len(skipAcks([]string{msg})) > 0 {
			t.Fatalf("%s: %s, want the event for %s", protocol, msg, email)
		}
	}
}

// TestSubscriptionEndsWhenItsTokenExpires: with -auth-reads, a socket's
// subscriptions are reads its token allows, so at the token's exp plus the leeway
// the socket is closed with 4403, on both protocols, and no event from that
// instant on reaches it. The verifier's clock is the test's: an event just before
// the instant arrives, one at the instant does not; and the socket's timer closes
// it at the instant with no event at all.
func TestSubscriptionEndsWhenItsTokenExpires(t *testing.T) {
	protocols := []string{"graphql-transport-ws", "graphql-ws"}
	expired := map[string][]string{ // what each protocol sends before its 4403
		"graphql-transport-ws": nil,
		"graphql-ws":           {`{"type":"connection_error","payload":{"message":"authorization expired"}}`},
	}
	t0 := time.Now().Truncate(time.Second)
	start := func(t *testing.T) (*app, *testClock) {
		clock := newTestClock(t0)
		cfg := testConfig()
		cfg.jwt.secret = testSecret
		cfg.authReads = true
		cfg.jwtClock = clock.now
		a, _ := startApp(t, cfg)
		return a, clock
	}

	t.Run("events", func(t *testing.T) {
		a, clock := start(t)
		exp := t0.Add(time.Hour)
		until := exp.Add(jwtLeeway)
		token := tokenExpiring(t, exp)
		sockets := map[string]*websocket.Conn{}
		for _, p := range protocols {
			sockets[p] = tokenSocket(t, a.httpAddr, p, token, "subscription { onUserCreated { id email } }")
		}
		testkit.Eventually(t, subscribersReach(a.store, len(protocols)))

		clock.set(until.Add(-time.Nanosecond))
		if _, err := a.store.CreateUser("Before", "before@example.com"); err != nil {
			t.Fatal(err)
		}
		for p, c := range sockets {
			readEvent(t, p, c, "before@example.com")
		}

		clock.set(until)
		if _, err := a.store.CreateUser("After", "after@example.com"); err != nil {
			t.Fatal(err)
		}
		for p, c := range sockets {
			got, ce := readUntilClose(t, c)
			if ce.Code != 4403 || ce.Reason != "Forbidden: authorization expired" {
				t.Errorf("%s: closed with %v, want 4403 Forbidden: authorization expired", p, ce)
			}
			if got = skipAcks(got); !slices.Equal(got, expired[p]) {
				t.Errorf("%s: before the close %q, want %q", p, got, expired[p])
			}
		}
		testkit.Eventually(t, noSubscribers(a.store))
	})

	t.Run("timer", func(t *testing.T) {
		a, _ := start(t)
		// The clock stands at t0, so only the socket's timer, 100 ms on, can close it.
		token := tokenExpiring(t, t0.Add(-jwtLeeway+100*time.Millisecond))
		sockets := map[string]*websocket.Conn{}
		for _, p := range protocols { // both open before either timer is waited out
			sockets[p] = tokenSocket(t, a.httpAddr, p, token, "subscription { onUserCreated { id email } }")
		}
		for p, c := range sockets {
			got, ce := readUntilClose(t, c)
			if ce.Code != 4403 {
				t.Errorf("%s: closed with %v, want 4403", p, ce)
			}
			if got = skipAcks(got); !slices.Equal(got, expired[p]) {
				t.Errorf("%s: before the close %q, want %q", p, got, expired[p])
			}
		}
		testkit.Eventually(t, noSubscribers(a.store))
	})

	t.Run("at init", func(t *testing.T) {
		a, _ := start(t)
		token := tokenExpiring(t, t0.Add(-jwtLeeway)) // refused as today: token expired
		for _, p := range protocols {
			got, ce := readUntilClose(t, tokenSocket(t, a.httpAddr, p, token, "subscription { onUserCreated { id } }"))
			if ce.Code != 4403 || ce.Reason != "Forbidden: token expired" {
				t.Errorf("%s: closed with %v, want 4403 Forbidden: token expired", p, ce)
			}
			if p == "graphql-ws" && !slices.Equal(got, []string{`{"type":"connection_error","payload":{"message":"token expired"}}`}) {
				t.Errorf("%s: before the close %q", p, got)
			}
		}
	})
}

// TestSubscriptionWithoutAuthReadsOutlivesToken: without -auth-reads subscriptions
// need no token, so a token that came with the socket does not end it when it
// expires; a write over the socket is still checked against it when it runs.
func TestSubscriptionWithoutAuthReadsOutlivesToken(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clock := newTestClock(t0)
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.jwtClock = clock.now
	a, _ := startApp(t, cfg)
	exp := t0.Add(time.Minute)
	token := tokenExpiring(t, exp)
	sockets := map[string]*websocket.Conn{}
	for _, p := range []string{"graphql-transport-ws", "graphql-ws"} {
		sockets[p] = tokenSocket(t, a.httpAddr, p, token, "subscription { onUserCreated { id email } }")
	}
	testkit.Eventually(t, subscribersReach(a.store, len(sockets)))
	clock.set(exp.Add(jwtLeeway + time.Hour))
	if _, err := a.store.CreateUser("Later", "later@example.com"); err != nil {
		t.Fatal(err)
	}
	for p, c := range sockets {
		readEvent(t, p, c, "later@example.com")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := sockets["graphql-transport-ws"]
	wsjson.Write(ctx, c, map[string]any{"type": "subscribe", "id": "2", "payload": map[string]any{
		"query": `mutation { createUser(name: "Nope", email: "nope@example.com") { id } }`}})
	msg, err := readMessage(t, c)
	if err != nil || !strings.Contains(msg, `"id":"2"`) || !strings.Contains(msg, "UNAUTHENTICATED") || !strings.Contains(msg, "token expired") {
		t.Errorf("a mutation with the expired token: %s %v, want UNAUTHENTICATED token expired", msg, err)
	}
}

// noSubscribers holds, for testkit.Eventually, once the store's change feed has no
// subscriber.
func noSubscribers(s *Store) func() error {
	return func() error {
		if got := feedSubscribers(s); got != 0 {
			return fmt.Errorf("%d subscribers, want none", got)
		}
		return nil
	}
}
