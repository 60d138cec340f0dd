package graphql

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"quartet/internal/admission"
	"quartet/internal/jsonkeys"
	"quartet/internal/testkit"
)

// wsWait bounds every wait in these tests; reaching it means a hang, not
// slowness.
const wsWait = 20 * time.Second

var errFellBehind = errors.New("subscriber fell behind and was disconnected")

// wsHub is the test event source behind onUserCreated. Like the service's
// feed it never blocks a publisher: a subscriber whose buffer is full gets
// errFellBehind as its last event.
type wsHub struct {
	buf     int
	mu      sync.Mutex
	subs    map[*hubSub]struct{}
	started int
	changed chan struct{} // closed and replaced on every change
	nextID  int
}

type hubSub struct {
	c      chan any // room for buf events and the final error
	user   any      // the "user" value of the subscription's context, if any
	notify func()   // called after a send on c or its close
}

type wsUserKey struct{}

func newWSHub(buf int) *wsHub {
	return &wsHub{buf: buf, subs: map[*hubSub]struct{}{}, changed: make(chan struct{}), nextID: 10}
}

func (h *wsHub) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// subscribe adds a subscriber, the source stream of onUserCreated.
func (h *wsHub) subscribe(p ResolveParams, notify func()) (EventQueue, error) {
	s := &hubSub{c: make(chan any, h.buf+1), user: p.Context.Value(wsUserKey{}), notify: notify}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.started++
	h.notifyLocked()
	h.mu.Unlock()
	context.AfterFunc(p.Context, func() { h.remove(s) })
	return chanQueue(s.c), nil
}

func (h *wsHub) remove(s *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.c)
		s.notify()
		h.notifyLocked()
	}
}

// publish sends a new user event to every subscriber and returns the event
// and how many subscribers were cut off for falling behind.
func (h *wsHub) publish(name string) (event map[string]any, dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	u := map[string]any{"__typename": "User", "id": h.nextID, "name": name, "email": strings.ToLower(name) + "@example.com", "createdAt": day(5, 12), "role": "MEMBER"}
	for s := range h.subs {
		if len(s.c) < h.buf {
			s.c <- u
			s.notify()
			continue
		}
		s.c <- errFellBehind
		close(s.c)
		s.notify()
		delete(h.subs, s)
		dropped++
	}
	if dropped > 0 {
		h.notifyLocked()
	}
	return u, dropped
}

// end closes every source stream, as the service does at shutdown.
func (h *wsHub) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		close(s.c)
		s.notify()
		delete(h.subs, s)
	}
	h.notifyLocked()
}

// wait blocks until cond holds for the number of active subscriptions and
// of subscriptions ever started.
func (h *wsHub) wait(t testing.TB, what string, cond func(active, started int) bool) {
	t.Helper()
	deadline := time.After(wsWait)
	for {
		h.mu.Lock()
		ok := cond(len(h.subs), h.started)
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("event source: still waiting for %s", what)
		}
	}
}

func (h *wsHub) waitActive(t testing.TB, n int) {
	t.Helper()
	h.wait(t, fmt.Sprintf("%d active subscriptions", n), func(active, _ int) bool { return active == n })
}

func (h *wsHub) subscribers() []*hubSub {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hubSub
	for s := range h.subs {
		out = append(out, s)
	}
	return out
}

// wsCloseRecord is how the server says a connection ended.
type wsCloseRecord struct {
	code   websocket.StatusCode
	reason string
}

// wsServer is an httptest server with the package's Handler in front of a
// WebSocketHandler over the test schema, its onUserCreated fed by a wsHub.
type wsServer struct {
	*httptest.Server
	ws     *WebSocketHandler
	hub    *wsHub
	closes chan wsCloseRecord
	clock  *wsClock // the handler's
}

// wsClock is a WebSocketHandler's clock in a test: the real one until set.
type wsClock struct {
	at atomic.Pointer[time.Time]
}

func (c *wsClock) now() time.Time {
	if t := c.at.Load(); t != nil {
		return *t
	}
	return time.Now()
}

// set stops the clock at t.
func (c *wsClock) set(t time.Time) { c.at.Store(&t) }

// newHubSchema is the test schema with onUserCreated fed by a wsHub of
// hubBuf events: an error the hub sends is the event's error.
func newHubSchema(t testing.TB, hubBuf int) (*Schema, *wsHub) {
	t.Helper()
	s, err := ParseSchema(loadTestSDL(t))
	if err != nil {
		t.Fatal(err)
	}
	bindTestSchema(s, newTestStore())
	hub := newWSHub(hubBuf)
	s.SetNotifyingSubscriber("onUserCreated", hub.subscribe)
	s.SetResolver("Subscription", "onUserCreated", func(p ResolveParams) (any, error) {
		if err, ok := p.Source.(error); ok {
			return nil, err
		}
		return p.Source, nil
	})
	return s, hub
}

func newWSServer(t testing.TB, hubBuf int, opts WebSocketOptions) *wsServer {
	t.Helper()
	s, hub := newHubSchema(t, hubBuf)
	clock := &wsClock{}
	if opts.Now == nil {
		opts.Now = clock.now
	}
	ws := NewWebSocketHandler(s, opts)
	closes := make(chan wsCloseRecord, 1024)
	ws.closed = func(code websocket.StatusCode, reason string) {
		select {
		case closes <- wsCloseRecord{code, reason}:
		default:
		}
	}
	h := NewHandler(s)
	h.WebSocket = ws
	srv := &wsServer{Server: httptest.NewServer(h), ws: ws, hub: hub, closes: closes, clock: clock}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wsWait)
		defer cancel()
		if err := ws.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		srv.Close()
	})
	return srv
}

func (s *wsServer) url() string { return "ws" + strings.TrimPrefix(s.URL, "http") }

// waitIdle waits until the handler runs no goroutine.
func (s *wsServer) waitIdle(t testing.TB) {
	t.Helper()
	testkit.Eventually(t, func() error {
		if n := s.ws.live.Load(); n != 0 {
			return fmt.Errorf("the handler still runs %d goroutines", n)
		}
		return nil
	})
}

// waitGoroutines waits until the process runs no more goroutines than
// base: nothing the connections started is left behind.
func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	testkit.Eventually(t, func() error {
		if n := runtime.NumGoroutine(); n > base {
			return goroutinesLeft{n, base}
		}
		return nil
	})
}

// goroutinesLeft is the error of too many goroutines; it shows their stacks as they
// are when the test fails, not at each poll.
type goroutinesLeft struct{ n, base int }

func (e goroutinesLeft) Error() string {
	buf := make([]byte, 1<<20)
	return fmt.Sprintf("%d goroutines left, want at most %d:\n%s", e.n, e.base, buf[:runtime.Stack(buf, true)])
}

func dialWS(t testing.TB, url string, protocols ...string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(-1)
	return c
}

func wsSend(t testing.TB, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

// wsRecv reads one message; err is the read error (a close, typically).
func wsRecv(t testing.TB, c *websocket.Conn) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	_, data, err := c.Read(ctx)
	if ctx.Err() != nil {
		t.Fatal("no message from the server")
	}
	return string(data), err
}

func wsMustRecv(t testing.TB, c *websocket.Conn) string {
	t.Helper()
	msg, err := wsRecv(t, c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return msg
}

// wsStep is one step of a scenario.
type wsStep struct {
	kind string // send, recv, closed, publish, end, active, started, shutdown, expire
	text string
	n    int
}

func send(msg string) wsStep     { return wsStep{kind: "send", text: msg} }
func recv(n int) wsStep          { return wsStep{kind: "recv", n: n} }
func closed() wsStep             { return wsStep{kind: "closed"} }
func publish(name string) wsStep { return wsStep{kind: "publish", text: name} }
func endSource() wsStep          { return wsStep{kind: "end"} }
func active(n int) wsStep        { return wsStep{kind: "active", n: n} }
func started(n int) wsStep       { return wsStep{kind: "started", n: n} }
func shutdown() wsStep           { return wsStep{kind: "shutdown"} }

// expire sets the handler's clock past the instant authorizedFor's OnInit
// gives, well before the real one gets there: the expiry timer has not run,
// so what happens next is the handler's check of each message.
func expire() wsStep { return wsStep{kind: "expire"} }

// wsScenario is a conversation with the server; its transcript, client and
// server messages in order, is compared with testdata/ws/NAME.json.
type wsScenario struct {
	name      string
	protocols []string // offered subprotocols
	opts      WebSocketOptions
	steps     []wsStep
}

const (
	initMsg = `{"type":"connection_init"}`
	subUser = `{"id":"1","type":"subscribe","payload":{"query":"subscription OnUser { onUserCreated { name id createdAt } }","operationName":"OnUser"}}`
	ack     = `{"type":"connection_ack"}`
)

// legacyStart is a legacy start message for query q with the given id.
func legacyStart(id, q string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "start", "payload": map[string]any{"query": q}})
	return string(b)
}

// subscribe is a graphql-transport-ws subscribe message.
func subscribe(id, q string, vars map[string]any) string {
	payload := map[string]any{"query": q}
	if vars != nil {
		payload["variables"] = vars
	}
	b, _ := json.Marshal(map[string]any{"id": id, "type": "subscribe", "payload": payload})
	return string(b)
}

func refuseBadToken(r *http.Request, payload map[string]any) (context.Context, error) {
	return nil, errors.New("bad token")
}

func panicOnInit(r *http.Request, payload map[string]any) (context.Context, error) {
	panic("init exploded")
}

// authorizedFor admits every connection, authorized until d from now.
func authorizedFor(d time.Duration) InitFunc {
	return func(r *http.Request, payload map[string]any) (context.Context, error) {
		return AuthorizedUntil(r.Context(), time.Now().Add(d)), nil
	}
}

