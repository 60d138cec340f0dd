// Package door is where every piece of work enters the service (an HTTP request, a
// gRPC call or stream message, a GraphQL WebSocket operation): it takes a slot of
// one fair queue (fairqueue) for its client before it runs. It guarantees:
//   - a request body is read before its request waits, within a per-client and a
//     total byte budget: a client sending slowly holds no slot;
//   - an HTTP request gives its slot back at its answer's first byte (or a hijack),
//     a gRPC stream message when the call next receives or sends: a client reading
//     slowly holds no slot;
//   - past the work one client may have waiting, it is refused at once with a *Busy,
//     which the caller answers in its surface's format.
package door

import (
	"context"
	"errors"
	"fmt"

	"quartet/internal/clientaddr"
	"quartet/internal/fairqueue"
)

// Door admits work through a queue. A nil *Door admits everything at once.
type Door struct {
	queue  *fairqueue.Queue
	bodies *fairqueue.Bytes
	o      Options
}

// Options configure a Door.
type Options struct {
	Waiting         int                // the queue's per-client waiting bound, for messages
	ClientBodyBytes int64              // body bytes one client may hold read ahead
	TotalBodyBytes  int64              // body bytes all clients may hold read ahead
	MaxBodyBytes    int64              // the largest body read ahead; a longer one is the handler's to refuse
	Proxies         clientaddr.Proxies // trusted proxies, for gRPC's client (HTTP's is rewritten before)
}

// New returns a door onto q.
func New(q *fairqueue.Queue, o Options) *Door {
	return &Door{queue: q, bodies: fairqueue.NewBytes(o.ClientBodyBytes, o.TotalBodyBytes), o: o}
}

// Busy refuses work of a client with as much waiting as it may, or bodies past
// their budget.
type Busy struct {
	Client string
	reason string
}

func (e *Busy) Error() string { return e.reason }

// enter waits for a slot for client, turning the queue's refusal into a *Busy.
func (d *Door) enter(ctx context.Context, client string) (release func(), err error) {
	release, err = d.queue.Acquire(ctx, client)
	if errors.Is(err, fairqueue.ErrBusy) {
		return nil, &Busy{client, fmt.Sprintf("too many requests waiting from %s: at most %d may wait; try again shortly", client, d.o.Waiting)}
	}
	return release, err
}

// Work runs work (a WebSocket operation's set-up) in a slot of client's, or
// returns a *Busy or the context's error.
func (d *Door) Work(ctx context.Context, client string, work func()) error {
	if d == nil {
		work()
		return nil
	}
	release, err := d.enter(ctx, client)
	if err != nil {
		return err
	}
	defer release()
	work()
	return nil
}

// Stats is the queue's view of the moment and the body bytes read ahead.
type Stats struct {
	fairqueue.Stats
	BodyBytes int64
}

// Stats returns what the door holds now.
func (d *Door) Stats() Stats {
	return Stats{d.queue.Stats(), d.bodies.Held()}
}
