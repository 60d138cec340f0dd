package graphql

import (
	"context"
	"errors"
	"testing"
)

func TestSubscribe(t *testing.T) {
	s, _ := newTestSchema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := s.Subscribe(ctx, Request{Query: "subscription { onUserCreated { id name } }"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Dan", "Eve"} {
		r := s.Execute(context.Background(), Request{
			Query:     "mutation($n: String!) { createUser(name: $n, email: \"x@y.z\") { id } }",
			Variables: map[string]any{"n": name},
		})
		if len(r.Errors) > 0 {
			t.Fatal(ErrorList(r.Errors))
		}
	}
	for _, want := range []string{
		`{"data":{"onUserCreated":{"id":4,"name":"Dan"}}}`,
		`{"data":{"onUserCreated":{"id":5,"name":"Eve"}}}`,
	} {
		resp := <-events
		if got := string(resp.appendJSON(nil)); got != want {
			t.Errorf("event %s, want %s", got, want)
		}
	}
	cancel()
	for range events {
		// The stream must end once the context is cancelled.
	}

	_, err = s.Subscribe(context.Background(), Request{Query: "subscription { onPostCreated { id } }"})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Code() != "FORBIDDEN" || list[0].Path[0] != "onPostCreated" {
		t.Errorf("failing subscriber: got %v", err)
	}
	_, err = s.Subscribe(context.Background(), Request{Query: "subscription { onUserCreated { id } onPostCreated { id } }"})
	if !errors.As(err, &list) || list[0].Code() != codeValidationFailed {
		t.Errorf("two root fields: got %v", err)
	}
	_, err = s.Subscribe(context.Background(), Request{Query: "subscription($v: Boolean = true) { onUserCreated @include(if: $v) { id } }", Variables: map[string]any{"v": nil}})
	if !errors.As(err, &list) || list[0].Code() != codeBadUserInput || list[0].Locations[0] != (Position{1, 63}) {
		t.Errorf("root field's @include with a null condition: got %v, want its argument's error", err)
	}
	one, err := s.Subscribe(context.Background(), Request{Query: "{ user(id: 2) { name } }"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string((<-one).appendJSON(nil)); got != `{"data":{"user":{"name":"Bob"}}}` {
		t.Errorf("query over Subscribe: %s", got)
	}
	if _, open := <-one; open {
		t.Error("query stream not closed after its response")
	}
}

// chanQueue is an EventQueue read from a channel, for tests: a closed
// channel has ended.
type chanQueue <-chan any

// testFeed is a test's source stream: the channel its chanQueue reads, and the
// notify to call after each send.
type testFeed struct {
	c      chan any
	notify func()
}

func (f testFeed) send(ev any) {
	f.c <- ev
	f.notify()
}

func (q chanQueue) Next() (event any, ok, ended bool) {
	select {
	case ev, open := <-q:
		return ev, open, !open
	default:
		return nil, false, false
	}
}

// TestSubscribeNotifying: Schema.Subscribe reads a notifying source when told,
// and ends when it closes.
func TestSubscribeNotifying(t *testing.T) {
	s, err := ParseSchema(`type Query { x: Int } type Subscription { n: Int }`)
	if err != nil {
		t.Fatal(err)
	}
	src := make(chan any, 4)
	var notify func()
	s.SetNotifyingSubscriber("n", func(p ResolveParams, told func()) (EventQueue, error) {
		notify = told
		return chanQueue(src), nil
	})
	s.SetResolver("Subscription", "n", func(p ResolveParams) (any, error) { return p.Source, nil })
	events, err := s.Subscribe(t.Context(), Request{Query: "subscription { n }"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		src <- n
		notify()
	}
	for _, want := range []string{`{"data":{"n":1}}`, `{"data":{"n":2}}`} {
		if got := string((<-events).appendJSON(nil)); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	close(src)
	notify()
	if resp, open := <-events; open {
		t.Errorf("after the source closed: %s", resp.appendJSON(nil))
	}
}
