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
)

// The fan-out scenario: n WebSocket clients subscribe to onUserCreated, one user is
// created over REST, and the time until each subscriber has the event is measured
// from just before the create request is sent. With -fanout-events, that many users
// are created one after another, each measured alike: one event says little on a
// noisy machine.

const fanOutQuery = "subscription { onUserCreated { id name } }"

// fanOut runs the scenario on a fresh service, then on the ceiling (bareFanOut):
// what any server takes on this machine to write one event to as many sockets.
func (h *harness) fanOut(ctx context.Context) {
	n := h.cfg.subscribers
	if name := fmt.Sprintf("onUserCreated to %d WebSocket subscribers", n); h.selected(name) && ctx.Err() == nil {
		h.rows = append(h.rows, h.fanOutService(ctx, name))
	}
	if name := fmt.Sprintf("ceiling: bare coder/websocket writing one prepared event to each of %d subscribers", n); h.selected(name) && ctx.Err() == nil {
		h.rows = append(h.rows, h.fanOutCeiling(ctx, name))
	}
}

// fanOutService is the fan-out's row for the service, skipped when /graphql does
// not upgrade WebSockets.
func (h *harness) fanOutService(ctx context.Context, name string) row {
	r := row{scenario: name, load: fanOutLoad(h.cfg.fanOutEvents), target: "all within 200ms"}
	h.logf("%s", name)
	p, err := h.startQuartet(ctx, h.smallData)
	if err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
		return r
	}
	defer p.stop()
	if status, err := probeWebSocket(p.httpAddr); err != nil || status != http.StatusSwitchingProtocols {
		r.verdict, r.measure = "SKIP", "no WebSocket on /graphql"
		h.notes = append(h.notes, fmt.Sprintf("fan-out skipped: /graphql answered a WebSocket upgrade with status %d (%v), not 101", status, err))
		return r
	}
	all, err := h.fanOutOn(ctx, p, &r)
	if err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
		return r
	}
	r.verdict = verdict(all)
	h.notes = append(h.notes, fmt.Sprintf("fan-out: the %d subscribers are goroutines of the client process, on the same 2 CPUs as the service; P50/P99 are per-subscriber delivery times", h.cfg.subscribers))
	return r
}

// fanOutCeiling is the fan-out's row for bareFanOut, which has no target.
func (h *harness) fanOutCeiling(ctx context.Context, name string) row {
	r := row{scenario: name, load: fanOutLoad(h.cfg.fanOutEvents), target: "-", verdict: "-"}
	h.logf("%s", name)
	p, err := h.startPeer(ctx, "http", h.smallData)
	if err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
		return r
	}
	defer p.stop()
	if _, err := h.fanOutOn(ctx, p, &r); err != nil {
		r.verdict, r.measure = "ERROR", err.Error()
	}
	return r
}

func fanOutLoad(events int) string {
	if events == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", events)
}

// summarizeFanOut gives the row's figures for the measured events: every
// delivery's delay, pooled, as the row's latencies; each event's last delivery
// (the median and the worst of them when there are several); and whether every
// event reached all n subscribers within limit.
func summarizeFanOut(events []fanOutResult, n int, limit time.Duration) (res *Result, measure string, all bool) {
	res = &Result{} // no Elapsed: a rate means nothing here
	lasts := make([]time.Duration, 0, len(events))
	complete := 0
	for _, e := range events {
		res.OK += e.delivered
		res.Latencies = append(res.Latencies, e.latencies...)
		lasts = append(lasts, e.last)
		if e.delivered == n {
			complete++
		}
	}
	slices.Sort(res.Latencies)
	slices.Sort(lasts)
	all = complete == len(events) && len(lasts) > 0 && lasts[len(lasts)-1] <= limit
	if len(events) == 1 {
		return res, fmt.Sprintf("%d/%d, last %s", events[0].delivered, n, fmtDur(events[0].last)), all
	}
	return res, fmt.Sprintf("%d of %d events to all %d; last p50 %s, max %s", complete, len(events), n,
		fmtDur(percentile(lasts, 50)), fmtDur(lasts[len(lasts)-1])), all
}