var wsScenarios = []wsScenario{
	// graphql-transport-ws
	{name: "transport_subscribe", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subUser), active(1),
		publish("Dan"), recv(1),
		publish("Eve"), recv(1),
		endSource(), recv(1), // complete
		send(`{"type":"ping"}`), recv(1),
	}},
	{name: "transport_fragments_variables", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subscribe("s", "subscription($withEmail: Boolean!) { onUserCreated { ...F email @include(if: $withEmail) } } fragment F on User { id alias: name }", map[string]any{"withEmail": true})),
		active(1), publish("Fay"), recv(1),
		send(`{"id":"s","type":"complete"}`), active(0),
	}},
	{name: "transport_query_mutation", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subscribe("q", "{ user(id: 2) { name posts { title } } }", nil)), recv(2),
		send(subscribe("m", `mutation($n: String!) { createUser(name: $n, email: "g@example.com") { id name } }`, map[string]any{"n": "Gus"})), recv(2),
		send(subscribe("f", "{ user(id: 1) { name } fail }", nil)), recv(2),
		send(subscribe("q", "{ user(id: 99) { name } }", nil)), recv(2), // an id is free again after complete
	}},
	{name: "transport_client_complete", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subUser), active(1),
		send(`{"id":"1","type":"complete"}`), active(0),
		publish("Hal"),
		send(`{"id":"unknown","type":"complete"}`),
		send(`{"type":"ping"}`), recv(1), // only the pong: no event after complete
		send(subUser), active(1), // the id may be reused
		publish("Ida"), recv(1),
	}},
	{name: "transport_request_errors", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subscribe("1", "subscription { nope }", nil)), recv(1),
		send(subscribe("2", "subscription {", nil)), recv(1),
		send(subscribe("3", "subscription { onPostCreated { id } }", nil)), recv(1),
		send(subscribe("4", "subscription { onUserCreated { id } onPostCreated { id } }", nil)), recv(1),
		send(subscribe("5", "query($id: Int!) { user(id: $id) { name } }", map[string]any{"id": "x"})), recv(1),
		send(subscribe("6", "query A { users { id } } query B { posts { id } }", nil)), recv(1),
		send(`{"type":"ping","payload":{"still":"open"}}`), recv(1),
	}},
	{name: "transport_max_subscriptions", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{MaxSubscriptions: 2}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subscribe("a", "subscription { onUserCreated { id } }", nil)),
		send(subscribe("b", "subscription { onUserCreated { id } }", nil)),
		send(subscribe("c", "subscription { onUserCreated { id } }", nil)), recv(1),
		active(2),
	}},
	{name: "transport_ping_pong", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(`{"type":"ping"}`), recv(1), // allowed before connection_init
		send(initMsg), recv(1),
		send(`{"type":"ping","payload":{"n":1,"s":"x"}}`), recv(1),
		send(`{"type":"pong"}`),
		send(`{"type":"pong","payload":{"unsolicited":true}}`),
		send(`{"type":"ping","payload":null}`), recv(1),
	}},
	{name: "transport_server_complete_frees_id", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subUser), active(1),
		endSource(), recv(1),
		send(subUser), active(1), // the server freed the id
	}},
	{name: "transport_4400_invalid_json", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"type":`), closed(),
	}},
	{name: "transport_4400_unknown_type", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"type":"start","id":"1","payload":{"query":"{ users { id } }"}}`), closed(),
	}},
	{name: "transport_4400_server_message_type", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"type":"next","id":"1","payload":{"data":null}}`), closed(),
	}},
	{name: "transport_4400_no_query", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"type":"subscribe","id":"1","payload":{"variables":{}}}`), closed(),
	}},
	{name: "transport_4400_bad_id", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"type":"subscribe","id":7,"payload":{"query":"{ users { id } }"}}`), closed(),
	}},
	{name: "transport_4400_duplicate_key", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"id":"1","type":"subscribe","payload":{"query":"{ users { id } }","query":"mutation { deleteUser(id: 1) }"}}`), closed(),
	}},
	{name: "transport_4400_duplicate_variable", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"id":"1","type":"subscribe","payload":{"query":"query($id: Int!) { user(id: $id) { name } }","variables":{"id":1,"id":2}}}`), closed(),
	}},
	{name: "transport_4400_unpaired_surrogate", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"id":"1","type":"subscribe","payload":{"query":"query($n: String) { users { id } }","variables":{"n":"\ud800"}}}`), closed(),
	}},
	{name: "transport_4400_nested_too_deep", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(`{"id":"1","type":"subscribe","payload":{"query":"{ users { id } }","variables":{"n":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}}`), closed(),
	}},
	{name: "transport_4400_duplicate_type", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(`{"type":"ping","Type":"connection_init"}`), closed(),
	}},
	{name: "transport_4400_duplicate_init_token", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(`{"type":"connection_init","payload":{"Authorization":"Bearer a","Authorization":"Bearer b"}}`), closed(),
	}},
	{name: "transport_4400_bad_init_payload", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(`{"type":"connection_init","payload":"token"}`), closed(),
	}},
	{name: "transport_4401_subscribe_before_ack", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(subUser), closed(),
	}},
	{name: "transport_4403_forbidden", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: refuseBadToken}, steps: []wsStep{
		send(`{"type":"connection_init","payload":{"Authorization":"Bearer nope"}}`), closed(),
	}},
	{name: "transport_4403_authorization_expired", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: authorizedFor(time.Hour)}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subUser), active(1),
		publish("Dan"), recv(1),
		expire(),
		publish("Eve"), closed(), active(0), // Eve's event is not sent, and no complete
	}},
	{name: "transport_4403_authorization_expired_two_subscriptions", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: authorizedFor(time.Hour)}, steps: []wsStep{
		send(initMsg), recv(1),
		send(subscribe("a", "subscription { onUserCreated { id } }", nil)),
		send(subscribe("b", "subscription { onUserCreated { name } }", nil)), active(2),
		expire(),
		publish("Eve"), closed(), active(0), // the results of one event go out together: the close must not wait behind them
	}},
	{name: "transport_4403_authorization_expired_before_subscribe", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: authorizedFor(time.Hour)}, steps: []wsStep{
		send(initMsg), recv(1),
		expire(),
		send(subUser), closed(), started(0), // the subscription never started
	}},
	{name: "transport_4403_authorization_expired_at_init", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: authorizedFor(-time.Second)}, steps: []wsStep{
		send(initMsg), closed(),
	}},
	{name: "transport_4406_no_subprotocol", steps: []wsStep{closed()}},
	{name: "transport_4406_unknown_subprotocol", protocols: []string{"graphql-sse"}, steps: []wsStep{closed()}},
	{name: "transport_4408_init_timeout", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{ConnectionInitWaitTimeout: 30 * time.Millisecond}, steps: []wsStep{
		closed(),
	}},
	{name: "transport_4409_duplicate_id", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(subUser), active(1), send(subUser), closed(), active(0),
	}},
	{name: "transport_4429_second_init", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(initMsg), closed(),
	}},
	{name: "transport_4500_internal_error", protocols: []string{ProtocolTransportWS}, opts: WebSocketOptions{OnInit: panicOnInit}, steps: []wsStep{
		send(initMsg), closed(),
	}},
	{name: "transport_1001_shutdown", protocols: []string{ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1), send(subUser), active(1), shutdown(), closed(), active(0),
	}},
	{name: "transport_preferred_over_legacy", protocols: []string{ProtocolLegacyWS, ProtocolTransportWS}, steps: []wsStep{
		send(initMsg), recv(1),
	}},

	// graphql-ws, the legacy protocol
	{name: "legacy_subscribe", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(initMsg), recv(2), // connection_ack, ka
		send(legacyStart("1", "subscription { onUserCreated { name id } }")), active(1),
		publish("Dan"), recv(1),
		publish("Eve"), recv(1),
		send(`{"id":"1","type":"stop"}`), recv(1), active(0),
		publish("Fay"),
		send(legacyStart("2", "{ user(id: 1) { name } }")), recv(2), // no event for the stopped one came first
		send(`{"type":"connection_terminate"}`), closed(),
	}},
	{name: "legacy_query_mutation", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(`{"type":"connection_init","payload":{}}`), recv(2),
		send(legacyStart("1", "{ users { id name } }")), recv(2),
		send(`{"id":"2","type":"start","payload":{"query":"mutation M($n: String!) { createUser(name: $n, email: \"h@example.com\") { id name } }","variables":{"n":"Hal"},"operationName":"M"}}`), recv(2),
		send(legacyStart("3", "{ fail }")), recv(2),
	}},
	{name: "legacy_source_end", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(initMsg), recv(2),
		send(legacyStart("1", "subscription { onUserCreated { id } }")), active(1),
		endSource(), recv(1),
	}},
	{name: "legacy_request_errors", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(initMsg), recv(2),
		send(legacyStart("1", "subscription { nope }")), recv(1),
		send(legacyStart("2", "{")), recv(1),
		send(legacyStart("3", "subscription { onPostCreated { id } }")), recv(1),
		send(`{"id":"4","type":"start","payload":{"variables":{}}}`), recv(1),
		send(legacyStart("5", "{ user(id: 3) { name } }")), recv(2),
	}},
	{name: "legacy_bad_messages", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(`{"type":`), recv(1), // connection_error; the connection stays open
		send(`{"type":"ping","id":"9"}`), recv(1),
		send(`{"type":"subscribe"}`), recv(1),
		send(`{"type":"start","payload":{"query":"{ users { id } }"}}`), recv(1),
		send(initMsg), recv(2),
		send(initMsg), recv(1),
		send(legacyStart("1", "{ user(id: 1) { name } }")), recv(2),
	}},
	{name: "legacy_duplicate_keys", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(`{"type":"connection_init","payload":{"authorization":"a","authorization":"b"}}`), recv(1), // connection_error
		send(initMsg), recv(2),
		send(`{"id":"1","type":"start","payload":{"query":"{ user(id: 1) { name } }","query":"{ users { id } }"}}`), recv(1),
		send(`{"id":"2","type":"start","id":"3","payload":{"query":"{ user(id: 1) { name } }"}}`), recv(1),
		send(`{"id":"3","type":"start","payload":{"query":"{ user(id: 1) { name } }","variables":{"n":"\udfff"}}}`), recv(1),
		send(legacyStart("4", "{ user(id: 1) { name } }")), recv(2), // still open
	}},
	{name: "legacy_start_before_init", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(legacyStart("1", "subscription { onUserCreated { id } }")), recv(1),
		send(initMsg), recv(2),
		send(legacyStart("1", "{ user(id: 2) { name } }")), recv(2),
	}},
	{name: "legacy_duplicate_id_replaces", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(initMsg), recv(2),
		send(legacyStart("1", "subscription { onUserCreated { id } }")), active(1),
		send(legacyStart("1", "subscription { onUserCreated { name } }")), started(2), active(1),
		publish("Ann"), recv(1),
		send(`{"id":"1","type":"stop"}`), recv(1), active(0),
	}},
	{name: "legacy_max_subscriptions", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{MaxSubscriptions: 1}, steps: []wsStep{
		send(initMsg), recv(2),
		send(legacyStart("a", "subscription { onUserCreated { id } }")),
		send(legacyStart("b", "subscription { onUserCreated { id } }")), recv(1),
		active(1),
	}},
	{name: "legacy_init_refused", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{OnInit: refuseBadToken}, steps: []wsStep{
		send(`{"type":"connection_init","payload":{"authorization":"Bearer nope"}}`), recv(1), closed(),
	}},
	{name: "legacy_authorization_expired", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{OnInit: authorizedFor(time.Hour)}, steps: []wsStep{
		send(initMsg), recv(2),
		send(legacyStart("1", "subscription { onUserCreated { name id } }")), active(1),
		publish("Dan"), recv(1),
		expire(),
		publish("Eve"), closed(), active(0), // connection_error, then the close
	}},
	{name: "legacy_authorization_expired_before_start", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{OnInit: authorizedFor(time.Hour)}, steps: []wsStep{
		send(initMsg), recv(2),
		expire(),
		send(legacyStart("1", "subscription { onUserCreated { id } }")), closed(), started(0),
	}},
	{name: "legacy_authorization_expired_at_init", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{OnInit: authorizedFor(-time.Second)}, steps: []wsStep{
		send(initMsg), closed(),
	}},
	{name: "legacy_init_panics", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{OnInit: panicOnInit}, steps: []wsStep{
		send(initMsg), recv(1), closed(),
	}},
	{name: "legacy_init_timeout", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{ConnectionInitWaitTimeout: 30 * time.Millisecond}, steps: []wsStep{
		closed(),
	}},
	{name: "legacy_no_keepalive", protocols: []string{ProtocolLegacyWS}, opts: WebSocketOptions{KeepAlive: -1}, steps: []wsStep{
		send(initMsg), recv(1), send(legacyStart("1", "{ user(id: 1) { id } }")), recv(2),
	}},
	{name: "legacy_1001_shutdown", protocols: []string{ProtocolLegacyWS}, steps: []wsStep{
		send(initMsg), recv(2), send(legacyStart("1", "subscription { onUserCreated { id } }")), active(1),
		shutdown(), closed(), active(0),
	}},
}

