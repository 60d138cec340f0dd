package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/testkit"
)

// shareSchema is a schema whose Subscription.ev delivers what publish sends,
// counting the executions of Ev.n.
type shareSchema struct {
	*Schema
	mu      sync.Mutex
	sources []testFeed
	calls   atomic.Int64
}

type shareEv struct{ n int }

func newShareSchema(t testing.TB) *shareSchema {
	t.Helper()
	schema, err := ParseSchema(`
		type Query { x: Int }
		type Subscription { ev(k: Int, l: String): Ev }
		type Ev { n: Int }`)
	if err != nil {
		t.Fatal(err)
	}
	s := &shareSchema{Schema: schema}
	schema.ShareEventResults = true
	schema.SetNotifyingSubscriber("ev", func(p ResolveParams, notify func()) (EventQueue, error) {
		f := testFeed{make(chan any, 4), notify}
		s.mu.Lock()
		s.sources = append(s.sources, f)
		s.mu.Unlock()
		return chanQueue(f.c), nil
	})
	schema.SetResolver("Ev", "n", func(p ResolveParams) (any, error) {
		s.calls.Add(1)
		return p.Source.(*shareEv).n, nil
	})
	return s
}

// publish sends ev to every source stream made so far.
func (s *shareSchema) publish(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.sources {
		f.send(ev)
	}
}

func (s *shareSchema) reset() {
	s.calls.Store(0)
	s.mu.Lock()
	s.sources = nil
	s.mu.Unlock()
}

func (s *shareSchema) sharedStreams() int {
	s.fanout.mu.Lock()
	defer s.fanout.mu.Unlock()
	return len(s.fanout.streams)
}