// fanOutOn runs the fan-out against the server p, logs what it saw of each event,
// and puts the summary in r; all is whether every event reached every subscriber
// within the target's 200 ms.
func (h *harness) fanOutOn(ctx context.Context, p *proc, r *row) (all bool, err error) {
	n := h.cfg.subscribers
	before, _ := p.memory()
	subscribed := func() {
		// From outside, so garbage not yet collected counts too: an upper bound.
		if m, err := p.memory(); err == nil && before.rss > 0 {
			h.logf("  RSS with %d subscribers %.0f MiB, %.0f MiB before them: %.1f KiB a subscriber", n, mib(m.rss), mib(before.rss),
				float64(m.rss-before.rss)/1024/float64(n))
		}
	}
	events, err := runFanOut(ctx, p.httpAddr, n, h.cfg.fanOutEvents, p.cpuTime, subscribed)
	if err != nil {
		return false, err
	}
	for _, res := range events {
		h.logf("  %d/%d delivered, p50 %s, last %s; CPU from the create to the last delivery: server %s, client %s (%s per subscriber)",
			res.delivered, n, fmtDur(percentile(res.latencies, 50)), fmtDur(res.last), fmtDur(res.serverCPU), fmtDur(res.clientCPU), fmtDur(res.clientCPU/time.Duration(n)))
	}
	r.quartet, r.measure, all = summarizeFanOut(events, n, 200*time.Millisecond)
	return all, nil
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
	// The CPU time the server and this process (the subscribers) used from just
	// before the create to the last delivery; the server's is 0 when unknown.
	serverCPU, clientCPU time.Duration
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
// registered), then creates the measured users, events of them, one at a time,
// each after the one before has reached every subscriber (or timed out) and a
// pause. serverCPU, when not nil, reads the server's CPU time; subscribed, when
// not nil, is called once every subscription is registered.
func runFanOut(ctx context.Context, addr string, n, events int, serverCPU func() (time.Duration, error), subscribed func()) ([]fanOutResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deliveries := make(chan delivery, 4*n)
	conns := make([]*wsConn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close() // and its reader returns
			}
		}
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
			c, err := wsSubscribe(ctx, addr)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			conns[i] = c
			go readEvents(c, deliveries)
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return nil, fmt.Errorf("subscribing: %w", *e)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	// A subscription counts from when the server has registered it, which the
	// protocol does not acknowledge: warm-up users are created until one reaches
	// every subscriber.
	for attempt := 1; ; attempt++ {
		warm, err := createUser(client, addr, fmt.Sprintf("Fan Out Warmup %d", attempt))
		if err != nil {
			return nil, err
		}
		got, _ := collect(deliveries, warm, n, time.Now(), 5*time.Second)
		if len(got) == n {
			break
		}
		if attempt == 10 {
			return nil, fmt.Errorf("only %d of %d subscribers received warm-up event %d", len(got), n, attempt)
		}
	}
	if subscribed != nil {
		subscribed()
	}
	cpu := func() (server, client time.Duration) {
		if serverCPU != nil {
			server, _ = serverCPU()
		}
		client, _ = selfCPUTime()
		return server, client
	}
	results := make([]fanOutResult, 0, events)
	for e := range events {
		if e > 0 {
			time.Sleep(fanOutPause)
		}
		server0, client0 := cpu()
		t0 := time.Now()
		id, err := createUser(client, addr, fmt.Sprintf("Fan Out Measured %d", e+1))
		if err != nil {
			return nil, err
		}
		got, _ := collect(deliveries, id, n, t0, 10*time.Second)
		server1, client1 := cpu()
		res := fanOutResult{delivered: len(got), latencies: got, serverCPU: server1 - server0, clientCPU: client1 - client0}
		if len(got) > 0 {
			res.last = got[len(got)-1]
		}
		results = append(results, res)
	}
	return results, nil
}

// fanOutPause separates the measured events, so that each starts on a server
// that has finished the one before (its last writes, its garbage) as it would
// between events far apart.
const fanOutPause = 100 * time.Millisecond