// TestWebSocketTranscripts runs each scenario and compares its transcript
// with the golden file; -update rewrites them.
func TestWebSocketTranscripts(t *testing.T) {
	for _, sc := range wsScenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := runWSScenario(t, sc)
			testkit.CheckGolden(t, filepath.Join("testdata", "ws", sc.name+".json"), got)
		})
	}
}

// transcript collects a scenario's entries, one JSON object per line.
type transcript struct {
	t     testing.TB
	lines []string
}

func (tr *transcript) add(key string, v any) {
	var val []byte
	switch v := v.(type) {
	case json.RawMessage:
		val = v
	default:
		var err error
		if val, err = json.Marshal(v); err != nil {
			tr.t.Fatal(err)
		}
	}
	tr.lines = append(tr.lines, `{"`+key+`":`+string(val)+`}`)
}

func (tr *transcript) bytes() []byte {
	return []byte("[\n" + strings.Join(tr.lines, ",\n") + "\n]\n")
}

func runWSScenario(t *testing.T, sc wsScenario) []byte {
	opts := sc.opts
	if opts.KeepAlive == 0 {
		opts.KeepAlive = time.Hour // one ka after the legacy ack, and no pings
	}
	srv := newWSServer(t, 4, opts)
	base := runtime.NumGoroutine()
	c := dialWS(t, srv.url(), sc.protocols...)
	tr := &transcript{t: t}
	if len(sc.protocols) > 0 {
		tr.add("subprotocols", sc.protocols)
	}
	tr.add("negotiated", c.Subprotocol())
	isClosed := false
	for _, st := range sc.steps {
		switch st.kind {
		case "send":
			if json.Valid([]byte(st.text)) {
				tr.add("client", json.RawMessage(st.text))
			} else {
				tr.add("client_text", st.text)
			}
			wsSend(t, c, st.text)
		case "recv":
			for range st.n {
				msg := wsMustRecv(t, c)
				if !json.Valid([]byte(msg)) {
					t.Fatalf("server sent invalid JSON: %s", msg)
				}
				tr.add("server", json.RawMessage(msg))
			}
		case "closed":
			for {
				msg, err := wsRecv(t, c)
				if err == nil {
					tr.add("server", json.RawMessage(msg))
					continue
				}
				var ce websocket.CloseError
				if !errors.As(err, &ce) {
					t.Fatalf("connection ended without a close frame: %v", err)
				}
				tr.add("close", map[string]any{"code": int(ce.Code), "reason": ce.Reason})
				break
			}
			isClosed = true
		case "publish":
			srv.hub.publish(st.text)
			tr.add("publish", st.text)
		case "end":
			srv.hub.end()
			tr.add("source", "end")
		case "active":
			srv.hub.waitActive(t, st.n)
			tr.add("active_subscriptions", st.n)
		case "started":
			srv.hub.wait(t, fmt.Sprintf("%d subscriptions started", st.n), func(_, s int) bool { return s == st.n })
			tr.add("started_subscriptions", st.n)
		case "shutdown":
			go srv.ws.Shutdown(context.Background())
			tr.add("server_shutdown", true)
		case "expire":
			srv.clock.set(time.Now().Add(2 * time.Hour))
			tr.add("authorization", "expired")
		default:
			t.Fatalf("unknown step %q", st.kind)
		}
	}
	if !isClosed {
		c.Close(websocket.StatusNormalClosure, "")
	}
	srv.waitIdle(t)
	srv.hub.waitActive(t, 0)
	waitGoroutines(t, base)
	return tr.bytes()
}

// TestWebSocketServerCloseRecords checks what the server recorded for the
// scenarios that close: the code it chose is the one the client saw.
func TestWebSocketServerCloseRecords(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	wsSend(t, c, initMsg)
	if _, err := wsRecv(t, c); websocket.CloseStatus(err) != 4429 {
		t.Fatalf("second init: %v, want close 4429", err)
	}
	srv.waitIdle(t)
	if got := <-srv.closes; got.code != 4429 || got.reason != "Too many initialisation requests" {
		t.Errorf("server recorded %v", got)
	}
	c = dialWS(t, srv.url(), ProtocolTransportWS)
	c.Close(websocket.StatusNormalClosure, "bye")
	srv.waitIdle(t)
	if got := <-srv.closes; got.code != 0 {
		t.Errorf("a close by the client was recorded as the server's: %v", got)
	}
}

// TestWebSocketInitContext checks that OnInit sees the upgrade request's
// headers and the init payload, and that its context reaches the source
// stream and resolvers.
func TestWebSocketInitContext(t *testing.T) {
	var srv *wsServer
	opts := WebSocketOptions{OnInit: func(r *http.Request, payload map[string]any) (context.Context, error) {
		auth := r.Header.Get("Authorization")
		for _, k := range []string{"Authorization", "authorization"} {
			if v, ok := payload[k].(string); ok {
				auth = v
			}
		}
		user, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			return nil, errors.New("no token")
		}
		if r.Context().Err() != nil {
			t.Error("the request context is done during init")
		}
		return context.WithValue(r.Context(), wsUserKey{}, user), nil
	}}
	srv = newWSServer(t, 4, opts)
	cases := []struct {
		name, header, init string
		want               any // user seen by the source; nil: refused
	}{
		{"header", "Bearer alice", initMsg, "alice"},
		{"payload", "", `{"type":"connection_init","payload":{"Authorization":"Bearer bob"}}`, "bob"},
		{"lowercase payload key", "", `{"type":"connection_init","payload":{"authorization":"Bearer carol"}}`, "carol"},
		{"payload over header", "Bearer alice", `{"type":"connection_init","payload":{"authorization":"Bearer dave"}}`, "dave"},
		{"none", "", initMsg, nil},
	}
	for _, tc := range cases {
		for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), wsWait)
				defer cancel()
				h := http.Header{}
				if tc.header != "" {
					h.Set("Authorization", tc.header)
				}
				c, _, err := websocket.Dial(ctx, srv.url(), &websocket.DialOptions{Subprotocols: []string{proto}, HTTPHeader: h})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseNow()
				wsSend(t, c, tc.init)
				msg, err := wsRecv(t, c)
				if tc.want == nil {
					if proto == ProtocolLegacyWS {
						if msg != `{"type":"connection_error","payload":{"message":"no token"}}` {
							t.Fatalf("got %s, want connection_error", msg)
						}
						_, err = wsRecv(t, c)
					}
					if websocket.CloseStatus(err) != 4403 {
						t.Fatalf("refused init: %v, want close 4403", err)
					}
					return
				}
				if msg != ack {
					t.Fatalf("got %s %v, want the ack", msg, err)
				}
				if proto == ProtocolTransportWS {
					wsSend(t, c, subUser)
				} else {
					wsMustRecv(t, c) // ka
					wsSend(t, c, legacyStart("1", "subscription { onUserCreated { id } }"))
				}
				srv.hub.waitActive(t, 1)
				if got := srv.hub.subscribers()[0].user; got != tc.want {
					t.Errorf("source saw user %v, want %v", got, tc.want)
				}
				c.Close(websocket.StatusNormalClosure, "")
				srv.hub.waitActive(t, 0)
			})
		}
	}
}

