package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The fan-out scenario: n WebSocket clients subscribe to onUserCreated, one user is
// created over REST, and the time until each subscriber has the event is measured
// from just before the create request is sent.

const fanOutQuery = "subscription { onUserCreated { id name } }"

// fanOut runs the scenario on a fresh service, or reports it skipped when /graphql
// does not upgrade WebSockets.
func (h *harness) fanOut(ctx context.Context) {
	n := h.cfg.subscribers
	name := fmt.Sprintf("onUserCreated to %d WebSocket subscribers", n)
	if !h.selected(name) || ctx.Err() != nil {
		return
	}
	r := row{scenario: name, load: "1 event", target: "all within 200ms"}
	defer func() { h.rows = append(h.rows, r) }()
	h.logf("%s", name)
	p, err := h.startQuartet(ctx, h.smallData)
	if err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
		return
	}
	defer p.stop()
	if status, err := probeWebSocket(p.httpAddr); err != nil || status != http.StatusSwitchingProtocols {
		r.verdict, r.measure = "SKIP", "no WebSocket on /graphql"
		h.notes = append(h.notes, fmt.Sprintf("fan-out skipped: /graphql answered a WebSocket upgrade with status %d (%v); the WebSocket transport (graphql/ws.go) is not wired in yet", status, err))
		return
	}
	res, err := runFanOut(ctx, p.httpAddr, n)
	if err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
		return
	}
	r.quartet = &Result{OK: res.delivered, Latencies: res.latencies} // no Elapsed: a rate means nothing here
	r.measure = fmt.Sprintf("%d/%d, last %s", res.delivered, n, fmtDur(res.last))
	r.verdict = verdict(res.delivered == n && res.last <= 200*time.Millisecond)
	h.notes = append(h.notes, fmt.Sprintf("fan-out: the %d subscribers are goroutines of the client process, on the same 2 CPUs as the service; P50/P99 are per-subscriber delivery times", n))
}

// probeWebSocket sends a WebSocket upgrade for /graphql and returns the status code.
func probeWebSocket(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// fanOutResult is what the subscribers saw of the measured event.
type fanOutResult struct {
	delivered int
	last      time.Duration   // until the last subscriber had it
	latencies []time.Duration // per subscriber, sorted
}

// wsMessage is a message of graphql-transport-ws or of the legacy graphql-ws.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// delivery is one subscriber's receipt of one event.
type delivery struct {
	userID int64
	at     time.Time
}

// runFanOut subscribes n clients to the service at addr, creates warm-up users until
// every subscriber has received one (so all subscriptions are known to be
// registered), then creates the measured user.
func runFanOut(ctx context.Context, addr string, n int) (fanOutResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan delivery, 4*n)
	dialer := &http.Client{Transport: &http.Transport{}}
	conns := make([]*websocket.Conn, n)
	defer func() {
		var wg sync.WaitGroup
		for _, c := range conns {
			if c != nil {
				wg.Go(func() { c.CloseNow() })
			}
		}
		wg.Wait()
	}()
	var (
		wg       sync.WaitGroup
		firstErr atomic.Pointer[error]
		gate     = make(chan struct{}, 64) // dials in flight
	)
	for i := range n {
		gate <- struct{}{}
		wg.Go(func() {
			defer func() { <-gate }()
			c, err := wsSubscribe(ctx, dialer, addr)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			conns[i] = c
			go readEvents(ctx, c, events)
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return fanOutResult{}, fmt.Errorf("subscribing: %w", *e)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	// A subscription counts from when the server has registered it, which the
	// protocol does not acknowledge: warm-up users are created until one reaches
	// every subscriber.
	for attempt := 1; ; attempt++ {
		warm, err := createUser(client, addr, fmt.Sprintf("Fan Out Warmup %d", attempt))
		if err != nil {
			return fanOutResult{}, err
		}
		got, _ := collect(events, warm, n, time.Now(), 5*time.Second)
		if len(got) == n {
			break
		}
		if attempt == 10 {
			return fanOutResult{}, fmt.Errorf("only %d of %d subscribers received warm-up event %d", len(got), n, attempt)
		}
	}
	t0 := time.Now()
	id, err := createUser(client, addr, "Fan Out Measured")
	if err != nil {
		return fanOutResult{}, err
	}
	got, _ := collect(events, id, n, t0, 10*time.Second)
	res := fanOutResult{delivered: len(got), latencies: got}
	if len(got) > 0 {
		res.last = got[len(got)-1]
	}
	return res, nil
}

// wsSubscribe opens one subscriber: handshake, connection_init, ack, subscribe.
func wsSubscribe(ctx context.Context, dialer *http.Client, addr string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws://"+addr+"/graphql", &websocket.DialOptions{
		HTTPClient:   dialer,
		Subprotocols: []string{"graphql-transport-ws", "graphql-ws"},
	})
	if err != nil {
		return nil, err
	}
	legacy := c.Subprotocol() == "graphql-ws"
	send := func(m wsMessage) error {
		b, _ := json.Marshal(m)
		return c.Write(dctx, websocket.MessageText, b)
	}
	if err := send(wsMessage{Type: "connection_init"}); err != nil {
		c.CloseNow()
		return nil, err
	}
	for {
		_, b, err := c.Read(dctx)
		if err != nil {
			c.CloseNow()
			return nil, err
		}
		var m wsMessage
		if json.Unmarshal(b, &m) == nil && m.Type == "connection_ack" {
			break
		}
		if m.Type == "connection_error" {
			c.CloseNow()
			return nil, fmt.Errorf("connection_error: %s", m.Payload)
		}
	}
	payload, _ := json.Marshal(map[string]string{"query": fanOutQuery})
	start := wsMessage{ID: "1", Type: "subscribe", Payload: payload}
	if legacy {
		start.Type = "start"
	}
	if err := send(start); err != nil {
		c.CloseNow()
		return nil, err
	}
	return c, nil
}

// readEvents sends each onUserCreated event c receives to events, stamped with the
// time of receipt, and answers pings, until the connection ends.
func readEvents(ctx context.Context, c *websocket.Conn, events chan<- delivery) {
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		at := time.Now()
		var m wsMessage
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case "next", "data":
			var p struct {
				Data struct {
					OnUserCreated struct {
						ID int64 `json:"id"`
					} `json:"onUserCreated"`
				} `json:"data"`
			}
			if json.Unmarshal(m.Payload, &p) == nil {
				select {
				case events <- delivery{userID: p.Data.OnUserCreated.ID, at: at}:
				default: // the collector is not listening; nothing is measured now
				}
			}
		case "ping":
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		}
	}
}

// collect waits until want subscribers have the event for user id, or until the
// timeout, and returns each delivery's delay after t0, sorted. Events for other
// users are dropped.
func collect(events <-chan delivery, id int64, want int, t0 time.Time, timeout time.Duration) ([]time.Duration, bool) {
	var got []time.Duration
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(got) < want {
		select {
		case d := <-events:
			if d.userID == id {
				got = append(got, d.at.Sub(t0))
			}
		case <-timer.C:
			slices.Sort(got)
			return got, false
		}
	}
	slices.Sort(got)
	return got, true
}

// createUser creates a user over REST and returns its id.
func createUser(client *http.Client, addr, name string) (int64, error) {
	email := strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"
	body, _ := json.Marshal(map[string]string{"name": name, "email": email})
	resp, err := client.Post("http://"+addr+"/api/users", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var u struct {
		ID int64 `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("POST /api/users: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&u); err != nil || u.ID == 0 {
		return 0, errors.Join(errors.New("POST /api/users: no id in the answer"), err)
	}
	return u.ID, nil
}