// wsSubscribe opens one subscriber: handshake, connection_init, ack, subscribe.
func wsSubscribe(ctx context.Context, addr string) (*wsConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := dialWS(dctx, &net.Dialer{}, addr, "/graphql", "graphql-transport-ws", "graphql-ws")
	if err != nil {
		return nil, err
	}
	if err := initAndSubscribe(dctx, c); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// initAndSubscribe sends connection_init, waits for the ack and subscribes to
// onUserCreated, in the protocol the server chose; ctx bounds the wait.
func initAndSubscribe(ctx context.Context, c *wsConn) error {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	legacy := c.subprotocol == "graphql-ws"
	send := func(m wsMessage) error {
		b, _ := json.Marshal(m)
		return c.writeText(b)
	}
	if err := send(wsMessage{Type: "connection_init"}); err != nil {
		return err
	}
	for {
		b, err := c.read()
		if err != nil {
			return err
		}
		var m wsMessage
		if json.Unmarshal(b, &m) == nil && m.Type == "connection_ack" {
			break
		}
		if m.Type == "connection_error" {
			return fmt.Errorf("connection_error: %s", m.Payload)
		}
	}
	payload, _ := json.Marshal(map[string]string{"query": fanOutQuery})
	start := wsMessage{ID: "1", Type: "subscribe", Payload: payload}
	if legacy {
		start.Type = "start"
	}
	return send(start)
}

// wsEvent is the part of a server message a subscriber reads.
type wsEvent struct {
	Type    string `json:"type"`
	Payload struct {
		Data struct {
			OnUserCreated struct {
				ID int64 `json:"id"`
			} `json:"onUserCreated"`
		} `json:"data"`
	} `json:"payload"`
}

// readEvents sends each onUserCreated event c receives to events, stamped with the
// time of receipt, and answers pings, until the connection ends.
func readEvents(c *wsConn, events chan<- delivery) {
	pong := []byte(`{"type":"pong"}`)
	for {
		b, err := c.read()
		if err != nil {
			return
		}
		at := time.Now()
		id, ok := eventUserID(b)
		if !ok {
			var m wsEvent
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.Type {
			case "next", "data":
				id, ok = m.Payload.Data.OnUserCreated.ID, true
			case "ping":
				c.writeText(pong)
			}
		}
		if ok {
			select {
			case events <- delivery{userID: id, at: at}:
			default: // the collector is not listening; nothing is measured now
			}
		}
	}
}

// eventUserID reads the user id of an onUserCreated event as the service writes it,
// {"id":"1","type":"next","payload":{"data":{"onUserCreated":{"id":7,...}}}}, by
// looking for the id where it must be rather than decoding the message: with
// encoding/json a delivery cost the subscriber twice the CPU, which the
// measurement shares with the service. Anything else (pings, errors, another
// layout) is not ok, and readEvents decodes it in full.
func eventUserID(msg []byte) (int64, bool) {
	const key = `"onUserCreated"`
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len(key):]
	for _, tok := range [...]string{":", "{", `"id"`, ":"} {
		rest = skipJSONSpace(rest)
		if len(rest) < len(tok) || string(rest[:len(tok)]) != tok {
			return 0, false
		}
		rest = rest[len(tok):]
	}
	rest = skipJSONSpace(rest)
	quoted := len(rest) > 0 && rest[0] == '"' // GraphQL's ID may be a string
	if quoted {
		rest = rest[1:]
	}
	var id int64
	n := 0
	for n < len(rest) && n < 18 && rest[n] >= '0' && rest[n] <= '9' {
		id = id*10 + int64(rest[n]-'0')
		n++
	}
	if n == 0 || n == len(rest) {
		return 0, false
	}
	switch end := rest[n]; {
	case quoted && end != '"', !quoted && end != ',' && end != '}' && !isSpace(end):
		return 0, false
	}
	return id, true
}

// skipJSONSpace drops JSON white space from the front of b.
func skipJSONSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
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