// TestWebSocketAuthorizationTimer checks that a connection authorized until
// an instant is closed when its timer reaches it, with nothing else going
// on: 4403 under graphql-transport-ws, connection_error then 4403 under the
// legacy protocol. The handler's clock stands still, so that its check of
// each message cannot be what closes it.
func TestWebSocketAuthorizationTimer(t *testing.T) {
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		t.Run(proto, func(t *testing.T) {
			start := time.Now()
			clock := &wsClock{}
			clock.set(start)
			srv := newWSServer(t, 4, WebSocketOptions{Now: clock.now, KeepAlive: -1, OnInit: func(r *http.Request, payload map[string]any) (context.Context, error) {
				return AuthorizedUntil(r.Context(), start.Add(50*time.Millisecond)), nil
			}})
			c := dialWS(t, srv.url(), proto)
			defer c.CloseNow()
			wsSend(t, c, initMsg)
			var got []string
			for {
				msg, err := wsRecv(t, c)
				if err != nil {
					if code := websocket.CloseStatus(err); code != closeForbidden {
						t.Fatalf("connection ended with %v, want close 4403", err)
					}
					break
				}
				got = append(got, msg)
			}
			if len(got) > 0 && got[0] == ack {
				got = got[1:] // the timer may beat the ack
			}
			var want []string
			if proto == ProtocolLegacyWS {
				want = []string{`{"type":"connection_error","payload":{"message":"authorization expired"}}`}
			}
			if !slices.Equal(got, want) {
				t.Errorf("before the close: %q, want %q", got, want)
			}
			srv.waitIdle(t)
			if rec := <-srv.closes; rec.code != closeForbidden || rec.reason != "Forbidden: authorization expired" {
				t.Errorf("server recorded %v", rec)
			}
		})
	}
}

// TestWebSocketAuthorizationTimerStopped checks that a connection closed
// before its authorization ends leaves no timer behind: sockets come and go
// by the thousand, each authorized for an hour.
func TestWebSocketAuthorizationTimerStopped(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{OnInit: authorizedFor(time.Hour)})
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		c := dialWS(t, srv.url(), proto)
		wsSend(t, c, initMsg)
		if msg := wsMustRecv(t, c); msg != ack {
			t.Fatalf("got %s, want the ack", msg)
		}
		c.Close(websocket.StatusNormalClosure, "")
		srv.waitIdle(t) // the timer counts as the connection's until stopped
	}
}

// TestWebSocketOrigin checks the Origin policy of the upgrade.
func TestWebSocketOrigin(t *testing.T) {
	check := func(t *testing.T, srv *wsServer, origin string, want int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), wsWait)
		defer cancel()
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.Dial(ctx, srv.url(), &websocket.DialOptions{Subprotocols: []string{ProtocolTransportWS}, HTTPHeader: h})
		if c != nil {
			c.CloseNow()
		}
		got := 0
		if resp != nil {
			got = resp.StatusCode
		}
		if got != want {
			t.Errorf("Origin %q: status %d (%v), want %d", origin, got, err, want)
		}
	}
	srv := newWSServer(t, 4, WebSocketOptions{})
	check(t, srv, "", http.StatusSwitchingProtocols)
	check(t, srv, srv.URL, http.StatusSwitchingProtocols) // same host
	check(t, srv, "https://evil.example", http.StatusForbidden)
	srv = newWSServer(t, 4, WebSocketOptions{OriginPatterns: []string{"*.example.com"}})
	check(t, srv, "https://app.example.com", http.StatusSwitchingProtocols)
	check(t, srv, "https://evil.example", http.StatusForbidden)
	srv = newWSServer(t, 4, WebSocketOptions{AllowAnyOrigin: true})
	check(t, srv, "https://evil.example", http.StatusSwitchingProtocols)
}

// TestWebSocketShutdownRefusesNew checks that after Shutdown upgrades get
// 503 and that Shutdown with live connections returns once they are closed.
func TestWebSocketShutdownRefusesNew(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{})
	a := dialWS(t, srv.url(), ProtocolTransportWS)
	b := dialWS(t, srv.url(), ProtocolLegacyWS)
	wsSend(t, a, initMsg)
	wsSend(t, b, initMsg)
	wsMustRecv(t, a)
	wsMustRecv(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.ws.Shutdown(ctx) }()
	for _, c := range []*websocket.Conn{a, b} {
		for {
			_, err := wsRecv(t, c)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusGoingAway {
					t.Errorf("got %v, want close 1001", err)
				}
				break
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	_, resp, err := websocket.Dial(ctx, srv.url(), &websocket.DialOptions{Subprotocols: []string{ProtocolTransportWS}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("upgrade after Shutdown: %v %v, want 503", resp, err)
	}
}

// TestWebSocketShutdownDeadline checks that Shutdown gives up when its
// context ends before a peer completes the close handshake.
func TestWebSocketShutdownDeadline(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	defer c.CloseNow()
	wsSend(t, c, initMsg)
	wsMustRecv(t, c) // the ack; from now on it reads nothing, so never answers a close
	srv.ws.mu.Lock()
	n := len(srv.ws.conns)
	srv.ws.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections registered", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.ws.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with a done context: %v", err)
	}
	srv.waitIdle(t)
}

// TestWebSocketAbruptDisconnect drops connections with active operations
// without a close frame and checks that nothing is left running.
func TestWebSocketAbruptDisconnect(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{})
	base := runtime.NumGoroutine()
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		c := dialWS(t, srv.url(), proto)
		wsSend(t, c, initMsg)
		for i := range 5 {
			if proto == ProtocolTransportWS {
				wsSend(t, c, subscribe(fmt.Sprint(i), "subscription { onUserCreated { id } }", nil))
			} else {
				wsSend(t, c, legacyStart(fmt.Sprint(i), "subscription { onUserCreated { id } }"))
			}
		}
		srv.hub.waitActive(t, 5)
		srv.hub.publish("Zed") // events in flight as the client vanishes
		c.CloseNow()
		srv.hub.waitActive(t, 0)
		srv.waitIdle(t)
	}
	waitGoroutines(t, base)
}

// TestWebSocketSlowConsumer stops reading while events keep coming. The
// publisher never blocks; the source cuts the subscriber off; once the
// client reads again it gets every event up to that point, in order, then
// the error event and complete.
func TestWebSocketSlowConsumer(t *testing.T) {
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		t.Run(proto, func(t *testing.T) {
			srv := newWSServer(t, 4, WebSocketOptions{SendQueue: 2, WriteTimeout: time.Minute, KeepAlive: -1})
			c := dialWS(t, srv.url(), proto)
			wsSend(t, c, initMsg)
			wsMustRecv(t, c)
			q := "subscription { onUserCreated { id name } }"
			if proto == ProtocolTransportWS {
				wsSend(t, c, subscribe("1", q, nil))
			} else {
				wsSend(t, c, legacyStart("1", q))
			}
			srv.hub.waitActive(t, 1)
			big := strings.Repeat("x", 256<<10)
			var sent []map[string]any
			for len(sent) < 400 {
				ev, dropped := srv.hub.publish(big)
				if dropped == 1 {
					break
				}
				sent = append(sent, ev)
			}
			if len(sent) == 400 {
				t.Fatal("the subscriber was never cut off")
			}
			next := "next"
			if proto == ProtocolLegacyWS {
				next = "data"
			}
			for i, ev := range sent {
				var m struct {
					ID, Type string
					Payload  struct {
						Data struct{ OnUserCreated struct{ ID int } }
					}
				}
				if err := json.Unmarshal([]byte(wsMustRecv(t, c)), &m); err != nil {
					t.Fatal(err)
				}
				if m.Type != next || m.Payload.Data.OnUserCreated.ID != ev["id"] {
					t.Fatalf("message %d: %s for user %d, want %s for user %v", i, m.Type, m.Payload.Data.OnUserCreated.ID, next, ev["id"])
				}
			}
			want := `{"id":"1","type":"` + next + `","payload":{"errors":[{"message":"subscriber fell behind and was disconnected","locations":[{"line":1,"column":16}],"path":["onUserCreated"]}],"data":null}}`
			if got := wsMustRecv(t, c); got != want {
				t.Errorf("after the events: %s\nwant %s", got, want)
			}
			if got := wsMustRecv(t, c); got != `{"id":"1","type":"complete"}` {
				t.Errorf("last: %s", got)
			}
			c.Close(websocket.StatusNormalClosure, "")
			srv.waitIdle(t)
		})
	}
}

// TestWebSocketStalledSocket checks that a connection whose socket takes
// nothing for WriteTimeout is dropped and its operations end.
func TestWebSocketStalledSocket(t *testing.T) {
	srv := newWSServer(t, 1000, WebSocketOptions{SendQueue: 1, WriteTimeout: 50 * time.Millisecond, KeepAlive: -1})
	base := runtime.NumGoroutine()
	c := dialWS(t, srv.url(), ProtocolTransportWS) // never reads again
	defer c.CloseNow()
	wsSend(t, c, initMsg)
	wsSend(t, c, subscribe("1", "subscription { onUserCreated { name } }", nil))
	srv.hub.waitActive(t, 1)
	big := strings.Repeat("y", 256<<10)
	var rec wsCloseRecord
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("the stalled connection was never dropped")
		}
		srv.hub.publish(big)
		select {
		case rec = <-srv.closes:
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	if rec.code != closeDropped || !strings.HasPrefix(rec.reason, "Write timeout") {
		t.Errorf("server recorded %v, want a drop for the write timeout", rec)
	}
	srv.hub.waitActive(t, 0)
	srv.waitIdle(t)
	c.CloseNow()
	waitGoroutines(t, base)
}

// TestCoalescerStampsWrites checks that a write the socket does not take,
// sent at once or released as a batch, shows as under way for as long as it
// lasts (what checkWrites drops a socket on), and not once it is done.
func TestCoalescerStampsWrites(t *testing.T) {
	server, client := net.Pipe() // a write waits for the peer to read
	defer client.Close()
	w := &coalescer{conn: server}
	blocked := func(write func() error, n int) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- write() }()
		testkit.Eventually(t, func() error {
			if d := w.writingFor(); d < 20*time.Millisecond {
				return fmt.Errorf("a blocked write shows as under way for %v", d)
			}
			return nil
		})
		if _, err := io.ReadFull(client, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := w.writingFor(); d != 0 {
			t.Errorf("a finished write shows as under way for %v", d)
		}
	}
	if d := w.writingFor(); d != 0 {
		t.Errorf("no write yet, but one shows as under way for %v", d)
	}
	blocked(func() error { _, err := w.Write([]byte("x")); return err }, 1)
	w.hold()
	w.Write([]byte("yz"))
	if d := w.writingFor(); d != 0 {
		t.Errorf("a held write shows as under way for %v", d)
	}
	blocked(w.release, 2)
}

