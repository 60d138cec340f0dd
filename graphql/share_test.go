package graphql

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestShareEventResults: with ShareEventResults, subscribers of the same document
// without variables share one execution per event; with variables, each executes.
func TestShareEventResults(t *testing.T) {
	schema, err := ParseSchema(`
		type Query { x: Int }
		type Subscription { ev(k: Int): Ev }
		type Ev { n: Int }`)
	if err != nil {
		t.Fatal(err)
	}
	schema.ShareEventResults = true
	type ev struct{ n int }
	var mu sync.Mutex
	var sources []chan any
	schema.SetSubscriber("ev", func(p ResolveParams) (<-chan any, error) {
		c := make(chan any, 4)
		mu.Lock()
		sources = append(sources, c)
		mu.Unlock()
		return c, nil
	})
	var calls atomic.Int64
	schema.SetResolver("Ev", "n", func(p ResolveParams) (any, error) {
		calls.Add(1)
		return p.Source.(*ev).n, nil
	})
	run := func(query string, vars map[string]any, subscribers int) (int64, []string) {
		calls.Store(0)
		mu.Lock()
		sources = nil
		mu.Unlock()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var streams []<-chan *Response
		for range subscribers {
			s, err := schema.Subscribe(ctx, Request{Query: query, Variables: vars})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s)
		}
		e := &ev{n: 7}
		for _, c := range sources {
			c <- e
		}
		var got []string
		for _, s := range streams {
			got = append(got, string((<-s).AppendJSON(nil)))
		}
		return calls.Load(), got
	}
	n, got := run(`subscription { ev { n } }`, nil, 50)
	if n != 1 {
		t.Errorf("50 subscribers, one event: %d executions, want 1", n)
	}
	for _, g := range got {
		if g != `{"data":{"ev":{"n":7}}}` {
			t.Fatalf("got %s", g)
		}
	}
	if n, _ := run(`subscription ($k: Int) { ev(k: $k) { n } }`, map[string]any{"k": 1}, 5); n != 5 {
		t.Errorf("with variables: %d executions, want 5 (not shared)", n)
	}
	schema.ShareEventResults = false
	if n, _ := run(`subscription { ev { n } }`, nil, 5); n != 5 {
		t.Errorf("sharing off: %d executions, want 5", n)
	}
}
