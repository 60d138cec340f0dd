package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
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
	waitSubscribers(t, a.store, 1)
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
	waitSubscribers(t, a.store, 1)
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

// waitSubscribers waits until the store's change feed has n subscribers, i.e. the
// subscriptions started over the socket are listening.
func waitSubscribers(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := feedSubscribers(s)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers after 5s, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