// TestWebSocketPipelinedFrames: frames a client sends in the same write as its
// upgrade request, which net/http has read along with the request, are not
// lost, small or larger than the socket's buffers.
func TestWebSocketPipelinedFrames(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{})
	for _, padding := range []int{0, 3 * wsBufferSize} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		init := fmt.Sprintf(`{"type":"connection_init","payload":{"padding":%q}}`, strings.Repeat("x", padding))
		request := "GET / HTTP/1.1\r\nHost: quartet\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
			"Sec-WebSocket-Protocol: " + ProtocolTransportWS + "\r\n\r\n"
		if _, err := conn.Write(append([]byte(request), maskedTextFrame([]byte(init))...)); err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(wsWait))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("padding %d: upgrade answered %v, %v", padding, resp, err)
		}
		head := make([]byte, 2) // an unmasked server frame of under 126 bytes
		if _, err := io.ReadFull(br, head); err != nil {
			t.Fatalf("padding %d: %v", padding, err)
		}
		msg := make([]byte, head[1]&0x7f)
		if _, err := io.ReadFull(br, msg); err != nil || head[0] != 0x81 || string(msg) != ack {
			t.Errorf("padding %d: got frame %x %q (%v), want %s", padding, head, msg, err, ack)
		}
		conn.Close()
	}
	srv.waitIdle(t)
}

// maskedTextFrame is a client's text frame holding p (RFC 6455 section 5.2).
func maskedTextFrame(p []byte) []byte {
	frame := []byte{0x81}
	switch {
	case len(p) < 126:
		frame = append(frame, 0x80|byte(len(p)))
	case len(p) < 1<<16:
		frame = append(frame, 0x80|126, byte(len(p)>>8), byte(len(p)))
	default:
		panic("frame too large for this helper")
	}
	mask := []byte{1, 2, 3, 4}
	frame = append(frame, mask...)
	for i, b := range p {
		frame = append(frame, b^mask[i%4])
	}
	return frame
}

// TestWebSocketKeepAlive checks the legacy "ka" messages and the
// graphql-transport-ws pings, and that a client answering nothing is
// dropped.
func TestWebSocketKeepAlive(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{KeepAlive: 10 * time.Millisecond})
	legacy := dialWS(t, srv.url(), ProtocolLegacyWS)
	wsSend(t, legacy, initMsg)
	if got := wsMustRecv(t, legacy); got != ack {
		t.Fatalf("got %s", got)
	}
	for range 3 {
		if got := wsMustRecv(t, legacy); got != `{"type":"ka"}` {
			t.Fatalf("got %s, want ka", got)
		}
	}
	legacy.Close(websocket.StatusNormalClosure, "")

	// Unanswered pings end the connection: the first finds the init read
	// since the ack, the next nothing. Answering nothing takes no time, so the
	// interval is short.
	srv = newWSServer(t, 4, WebSocketOptions{KeepAlive: 10 * time.Millisecond})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	if got := wsMustRecv(t, c); got != ack {
		t.Fatalf("got %s", got)
	}
	for {
		if _, err := wsRecv(t, c); err != nil {
			break
		}
	}
	srv.waitIdle(t)
	var last wsCloseRecord
	for len(srv.closes) > 0 {
		last = <-srv.closes
	}
	if last.code != closeDropped || last.reason != "No answer to ping" {
		t.Errorf("server recorded %v", last)
	}

	// Answered pings keep it. A pong must come within one interval: long
	// enough for a loaded machine.
	srv = newWSServer(t, 4, WebSocketOptions{KeepAlive: 250 * time.Millisecond})
	c = dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	if got := wsMustRecv(t, c); got != ack {
		t.Fatalf("got %s", got)
	}
	for range 3 {
		if got := wsMustRecv(t, c); got != `{"type":"ping"}` {
			t.Fatalf("got %s, want ping", got)
		}
		wsSend(t, c, `{"type":"pong"}`)
	}
	c.Close(websocket.StatusNormalClosure, "")
	srv.waitIdle(t)
	for len(srv.closes) > 0 {
		if rec := <-srv.closes; rec.code == closeDropped {
			t.Errorf("an answering client was dropped: %v", rec)
		}
	}
}

// TestWebSocketMessageTooBig checks MaxMessageBytes.
func TestWebSocketMessageTooBig(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{MaxMessageBytes: 1000})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	wsSend(t, c, subscribe("1", "{ users { id } } # "+strings.Repeat("x", 1000), nil))
	if _, err := wsRecv(t, c); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("got %v, want close 1009", err)
	}
	srv.waitIdle(t)
}