// TestShareEventResults: subscribers of the same subscription (query text,
// operation name and variables, whatever their order) share one execution
// and one encoding per event; different variables do not share.
func TestShareEventResults(t *testing.T) {
	s := newShareSchema(t)
	const query = `subscription S($k: Int, $l: String) { ev(k: $k, l: $l) { n } }`
	type sub struct {
		query string
		op    string
		vars  string // JSON, decoded with UseNumber as the HTTP and WebSocket readers do
	}
	run := func(subs []sub) (executions int64, resps []*Response) {
		s.reset()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var streams []<-chan *Response
		for _, sb := range subs {
			var vars map[string]any
			if sb.vars != "" {
				d := json.NewDecoder(strings.NewReader(sb.vars))
				d.UseNumber()
				if err := d.Decode(&vars); err != nil {
					t.Fatal(err)
				}
			}
			st, err := s.Subscribe(ctx, Request{Query: sb.query, OperationName: sb.op, Variables: vars})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		s.publish(&shareEv{n: 7})
		for _, st := range streams {
			resps = append(resps, <-st)
		}
		return s.calls.Load(), resps
	}
	same := func(n int, sb sub) []sub {
		var out []sub
		for range n {
			out = append(out, sb)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		subs []sub
		want int64
	}{
		{"no variables", same(50, sub{query: "subscription { ev { n } }"}), 1},
		{"same variables", same(20, sub{query, "S", `{"k":1,"l":"a"}`}), 1},
		{"variables in another order", append(same(10, sub{query, "S", `{"k":1,"l":"a"}`}), same(10, sub{query, "S", `{"l":"a","k":1}`})...), 1},
		{"an Int spelt two ways", append(same(10, sub{query, "", `{"k":1}`}), same(10, sub{query, "", `{"k":1e0}`})...), 1},
		{"different variables", append(same(10, sub{query, "S", `{"k":1}`}), same(10, sub{query, "S", `{"k":2}`})...), 2},
		{"null is not absent", append(same(10, sub{query, "S", `{"k":null}`}), same(10, sub{query, "S", `{}`})...), 2},
		{"different operation names", append(same(10, sub{"subscription A { ev { n } } subscription B { ev { n } }", "A", ""}), same(10, sub{"subscription A { ev { n } } subscription B { ev { n } }", "B", ""})...), 2},
		{"different query text", append(same(10, sub{query: "subscription { ev { n } }"}), same(10, sub{query: "subscription{ev{n}}"})...), 2},
		{"a lone subscriber", same(1, sub{query: "subscription { ev { n } }"}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, resps := run(tc.subs)
			if n != tc.want {
				t.Errorf("%d subscribers, one event: %d executions, want %d", len(tc.subs), n, tc.want)
			}
			encodings := map[*Response]bool{}
			for _, r := range resps {
				if got := string(r.appendJSON(nil)); got != `{"data":{"ev":{"n":7}}}` {
					t.Fatalf("got %s", got)
				}
				encodings[r] = true
			}
			if int64(len(encodings)) != tc.want {
				t.Errorf("%d distinct responses, want %d: one encoding per execution", len(encodings), tc.want)
			}
			// The subscribers' goroutines end after their context.
			testkit.Eventually(t, func() error {
				if n := s.sharedStreams(); n != 0 {
					return fmt.Errorf("%d shared streams left after every subscriber is gone", n)
				}
				return nil
			})
		})
	}
	s.ShareEventResults = false
	if n, _ := run(same(5, sub{query: "subscription { ev { n } }"})); n != 5 {
		t.Errorf("sharing off: %d executions, want 5", n)
	}
}

// TestShareEventResultsWindow: subscribers at different paces, up to
// sharedEventWindow events apart, still share every event.
func TestShareEventResultsWindow(t *testing.T) {
	s := newShareSchema(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const subscribers = 3
	var runs []func(func(*Response) bool)
	for range subscribers {
		run, err := s.subscribeEach(ctx, Request{Query: "subscription { ev { n } }"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	events := make([]*shareEv, 4) // the sources hold 4
	for i := range events {
		events[i] = &shareEv{n: i}
		s.publish(events[i])
	}
	// One subscriber takes every event, then the others follow.
	for _, run := range runs {
		got := 0
		run(func(r *Response) bool {
			if want := fmt.Sprintf(`{"data":{"ev":{"n":%d}}}`, got); string(r.appendJSON(nil)) != want {
				t.Errorf("event %d: %s, want %s", got, r.appendJSON(nil), want)
			}
			got++
			return got < len(events)
		})
	}
	if n := s.calls.Load(); n != int64(len(events)) {
		t.Errorf("%d subscribers, %d events: %d executions, want %d", subscribers, len(events), n, len(events))
	}
}

// TestFanOutAllocations: one event to many subscribers of the same
// subscription, each framing it as a WebSocket message, allocates about
// nothing per subscriber: one execution and one encoding in all.
func TestFanOutAllocations(t *testing.T) {
	const subscribers = 2000
	s := newShareSchema(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got, done sync.WaitGroup
	for i := range subscribers {
		run, err := s.subscribeEach(ctx, Request{Query: "subscription { ev { n } }"})
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint(i)
		buf := make([]byte, 0, 256) // as a pooled frame buffer would be
		got.Add(1)
		done.Go(func() {
			run(func(r *Response) bool {
				buf = appendOpHeader(buf[:0], "next", id)
				buf = r.appendJSON(append(buf, `,"payload":`...))
				got.Done()
				return true
			})
		})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s.publish(&shareEv{n: 1})
	got.Wait()
	runtime.ReadMemStats(&after)
	cancel()
	done.Wait()
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d executions for %d subscribers, want 1", n, subscribers)
	}
	if perSub := float64(after.Mallocs-before.Mallocs) / subscribers; perSub > 0.5 {
		t.Errorf("%.2f allocations per subscriber, want almost none", perSub)
	}
}

// TestWebSocketFanOut: sockets subscribed to the same subscription get one
// execution per event between them, each its own id in the frame.
func TestWebSocketFanOut(t *testing.T) {
	s := newShareSchema(t)
	ws := NewWebSocketHandler(s.Schema, WebSocketOptions{KeepAlive: -1})
	srv := httptest.NewServer(ws)
	defer func() {
		ws.Shutdown(t.Context())
		srv.Close()
	}()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	const sockets = 50
	var conns []*websocket.Conn
	for i := range sockets {
		c := dialWS(t, url, []string{ProtocolTransportWS, ProtocolLegacyWS}[i%2])
		defer c.CloseNow()
		wsSend(t, c, initMsg)
		wsMustRecv(t, c)
		if i%2 == 0 {
			wsSend(t, c, subscribe(fmt.Sprint("t", i), "subscription { ev(k: 1) { n } }", nil))
		} else {
			wsSend(t, c, legacyStart(fmt.Sprint("l", i), "subscription { ev(k: 1) { n } }"))
		}
		conns = append(conns, c)
	}
	waitSubscriptions(t, s, sockets)
	s.publish(&shareEv{n: 3})
	for i, c := range conns {
		want := fmt.Sprintf(`{"id":"t%d","type":"next","payload":{"data":{"ev":{"n":3}}}}`, i)
		if i%2 == 1 {
			want = fmt.Sprintf(`{"id":"l%d","type":"data","payload":{"data":{"ev":{"n":3}}}}`, i)
		}
		if got := wsMustRecv(t, c); got != want {
			t.Errorf("socket %d: %s, want %s", i, got, want)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d executions for %d sockets, want 1", n, sockets)
	}
}

// TestWebSocketCoalescesWrites: results waiting for one socket while its
// writer is busy go out in one system call, each intact.
func TestWebSocketCoalescesWrites(t *testing.T) {
	const subscriptions = 50
	s, c, conn, counts := subscribedSocket(t, subscriptions)
	conn.writing.Lock()
	s.publish(&shareEv{n: 5})
	before := counts.writes.Load()
	conn.writing.Unlock()
	got := map[string]bool{}
	for range subscriptions {
		var m struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		msg := wsMustRecv(t, c)
		if err := json.Unmarshal([]byte(msg), &m); err != nil || m.Type != "next" || string(m.Payload) != `{"data":{"ev":{"n":5}}}` {
			t.Fatalf("got %s", msg)
		}
		got[m.ID] = true
	}
	if len(got) != subscriptions {
		t.Errorf("%d distinct ids, want %d", len(got), subscriptions)
	}
	if n := counts.writes.Load() - before; n != 1 {
		t.Errorf("%d system calls for %d waiting results, want 1", n, subscriptions)
	}
}

// TestWebSocketBatchIsTimedOnce: results written into a held batch go to
// memory, so only the batch's one system call gets a write deadline, not each
// result (two timer changes a message were a tenth of a fan-out's writer CPU).
func TestWebSocketBatchIsTimedOnce(t *testing.T) {
	const subscriptions = 50
	s, c, conn, counts := subscribedSocket(t, subscriptions)
	conn.writing.Lock()
	s.publish(&shareEv{n: 5})
	before := counts.deadlines.Load()
	conn.writing.Unlock()
	for range subscriptions {
		wsMustRecv(t, c)
	}
	// Set and cleared for the batch, and perhaps for a first result that went
	// out alone.
	if n := counts.deadlines.Load() - before; n > 4 {
		t.Errorf("%d write deadlines set for %d queued results, want 2 (or 4)", n, subscriptions)
	}
}

// connCounts counts what a server does to its sockets: the writes (system
// calls) and the write deadlines set.
type connCounts struct{ writes, deadlines atomic.Int64 }

// countingListener accepts connections that count into n.
type countingListener struct {
	net.Listener
	n *connCounts
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{nc, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *connCounts
}

func (c countingConn) Write(p []byte) (int, error) {
	c.n.writes.Add(1)
	return c.Conn.Write(p)
}

func (c countingConn) SetWriteDeadline(t time.Time) error {
	c.n.deadlines.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// TestWebSocketBatchesOneEventsResults: one event reaching many operations of one
// socket wakes them all at once; their results go out together from the socket's
// writer, not in a system call each. Batching is up to the scheduler, so the bound
// is loose: a quarter of the messages. Each operation writing its own (the old
// way) took 30 to 60 percent.
func TestWebSocketBatchesOneEventsResults(t *testing.T) {
	const subscriptions, events = 100, 10
	s, c, _, counts := subscribedSocket(t, subscriptions)
	before := counts.writes.Load()
	for ev := range events {
		s.publish(&shareEv{n: ev})
		for range subscriptions {
			want := fmt.Sprintf(`"payload":{"data":{"ev":{"n":%d}}}`, ev)
			if msg := wsMustRecv(t, c); !strings.Contains(msg, want) {
				t.Fatalf("event %d: got %s", ev, msg)
			}
		}
	}
	writes := counts.writes.Load() - before
	if writes > subscriptions*events/4 {
		t.Errorf("%d system calls for %d results, want at most a quarter", writes, subscriptions*events)
	}
}

// subscribedSocket starts a WebSocket handler over the share schema, and
// one socket with n subscriptions to ev, all handed to the socket's sender; it
// returns the schema, the client's socket, the server's, and what the server
// did to its sockets.
func subscribedSocket(t *testing.T, n int) (*shareSchema, *websocket.Conn, *wsConn, *connCounts) {
	t.Helper()
	s := newShareSchema(t)
	ws := NewWebSocketHandler(s.Schema, WebSocketOptions{KeepAlive: -1, MaxSubscriptions: n})
	srv := httptest.NewUnstartedServer(ws)
	counts := &connCounts{}
	srv.Listener = countingListener{srv.Listener, counts}
	srv.Start()
	t.Cleanup(func() {
		ws.Shutdown(context.Background())
		srv.Close()
	})
	c := dialWS(t, "ws"+strings.TrimPrefix(srv.URL, "http"), ProtocolTransportWS)
	t.Cleanup(func() { c.CloseNow() })
	wsSend(t, c, initMsg)
	wsMustRecv(t, c)
	for i := range n {
		wsSend(t, c, subscribe(fmt.Sprint(i), "subscription { ev { n } }", nil))
	}
	waitSubscriptions(t, s, n)
	var conn *wsConn
	ws.mu.Lock()
	for conn = range ws.conns {
	}
	ws.mu.Unlock()
	testkit.Eventually(t, func() error {
		conn.mu.Lock()
		passive := len(conn.passive)
		conn.mu.Unlock()
		if passive != n {
			return fmt.Errorf("%d of %d subscriptions handed to the sender", passive, n)
		}
		return nil
	})
	return s, c, conn, counts
}

// waitSubscriptions waits until n subscriptions to ev have started.
func waitSubscriptions(t *testing.T, s *shareSchema, n int) {
	t.Helper()
	testkit.Eventually(t, func() error {
		s.mu.Lock()
		started := len(s.sources)
		s.mu.Unlock()
		if started != n {
			return fmt.Errorf("%d of %d subscriptions started", started, n)
		}
		return nil
	})
}
