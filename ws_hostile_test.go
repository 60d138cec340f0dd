package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/admission"
	"quartet/internal/testkit"
)

// TestHostileWebSockets replays the hostile WebSocket attack: one client
// address opens 500 sockets and asks for 101 subscriptions on each. Past the
// caps (100 sockets and 1,000 operations per client address, 100 operations
// per socket) it is refused, the refusals are logged without flooding the
// log, and a legitimate client's REST user creates, each after one more
// socket refused, all succeed and reach the 1,000 subscriptions admitted.
func TestHostileWebSockets(t *testing.T) {
	testkit.SkipIfShort(t, "opens 500 WebSocket connections from a second test process")
	const (
		sockets        = 500
		perClient      = 100
		subsPerSocket  = 101 // one more than the graphql package's cap per socket
		clientSubs     = 1_000
		creates        = 9
		eventsExpected = clientSubs * creates
		heapBound      = 64 << 20
	)
	heapBefore := testkit.LiveHeap()
	cfg := testConfig()
	l := &cfg.admission
	l.WSSockets, l.WSSocketsPerClient, l.WSOperations, l.WSOperationsPerClient = 10_000, perClient, 100_000, clientSubs
	a, logs := startApp(t, cfg)
	url := "ws://" + a.httpAddr + "/graphql"
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	dial := func() (*websocket.Conn, int, error) {
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			if resp != nil {
				return nil, resp.StatusCode, err
			}
			return nil, 0, err
		}
		return c, http.StatusSwitchingProtocols, nil
	}
	// Each admitted socket subscribes subsPerSocket times to selections that
	// differ within a socket (the attacker's choice) and repeat across
	// sockets; its reader counts the events and the refusals.
	var events, opRefusals atomic.Int64
	begin := time.Now()
	var readers sync.WaitGroup
	serve := func(c *websocket.Conn) error {
		var msgs []string
		msgs = append(msgs, `{"type":"connection_init"}`)
		for i := range subsPerSocket {
			q := fmt.Sprintf("subscription { onUserCreated { id name f%d: email } }", i)
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "type": "subscribe", "payload": map[string]any{"query": q}})
			msgs = append(msgs, string(b))
		}
		for _, m := range msgs {
			if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				return err
			}
		}
		readers.Go(func() {
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					return // closed by the test; a socket lost early misses events
				}
				switch {
				case string(data) == `{"type":"ping"}`: // the server's keep-alive
					c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
				case strings.HasPrefix(string(data), `{"id":`) && strings.Contains(string(data), `"type":"next"`):
					events.Add(1)
				case strings.Contains(string(data), `"type":"error"`) && strings.Contains(string(data), "Too many "):
					opRefusals.Add(1)
				}
			}
		})
		return nil
	}

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		conns    []*websocket.Conn
		failures []error
		attempts sync.WaitGroup
		slots    = make(chan struct{}, 50)
	)
	attempt := func(keep bool) {
		slots <- struct{}{}
		defer func() { <-slots }()
		c, status, err := dial()
		switch {
		case c != nil && keep:
			err = serve(c)
		case c != nil:
			c.CloseNow()
		case status == http.StatusTooManyRequests:
			err = nil
		}
		mu.Lock()
		defer mu.Unlock()
		statuses[status]++
		if c != nil && keep {
			conns = append(conns, c)
		}
		if err != nil {
			failures = append(failures, err)
		}
	}
	for range sockets {
		attempts.Go(func() { attempt(true) })
	}
	attempts.Wait()
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
		readers.Wait()
	}()
	if len(failures) > 0 {
		t.Fatalf("%d sockets failed otherwise than with 429, first: %v", len(failures), failures[0])
	}
	if statuses[http.StatusSwitchingProtocols] != perClient || statuses[http.StatusTooManyRequests] != sockets-perClient {
		t.Fatalf("statuses %v, want %d upgraded and %d refused with 429", statuses, perClient, sockets-perClient)
	}
	testkit.Eventually(t, subscribersReach(a.store, clientSubs))
	const refusedOps = perClient*subsPerSocket - clientSubs
	testkit.Eventually(t, func() error {
		if n := opRefusals.Load(); n < refusedOps {
			return fmt.Errorf("%d operations refused past the caps, want %d", n, refusedOps)
		}
		return nil
	})
	if n := feedSubscribers(a.store); n != clientSubs {
		t.Fatalf("%d subscriptions active, want %d", n, clientSubs)
	}
	// What the attack holds, the test's own sockets included: without the
	// caps, 500 sockets and 50,000 subscriptions held 600 MB or more.
	if grown := testkit.LiveHeap() - heapBefore; grown > heapBound {
		t.Errorf("heap grew by %d MB under the attack, want under %d MB", grown>>20, heapBound>>20)
	} else {
		t.Logf("heap grew by %.1f MB under the attack", float64(grown)/(1<<20))
	}

	// The attacker keeps trying for more sockets while a legitimate client
	// creates users.
	stop := make(chan struct{})
	var attacker sync.WaitGroup
	attacker.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond): // a client that reconnects, not a flood
				attempt(false)
			}
		}
	})
	refused := func() int {
		mu.Lock()
		defer mu.Unlock()
		return statuses[http.StatusTooManyRequests]
	}
	client := &http.Client{Timeout: 10 * time.Second * testkit.RaceSlowdown}
	for i := range creates {
		// Each create comes after one more socket refused, so the two interleave.
		n := refused()
		testkit.Eventually(t, func() error {
			if refused() == n {
				return fmt.Errorf("no socket refused before create %d", i)
			}
			return nil
		})
		body := fmt.Sprintf(`{"name":"Legit %d","email":"legit%d@example.com"}`, i, i)
		resp, err := client.Post("http://"+a.httpAddr+"/api/users", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("create %d under attack: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %d under attack: status %d, want 201", i, resp.StatusCode)
		}
	}
	close(stop)
	attacker.Wait()
	mu.Lock()
	if statuses[http.StatusSwitchingProtocols] != perClient {
		t.Errorf("%d sockets upgraded in all, want %d", statuses[http.StatusSwitchingProtocols], perClient)
	}
	mu.Unlock()

	// Every subscription admitted got every event.
	testkit.Eventually(t, func() error {
		if n := events.Load(); n < eventsExpected {
			return fmt.Errorf("%d events delivered, want %d", n, eventsExpected)
		}
		return nil
	})

	// The refusals are logged, a line at first and then counts, not a line each.
	for _, msg := range []string{
		`msg="WebSocket connections refused: over budget"`,
		`msg="WebSocket operations refused: over budget"`,
	} {
		n := strings.Count(logs.String(), msg)
		if most := 1 + int(time.Since(begin)/time.Minute); n < 1 || n > most {
			t.Errorf("%d log lines of %s, want one and then one a minute at most", n, msg)
		}
	}
	if !strings.Contains(logs.String(), `count=1 last_client=127.0.0.1 limit=100 bound="per client"`) || !strings.Contains(logs.String(), `count=1 last_client=127.0.0.1 limit=1000 bound="per client"`) {
		t.Errorf("no first refusal line in the log:\n%s", tail(logs.String(), 2000))
	}
}

// feedSubscribers is how many subscriptions the store's change feed has.
func feedSubscribers(s *Store) int {
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	return len(s.feed.subs)
}

// tail is the end of s, at most n bytes of it.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestWebSocketLimitFlags: the caps' flags refuse negative values, and 0 is no
// limit.
func TestWebSocketLimitFlags(t *testing.T) {
	for _, flag := range []string{"-ws-max-sockets", "-ws-max-sockets-per-client", "-ws-max-subscriptions", "-ws-max-subscriptions-per-client"} {
		err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", flag, "-1"}, envFrom(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%s -1: %v, want refused", flag, err)
		}
	}
	b := admission.NewBudget("sockets", 0, 0, nil)
	for i := range 1000 {
		if err := b.Claim(fmt.Sprint("10.0.0.", i%3), 1); err != nil {
			t.Fatalf("a budget of 0 and 0 refused: %v", err)
		}
	}
}