// TestWebSocketManySubscribers has 1,000 connections, half of each
// protocol, subscribe and checks that every one receives every event once,
// in order, with exactly its selected fields.
func TestWebSocketManySubscribers(t *testing.T) {
	testkit.SkipIfShort(t, "opens 1,000 WebSocket connections")
	const clients, events = 1000, 5
	srv := newWSServer(t, events, WebSocketOptions{KeepAlive: -1})
	base := runtime.NumGoroutine()
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		proto := []string{ProtocolTransportWS, ProtocolLegacyWS}[i%2]
		c := dialWS(t, srv.url(), proto)
		conns[i] = c
		// Messages are handled in order, so no need to wait for the ack.
		wsSend(t, c, initMsg)
		if proto == ProtocolTransportWS {
			wsSend(t, c, subscribe("s", "subscription { onUserCreated { name id } }", nil))
		} else {
			wsSend(t, c, legacyStart("s", "subscription { onUserCreated { id email } }"))
		}
	}
	srv.hub.waitActive(t, clients)
	var sent []map[string]any
	for i := range events {
		ev, dropped := srv.hub.publish(fmt.Sprintf("U%d", i))
		if dropped != 0 {
			t.Fatalf("%d subscribers dropped", dropped)
		}
		sent = append(sent, ev)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i, c := range conns {
		wg.Go(func() {
			var want []string
			if i%2 == 0 {
				want = append(want, ack)
				for _, ev := range sent {
					want = append(want, fmt.Sprintf(`{"id":"s","type":"next","payload":{"data":{"onUserCreated":{"name":%q,"id":%d}}}}`, ev["name"], ev["id"]))
				}
			} else {
				want = append(want, ack) // no ka: KeepAlive is off
				for _, ev := range sent {
					want = append(want, fmt.Sprintf(`{"id":"s","type":"data","payload":{"data":{"onUserCreated":{"id":%d,"email":%q}}}}`, ev["id"], ev["email"]))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), wsWait)
			defer cancel()
			for j, w := range want {
				_, data, err := c.Read(ctx)
				if err != nil || string(data) != w {
					errs <- fmt.Errorf("client %d, message %d: %s %v, want %s", i, j, data, err, w)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, c := range conns {
		c.CloseNow()
	}
	srv.hub.waitActive(t, 0)
	srv.waitIdle(t)
	waitGoroutines(t, base)
}

// TestLimitReason checks that close reasons fit a close frame and stay
// valid UTF-8.
func TestLimitReason(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("a", 200), strings.Repeat("é", 100), "bad \xff byte", strings.Repeat("a", 122) + "€"} {
		got := limitReason(s)
		if len(got) > maxCloseReason || !utf8.ValidString(got) {
			t.Errorf("limitReason(%q) = %q", s, got)
		}
		if len(s) <= maxCloseReason && utf8.ValidString(s) && got != s {
			t.Errorf("limitReason(%q) changed a valid reason to %q", s, got)
		}
	}
}

// TestParseOperation checks the subscribe payload reader.
func TestParseOperation(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    Request
		err     string
	}{
		{`{"query":"{ a }"}`, Request{Query: "{ a }"}, ""},
		{`{"query":"q","operationName":"A","variables":{"n":1.5},"extensions":{}}`, Request{Query: "q", OperationName: "A", Variables: map[string]any{"n": json.Number("1.5")}}, ""},
		{`{"query":"q","operationName":null,"variables":null,"extensions":null}`, Request{Query: "q"}, ""},
		{`{"Query":"q"}`, Request{}, "payload.query must be a string"},
		{`{"query":1}`, Request{}, "payload.query must be a string"},
		{`{"query":"q","variables":[]}`, Request{}, "payload.variables must be an object"},
		{`{"query":"q","operationName":2}`, Request{}, "payload.operationName must be a string"},
		{`{"query":"q","extensions":"x"}`, Request{}, "payload.extensions must be an object"},
		{`[]`, Request{}, "payload must be an object"},
	} {
		got, err := parseOperation(json.RawMessage(tc.payload))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %s", tc.payload, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %#v %v, want %#v", tc.payload, got, err, tc.want)
		}
	}
}

// FuzzWebSocketMessage feeds arbitrary text to the message readers of both
// protocols: they must not panic, and what they accept must be well formed.
func FuzzWebSocketMessage(f *testing.F) {
	for _, s := range []string{
		initMsg, subUser, `{"type":"ping","payload":{"a":1}}`, `{"id":"1","type":"complete"}`,
		`{"type":"connection_init","payload":{"Authorization":"Bearer x"}}`,
		`{"id":"1","type":"start","payload":{"query":"{ a }","variables":{"x":[1,{"y":null}]}}}`,
		`{"type":`, `null`, `[]`, `{"type":1}`, `{"type":"subscribe","id":{},"payload":"x"}`,
		`{"type":"ping","type":"pong"}`, `{"id":"1","type":"subscribe","payload":{"query":"{ a }","variables":{"a":1,"a":2}}}`,
		`{"id":"1","type":"subscribe","payload":{"query":"{ a }","variables":{"a":"\ud800"}}}`,
		`{"type":"ping","payload":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseWSMessage(data)
		if err != nil {
			return
		}
		if err := jsonkeys.Check(data); err != nil {
			t.Fatalf("accepted %q, which Check refuses: %v", data, err)
		}
		if m.typ == "" || (m.payload != nil && !json.Valid(m.payload)) {
			t.Fatalf("accepted %q as %+v", data, m)
		}
		if req, err := parseOperation(m.payload); err == nil && req.Variables != nil {
			if _, err := json.Marshal(req.Variables); err != nil {
				t.Fatalf("variables %v: %v", req.Variables, err)
			}
		}
		if p, err := initPayload(m.payload); err == nil && m.payload != nil && p == nil {
			t.Fatalf("init payload %s decoded to nil", m.payload)
		}
	})
}

// TestWebSocketNodeClients runs the real npm clients against the handler:
// graphql-ws's createClient over graphql-transport-ws and Apollo's legacy
// subscriptions-transport-ws over graphql-ws (testdata/wsjs/clients.mjs).
// It needs `npm ci` in testdata/wsjs.
func TestWebSocketNodeClients(t *testing.T) {
	dir := filepath.Join("testdata", "wsjs")
	testkit.RequireNode(t, dir, "graphql-ws", "subscriptions-transport-ws", "ws", "graphql")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	srv := newWSServer(t, 16, WebSocketOptions{OnInit: func(r *http.Request, payload map[string]any) (context.Context, error) {
		for _, k := range []string{"Authorization", "authorization"} {
			if v, ok := payload[k].(string); ok {
				return context.WithValue(r.Context(), wsUserKey{}, strings.TrimPrefix(v, "Bearer ")), nil
			}
		}
		return nil, errors.New("no token")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wsWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients.mjs", srv.url())
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// waitHub waits for n active subscriptions unless the script ends first.
	waitHub := func(n int) {
		t.Helper()
		for {
			srv.hub.mu.Lock()
			got, ch := len(srv.hub.subs), srv.hub.changed
			srv.hub.mu.Unlock()
			if got == n {
				return
			}
			select {
			case <-ch:
			case err := <-exited:
				t.Fatalf("the clients ended early (%v) with %d subscriptions active, want %d:\n%s%s", err, got, n, stdout.Bytes(), stderr.Bytes())
			}
		}
	}
	waitHub(4)
	users := map[any]bool{}
	for _, s := range srv.hub.subscribers() {
		users[s.user] = true
	}
	if !users["node-transport"] || !users["node-legacy"] || len(users) != 2 {
		t.Errorf("the sources saw the users %v, want node-transport and node-legacy from the init payloads", users)
	}
	var sent []map[string]any
	ev, _ := srv.hub.publish("First")
	sent = append(sent, ev)
	waitHub(2) // each client has ended "short" after its first event
	for _, name := range []string{"Second", "Third"} {
		ev, _ := srv.hub.publish(name)
		sent = append(sent, ev)
	}
	srv.hub.end()
	if err := <-exited; err != nil {
		t.Fatalf("node clients.mjs: %v\n%s", err, stderr.Bytes())
	}

	type result = map[string]any
	var long []any
	for _, ev := range sent {
		long = append(long, result{"data": result{"onUserCreated": result{"id": ev["id"], "name": ev["name"]}}})
	}
	short := []any{result{"data": result{"onUserCreated": result{"email": sent[0]["email"]}}}}
	want := result{}
	for i, name := range []string{"transport", "legacy"} {
		want[name] = result{
			"query":         []any{result{"data": result{"user": result{"name": "Alice"}}}},
			"mutation":      []any{result{"data": result{"createUser": result{"id": 4 + i, "name": name}}}},
			"long":          long,
			"longCompleted": true,
			"short":         short,
		}
	}
	var got any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("clients.mjs printed %q: %v", stdout.Bytes(), err)
	}
	wantJSON, _ := json.MarshalIndent(want, "", " ")
	gotJSON, _ := json.MarshalIndent(got, "", " ")
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("the clients saw\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	srv.hub.waitActive(t, 0)
	srv.waitIdle(t)
}

// FuzzWebSocketSession sends one arbitrary message on an initialised
// connection of either protocol, then a probe. The server must answer the
// probe or close with a code of the protocol; never an internal error.
func FuzzWebSocketSession(f *testing.F) {
	for _, s := range []string{
		subUser, `{"type":"ping"}`, `{"id":"1","type":"complete"}`, initMsg, `{"type":"next"}`, `{`,
		legacyStart("1", "{ users { id } }"), `{"id":"1","type":"stop"}`, `{"type":"connection_terminate"}`,
		`{"id":"x","type":"subscribe","payload":{"query":"query($a: [Int!]!) { user(id: 1) { posts(limit: $a) { id } } }","variables":{"a":[1]}}}`,
		`{"id":"d","type":"subscribe","payload":{"query":"{ users { id } }","query":"{ posts { id } }"}}`,
	} {
		f.Add(false, s)
		f.Add(true, s)
	}
	// Each input dials a socket of its own, faster than closed ones may be
	// uncounted: no per-client cap.
	srv := newWSServer(f, 4, WebSocketOptions{KeepAlive: -1})
	f.Fuzz(func(t *testing.T, legacy bool, msg string) {
		proto, probe, answered := ProtocolTransportWS, `{"type":"ping","payload":{"probe":1}}`, `{"type":"pong","payload":{"probe":1}}`
		if legacy {
			proto, probe, answered = ProtocolLegacyWS, legacyStart("probe", "{ user(id: 1) { id } }"), `{"id":"probe","type":"complete"}`
		}
		c := dialWS(t, srv.url(), proto)
		defer c.CloseNow()
		wsSend(t, c, initMsg)
		if got := wsMustRecv(t, c); got != ack {
			t.Fatalf("got %s, want the ack", got)
		}
		wsSend(t, c, msg)
		wsSend(t, c, probe)
		for {
			got, err := wsRecv(t, c)
			if err != nil {
				switch websocket.CloseStatus(err) {
				case closeBadRequest, closeTooManyInits, websocket.StatusNormalClosure:
					return
				}
				t.Fatalf("after %q: %v", msg, err)
			}
			var m struct{ Type string }
			if json.Unmarshal([]byte(got), &m) != nil || m.Type == "" {
				t.Fatalf("after %q the server sent %q", msg, got)
			}
			if got == answered || legacy && strings.HasPrefix(got, `{"id":"probe","type":"error"`) {
				return
			}
		}
	})
}

// logBuffer collects log lines, safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.FieldsFunc(b.buf.String(), func(r rune) bool { return r == '\n' })
}

// warnings is lines at level WARN: the refusals, without the connections'
// ends.
func (b *logBuffer) warnings() []string {
	return slices.DeleteFunc(b.lines(), func(l string) bool { return !strings.HasPrefix(l, "level=WARN ") })
}

// logger returns a logger writing to b without times, for comparison.
func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// TestWebSocketLogsClose checks the line Log gets when a connection ends:
// how long it was open, and who closed it, with the server's code and
// reason.
func TestWebSocketLogsClose(t *testing.T) {
	var logs logBuffer
	srv := newWSServer(t, 4, WebSocketOptions{Log: logs.logger(), ConnectionInitWaitTimeout: 100 * time.Millisecond})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	c.Close(websocket.StatusNormalClosure, "")
	srv.waitIdle(t)
	late := dialWS(t, srv.url(), ProtocolTransportWS) // sends no connection_init
	if _, err := wsRecv(t, late); websocket.CloseStatus(err) != closeInitTimeout {
		t.Fatalf("got %v, want close 4408", err)
	}
	srv.waitIdle(t)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^level=INFO msg="graphql websocket closed" remote=127\.0\.0\.1:\d+ duration=[0-9.]+[µm]?s closed_by=client$`),
		regexp.MustCompile(`^level=INFO msg="graphql websocket closed" remote=127\.0\.0\.1:\d+ duration=[0-9.]+[µm]?s closed_by_server\.code=4408 closed_by_server\.reason="Connection initialisation timeout"$`),
	}
	got := logs.lines()
	if len(got) != len(want) {
		t.Fatalf("log:\n%s\nwant %d lines", strings.Join(got, "\n"), len(want))
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("line %d: %s\nwant it to match %s", i, got[i], re)
		}
	}
}

// TestWebSocketSocketCaps: sockets past the Sockets budget are refused before
// the upgrade, with a reason; a socket closed frees its place; the refusals are
// logged once and then counted.
func TestWebSocketSocketCaps(t *testing.T) {
	for _, tc := range []struct {
		name              string
		perClient, total  int64
		open, wantStatus  int
		wantBody, wantLog string
	}{
		{"per client", 3, 0, 3, http.StatusTooManyRequests,
			`{"errors":[{"message":"Too many WebSocket connections from 127.0.0.1: at most 3 at once; try again shortly.","extensions":{"code":"TOO_MANY_REQUESTS"}}]}` + "\n",
			`level=WARN msg="WebSocket connections refused: over budget" count=%d last_client=127.0.0.1 limit=3 bound="per client"`},
		{"overall", 0, 2, 2, http.StatusServiceUnavailable,
			`{"errors":[{"message":"Too many WebSocket connections over all clients: at most 2 at once; try again shortly.","extensions":{"code":"TOO_MANY_REQUESTS"}}]}` + "\n",
			`level=WARN msg="WebSocket connections refused: over budget" count=%d last_client=127.0.0.1 limit=2 bound=total`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			sockets := admission.NewBudget("WebSocket connections", tc.perClient, tc.total, logs.logger())
			srv := newWSServer(t, 4, WebSocketOptions{Sockets: sockets})
			var conns []*websocket.Conn
			for range tc.open {
				c := dialWS(t, srv.url(), ProtocolTransportWS)
				wsSend(t, c, initMsg)
				wsMustRecv(t, c) // served: counted
				conns = append(conns, c)
			}
			const refused = 5
			for range refused {
				_, resp, err := websocket.Dial(t.Context(), srv.url(), &websocket.DialOptions{Subprotocols: []string{ProtocolTransportWS}})
				if err == nil || resp == nil || resp.StatusCode != tc.wantStatus {
					t.Fatalf("socket past the cap: %v %v, want status %d", resp, err, tc.wantStatus)
				}
				body, _ := io.ReadAll(resp.Body)
				if string(body) != tc.wantBody || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || resp.Header.Get("Retry-After") != "1" {
					t.Errorf("%s, Retry-After %q: body %q, want %q", resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), body, tc.wantBody)
				}
			}
			conns[0].Close(websocket.StatusNormalClosure, "")
			testkit.Eventually(t, func() error {
				if n := sockets.Held(); n >= int64(tc.open) {
					return fmt.Errorf("%d sockets counted with one of %d closed", n, tc.open)
				}
				return nil
			})
			c := dialWS(t, srv.url(), ProtocolTransportWS) // its place is free
			c.CloseNow()
			for _, c := range conns {
				c.CloseNow()
			}
			srv.ws.Shutdown(t.Context())
			srv.waitIdle(t)
			sockets.Close()
			want := []string{fmt.Sprintf(tc.wantLog, 1), fmt.Sprintf(tc.wantLog, refused-1)}
			if got := logs.warnings(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if held := sockets.Held(); held != 0 {
				t.Errorf("after every socket closed: %d counted", held)
			}
		})
	}
}

// TestWebSocketOperationCaps: an operation beyond MaxSubscriptions (per
// socket) or the Operations budget gets an error message of its own and the
// socket stays open; an operation ended frees its place.
func TestWebSocketOperationCaps(t *testing.T) {
	for _, tc := range []struct {
		name             string
		perClient, total int64
		refusal          string // of the fourth operation, the second on socket b
	}{
		{"per client", 3, 0, "Too many WebSocket operations from 127.0.0.1: at most 3 at once; try again shortly."},
		{"overall", 0, 3, "Too many WebSocket operations over all clients: at most 3 at once; try again shortly."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := admission.NewBudget("WebSocket operations", tc.perClient, tc.total, nil)
			srv := newWSServer(t, 4, WebSocketOptions{MaxSubscriptions: 2, Operations: ops})
			a := dialWS(t, srv.url(), ProtocolTransportWS)
			b := dialWS(t, srv.url(), ProtocolLegacyWS)
			defer a.CloseNow()
			defer b.CloseNow()
			const sub = "subscription { onUserCreated { id } }"
			wsSend(t, a, initMsg)
			wsMustRecv(t, a)
			wsSend(t, b, initMsg)
			wsMustRecv(t, b)
			wsMustRecv(t, b) // ka
			wsSend(t, a, subscribe("a1", sub, nil))
			wsSend(t, a, subscribe("a2", sub, nil))
			wsSend(t, a, subscribe("a3", sub, nil)) // over the socket's cap
			want := `{"id":"a3","type":"error","payload":[{"message":"Too many operations on this connection: at most 2 may be active at once.","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`
			if got := wsMustRecv(t, a); got != want {
				t.Errorf("got %s\nwant %s", got, want)
			}
			wsSend(t, b, legacyStart("b1", sub))
			srv.hub.waitActive(t, 3)
			wsSend(t, b, legacyStart("b2", sub)) // over the client's or the server's cap
			want = `{"id":"b2","type":"error","payload":[{"message":"` + tc.refusal + `","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`
			if got := wsMustRecv(t, b); got != want {
				t.Errorf("got %s\nwant %s", got, want)
			}
			wsSend(t, a, `{"id":"a1","type":"complete"}`)
			srv.hub.waitActive(t, 2)
			testkit.Eventually(t, func() error {
				if n := ops.Held(); n != 2 {
					return fmt.Errorf("%d operations counted, want 2", n)
				}
				return nil
			})
			wsSend(t, b, legacyStart("b2", sub)) // a place is free again
			srv.hub.waitActive(t, 3)
			a.CloseNow()
			b.CloseNow()
			srv.hub.waitActive(t, 0)
			srv.waitIdle(t)
			if held := ops.Held(); held != 0 {
				t.Errorf("after every socket closed: %d operations counted", held)
			}
			srv.ws.Shutdown(t.Context())
		})
	}
}

// slotsByClient is a ClientSlot of one slot per client: what a client's messages
// and set-ups are handled in, one at a time.
type slotsByClient struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

func (s *slotsByClient) take(ctx context.Context, client string) (func(), error) {
	s.mu.Lock()
	if s.slots == nil {
		s.slots = map[string]chan struct{}{}
	}
	slot := s.slots[client]
	if slot == nil {
		slot = make(chan struct{}, 1)
		s.slots[client] = slot
	}
	s.mu.Unlock()
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestWebSocketClientSlot: each message is handled in a slot of its client's
// (ClientSlot): with one slot a client, one client's messages are handled one at
// a time over all its sockets, while another client's go on; a close handshake,
// which waits for the peer, gives the slot back first.
func TestWebSocketClientSlot(t *testing.T) {
	entered := make(chan string, 4)
	release := make(chan struct{})
	releaseA1 := sync.OnceFunc(func() { close(release) })
	defer releaseA1() // when the test fails early, so that the server can shut down
	opts := WebSocketOptions{OnInit: func(r *http.Request, payload map[string]any) (context.Context, error) {
		who, _ := payload["who"].(string)
		entered <- who
		if who == "a1" {
			<-release
		}
		return r.Context(), nil
	}}
	opts.ClientSlot = (&slotsByClient{}).take
	srv := newWSServer(t, 4, opts)
	initAs := func(c *websocket.Conn, who string) {
		wsSend(t, c, `{"type":"connection_init","payload":{"who":"`+who+`"}}`)
	}
	var a1Conn *mutableConn
	a1 := dialWSWith(t, srv.url(), func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		a1Conn = &mutableConn{Conn: c}
		return a1Conn, err
	})
	defer a1Conn.Conn.Close()
	a2 := dialWSWith(t, srv.url(), (&net.Dialer{}).DialContext)
	defer a2.CloseNow()
	b := dialWSWith(t, srv.url(), (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext)
	defer b.CloseNow()

	initAs(a1, "a1")
	if who := <-entered; who != "a1" {
		t.Fatalf("%s entered first", who)
	}
	initAs(a2, "a2")
	initAs(b, "b")
	if who := <-entered; who != "b" {
		t.Fatalf("%s entered while a1 held 127.0.0.1's turn; want b, another client", who)
	}
	wsMustRecv(t, b) // connection_ack
	select {
	case who := <-entered:
		t.Fatalf("%s entered while a1 held 127.0.0.1's turn", who)
	case <-time.After(50 * time.Millisecond):
	}
	releaseA1()
	if who := <-entered; who != "a2" {
		t.Fatalf("%s entered, want a2", who)
	}
	wsMustRecv(t, a1)
	wsMustRecv(t, a2)

	// a1 sends a message that is not of the protocol and, once it is closed
	// with 4400, goes silent: the server waits for its close frame, up to 5 s.
	wsSend(t, a1, `{"type":"bogus"}`)
	a1Conn.mute.Store(true)
	if _, _, err := a1.Read(t.Context()); websocket.CloseStatus(err) != closeBadRequest {
		t.Fatalf("a1: %v, want close %d", err, closeBadRequest)
	}
	initAs(a2, "a2 again") // a second init: closed with 4429, without waiting for a1
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, _, err := a2.Read(ctx); websocket.CloseStatus(err) != closeTooManyInits {
		t.Fatalf("a2's second init: %v, want close %d before a1's handshake ends", err, closeTooManyInits)
	}
}

// mutableConn is a connection that, once muted, sends nothing and stays open.
type mutableConn struct {
	net.Conn
	mute atomic.Bool
}

func (c *mutableConn) Write(p []byte) (int, error) {
	if c.mute.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *mutableConn) Close() error {
	if c.mute.Load() {
		return nil
	}
	return c.Conn.Close()
}

// dialWSWith is dialWS over connections that dial makes.
func dialWSWith(t testing.TB, url string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsWait)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DialContext: dial}}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{ProtocolTransportWS}, HTTPClient: client})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(-1)
	return c
}

// TestInClientTurn: an operation's set-up runs in a slot of its client's and
// gives it back; one waiting for a slot stops waiting when its context ends; one
// refused does not run and gets the refusal.
func TestInClientTurn(t *testing.T) {
	slots := &slotsByClient{}
	c := &wsConn{h: &WebSocketHandler{opts: WebSocketOptions{ClientSlot: slots.take}}, client: "192.0.2.1"}
	held := func() int { return len(slots.slots["192.0.2.1"]) }
	ran := false
	if err := c.inClientTurn(t.Context(), func() { ran = held() == 1 }); err != nil || !ran {
		t.Fatal("f did not run in the client's slot")
	}
	if held() != 0 {
		t.Fatal("the slot was not given back")
	}
	release, _ := slots.take(t.Context(), "192.0.2.1") // another socket of the client holds it
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.inClientTurn(ctx, func() { t.Error("f ran while the slot was held") }) }()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("got %v, want the context's end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting for the slot after the context ended")
	}
	release()
	busy := errors.New("too many requests at once")
	c.h.opts.ClientSlot = func(context.Context, string) (func(), error) { return nil, busy }
	if err := c.inClientTurn(t.Context(), func() { t.Error("f ran though ClientSlot refused it") }); err != busy {
		t.Fatalf("a refused set-up: %v", err)
	}
}

// TestNotifyingSubscriptionsHoldNoGoroutine: subscriptions are read by their
// connection's sender goroutine, so an event for many of them wakes one
// goroutine, not one each. Every result still arrives.
func TestNotifyingSubscriptionsHoldNoGoroutine(t *testing.T) {
	const subscriptions = 200
	srv := newWSServer(t, 4, WebSocketOptions{KeepAlive: -1, MaxSubscriptions: subscriptions})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	base := runtime.NumGoroutine()
	for i := range subscriptions {
		wsSend(t, c, subscribe(fmt.Sprint(i), "subscription { onUserCreated { id } }", nil))
	}
	srv.hub.waitActive(t, subscriptions)
	// The goroutines that set the operations up end once they are handed over.
	testkit.Eventually(t, func() error {
		if held := runtime.NumGoroutine() - base; held >= subscriptions/10 {
			return fmt.Errorf("%d goroutines for %d notifying subscriptions", held, subscriptions)
		}
		return nil
	})
	event, _ := srv.hub.publish("Nia")
	got := map[string]bool{}
	for range subscriptions {
		var m struct {
			ID      string `json:"id"`
			Payload struct {
				Data struct {
					OnUserCreated struct{ ID any } `json:"onUserCreated"`
				} `json:"data"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(wsMustRecv(t, c)), &m); err != nil || fmt.Sprint(m.Payload.Data.OnUserCreated.ID) != fmt.Sprint(event["id"]) {
			t.Fatalf("%+v, %v", m, err)
		}
		got[m.ID] = true
	}
	if len(got) != subscriptions {
		t.Errorf("results for %d subscriptions, want %d", len(got), subscriptions)
	}
	c.CloseNow()
	srv.hub.waitActive(t, 0)
	srv.waitIdle(t)
}

// TestWebSocketClientIPv6Network: the addresses of one IPv6 /64 are one client
// to the per-client caps, as one host commonly holds a whole /64; another /64
// is another client.
func TestWebSocketClientIPv6Network(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{Sockets: admission.NewBudget("WebSocket connections", 1, 0, nil),
		ClientOf: func(r *http.Request) string { return admission.Of(r.RemoteAddr) }})
	// The test's connections all come from 127.0.0.1; the address they stand
	// for is in a header this server alone reads.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-Remote")
		srv.ws.ServeHTTP(w, r)
	}))
	defer front.Close()
	dial := func(remote string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(front.URL, "http"), &websocket.DialOptions{
			Subprotocols: []string{ProtocolTransportWS}, HTTPHeader: http.Header{"X-Test-Remote": {remote}}})
	}
	first, _, err := dial("[2001:db8:1:2::1]:40000")
	if err != nil {
		t.Fatal(err)
	}
	defer first.CloseNow()
	wsSend(t, first, initMsg)
	wsMustRecv(t, first) // served: counted
	if c, resp, err := dial("[2001:db8:1:2:ffff::9]:40001"); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		if c != nil {
			c.CloseNow()
		}
		t.Fatalf("a second socket from the same /64: %v %v, want 429", resp, err)
	}
	other, _, err := dial("[2001:db8:1:3::1]:40002")
	if err != nil {
		t.Fatalf("a socket from another /64: %v", err)
	}
	other.CloseNow()
}

// TestWebSocketMessageRefusedASlot: a message for which the client's work slots
// refuse room (too much of its work waiting) closes the socket with 1013, try
// again later, and the refusal's words.
func TestWebSocketMessageRefusedASlot(t *testing.T) {
	refusal := errors.New("too many requests waiting from 127.0.0.1: at most 0 may wait; try again shortly")
	srv := newWSServer(t, 4, WebSocketOptions{ClientSlot: func(context.Context, string) (func(), error) { return nil, refusal }})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	defer c.CloseNow()
	wsSend(t, c, initMsg)
	_, _, err := c.Read(t.Context())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || ce.Reason != "Too many requests waiting from 127.0.0.1: at most 0 may wait; try again shortly" {
		t.Fatalf("got %v, want close 1013 with the refusal", err)
	}
}

// TestWebSocketInvalidUTF8: a message that is not UTF-8, in a text frame (RFC
// 6455 fails the connection) or a binary one (JSON text is UTF-8), closes the
// socket with 1007 before anything of it is acted on or echoed, under either
// protocol; two ids differing only in invalid bytes never meet as one.
func TestWebSocketInvalidUTF8(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{KeepAlive: -1})
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		for _, typ := range []websocket.MessageType{websocket.MessageText, websocket.MessageBinary} {
			for _, msg := range []string{
				"{\"type\":\"ping\",\"payload\":{\"s\":\"\xff\"}}",
				"{\"id\":\"a\xfe\",\"type\":\"subscribe\",\"payload\":{\"query\":\"{ user(id: 1) { name } }\"}}",
				"{\"id\":\"a\xfe\",\"type\":\"start\",\"payload\":{\"query\":\"{ user(id: 1) { name } }\"}}",
			} {
				c := dialWS(t, srv.url(), proto)
				wsSend(t, c, initMsg)
				wsMustRecv(t, c)
				ctx, cancel := context.WithTimeout(context.Background(), wsWait)
				if err := c.Write(ctx, typ, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				cancel()
				got, err := wsRecv(t, c)
				if code := websocket.CloseStatus(err); code != websocket.StatusInvalidFramePayloadData {
					t.Errorf("%s, %v frame %q: got %q, close %v; want close 1007", proto, typ, msg, got, err)
				}
				c.CloseNow()
			}
		}
	}
	srv.waitIdle(t)
}

// refusalSignal is a Budget that closes refused at its first refusal.
type refusalSignal struct {
	Budget
	refused chan struct{}
	once    sync.Once
}

func (b *refusalSignal) Claim(client string, n int64) error {
	err := b.Budget.Claim(client, n)
	if err != nil {
		b.once.Do(func() { close(b.refused) })
	}
	return err
}

// TestWebSocketQueuedBytes: the messages queued for a socket whose client does
// not read hold their bytes of the client's answers budget; one that would
// pass it closes the socket with 1013 after what was queued, and every byte
// held is given back.
func TestWebSocketQueuedBytes(t *testing.T) {
	answers := admission.NewBudget("answer bytes waiting to be read", 4<<20, 0, nil)
	budget := &refusalSignal{Budget: answers, refused: make(chan struct{})}
	srv := newWSServer(t, 4, WebSocketOptions{Answers: budget, KeepAlive: -1, WriteTimeout: time.Minute})
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	defer c.CloseNow()
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	for _, id := range []string{"a", "b"} { // with two operations every message is queued
		wsSend(t, c, subscribe(id, "subscription { onUserCreated { id } }", nil))
	}
	srv.hub.waitActive(t, 2)
	ping := []byte(`{"type":"ping","payload":{"s":"` + strings.Repeat("x", 512<<10) + `"}}`)
	go func() { // until the server stops reading
		for c.Write(context.Background(), websocket.MessageText, ping) == nil {
		}
	}()
	select {
	case <-budget.refused:
	case <-time.After(wsWait):
		t.Fatalf("no claim refused; %d bytes held", answers.Held())
	}
	pongs := 0
	for {
		msg, err := wsRecv(t, c)
		if err != nil {
			if code := websocket.CloseStatus(err); code != websocket.StatusTryAgainLater {
				t.Errorf("after %d pongs: %v, want close 1013", pongs, err)
			}
			break
		}
		if !strings.HasPrefix(msg, `{"type":"pong"`) {
			t.Fatalf("message %.40s", msg)
		}
		pongs++
	}
	srv.waitIdle(t)
	if held := answers.Held(); held != 0 {
		t.Errorf("%d bytes still held", held)
	}
}

// TestWebSocketSubscribeCompleteCycles: thousands of operations started and
// stopped on one socket, under either protocol, leave nothing behind: no
// goroutine, no source, nothing held of the client's budgets.
func TestWebSocketSubscribeCompleteCycles(t *testing.T) {
	ops := admission.NewBudget("WebSocket operations", 1000, 0, nil)
	answers := admission.NewBudget("answer bytes waiting to be read", 1<<20, 0, nil)
	srv := newWSServer(t, 4, WebSocketOptions{Operations: ops, Answers: answers, KeepAlive: -1})
	base := runtime.NumGoroutine()
	for _, proto := range []string{ProtocolTransportWS, ProtocolLegacyWS} {
		c := dialWS(t, srv.url(), proto)
		wsSend(t, c, initMsg)
		wsMustRecv(t, c)
		start, stop := subscribe, func(id string) string { return `{"type":"complete","id":"` + id + `"}` }
		if proto == ProtocolLegacyWS {
			start = func(id, q string, _ map[string]any) string { return legacyStart(id, q) }
			stop = func(id string) string { return `{"type":"stop","id":"` + id + `"}` }
		}
		for i := range 2000 {
			id := fmt.Sprint(i % 3)
			q := "subscription { onUserCreated { id } }"
			if i%2 == 1 {
				q = "{ user(id: 1) { name } }"
			}
			wsSend(t, c, start(id, q, nil))
			wsSend(t, c, stop(id))
		}
		go func() { // what the server sends is read, and dropped
			for _, _, err := c.Read(context.Background()); err == nil; _, _, err = c.Read(context.Background()) {
			}
		}()
		srv.hub.waitActive(t, 0)
		c.Close(websocket.StatusNormalClosure, "")
		srv.waitIdle(t)
	}
	waitGoroutines(t, base)
	if ops.Held() != 0 || answers.Held() != 0 {
		t.Errorf("held: %d operations, %d answer bytes", ops.Held(), answers.Held())
	}
}

// TestWebSocketLongID: an operation id is held while the operation runs and
// sent back in each of its messages, so one past maxOperationID bytes is refused
// (graphql-transport-ws: 4400; legacy: connection_error, the socket open) and
// no operation starts; one of maxOperationID bytes runs.
func TestWebSocketLongID(t *testing.T) {
	srv := newWSServer(t, 4, WebSocketOptions{KeepAlive: -1})
	long, most := strings.Repeat("i", maxOperationID+1), strings.Repeat("i", maxOperationID)
	c := dialWS(t, srv.url(), ProtocolTransportWS)
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	wsSend(t, c, subscribe(most, "{ user(id: 1) { name } }", nil))
	if got := wsMustRecv(t, c); !strings.Contains(got, `"next"`) {
		t.Errorf("an id of %d bytes: %.80s", maxOperationID, got)
	}
	wsMustRecv(t, c) // complete
	wsSend(t, c, subscribe(long, "subscription { onUserCreated { id } }", nil))
	if got, err := wsRecv(t, c); websocket.CloseStatus(err) != closeBadRequest {
		t.Errorf("graphql-transport-ws, a longer id: %.80q %v, want close 4400", got, err)
	}
	c = dialWS(t, srv.url(), ProtocolLegacyWS)
	defer c.CloseNow()
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	wsSend(t, c, legacyStart(long, "subscription { onUserCreated { id } }"))
	if got := wsMustRecv(t, c); !strings.HasPrefix(got, `{"type":"connection_error"`) || strings.Contains(got, long) {
		t.Errorf("legacy, a longer id: %.120s, want connection_error", got)
	}
	wsSend(t, c, legacyStart(most, "{ user(id: 1) { name } }"))
	if got := wsMustRecv(t, c); !strings.Contains(got, `"data"`) {
		t.Errorf("legacy, an id of %d bytes after a longer one: %.80s", maxOperationID, got)
	}
	srv.hub.wait(t, "no subscription started", func(_, started int) bool { return started == 0 })
}
