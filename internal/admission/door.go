package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Door is where every piece of work enters the service (an HTTP request, a gRPC
// call or stream message, a GraphQL WebSocket operation): it takes a slot of the
// queue for its client before the work runs. It guarantees:
//   - a request body is read before its request waits, within the bodies budget:
//     a client sending slowly holds no slot;
//   - an HTTP request gives its slot back at its answer's first byte (or a hijack),
//     a gRPC stream message when the call next receives or sends: a client reading
//     slowly holds no slot;
//   - an answer's bytes, from when they are rendered until the connection has
//     taken them, count against the answers budget: a client that does not read
//     holds at most its share of memory, and is refused more;
//   - past the work one client may have waiting, it is refused at once.
//
// Refusals are *Refused, which the caller answers in its surface's format.
type Door struct {
	queue   *Queue  // nil: work runs at once
	bodies  *Budget // request bodies read ahead of their slot
	answers *Budget // answer bytes rendered and not yet written
	sockets *Budget // GraphQL WebSockets open
	ops     *Budget // operations active on them
	batches *Budget // users of gRPC CreateUsers calls held until the last arrives
	proxies Proxies // for gRPC's client (HTTP's is named before its door)
	maxBody int64   // the largest body read ahead; a longer one is the handler's to refuse
}

// NewDoor returns the door l describes, naming the clients of trusted proxies
// by proxies; log (nil: none) gets its refusals.
func NewDoor(l Limits, proxies Proxies, log *slog.Logger) *Door {
	d := &Door{proxies: proxies, maxBody: MaxBodyBytes,
		bodies:  NewBudget("request body bytes read ahead", l.ClientBodyBytes, l.TotalBodyBytes, log),
		answers: NewBudget("answer bytes waiting to be read", l.ClientAnswerBytes, l.TotalAnswerBytes, log),
		sockets: NewBudget("WebSocket connections", int64(l.WSSocketsPerClient), int64(l.WSSockets), log),
		ops:     NewBudget("WebSocket operations", int64(l.WSOperationsPerClient), int64(l.WSOperations), log),
		batches: NewBudget("bytes of CreateUsers batches", l.BatchClientBytes, l.BatchTotalBytes, log)}
	if l.WorkSlots > 0 {
		d.queue = NewQueue(l.WorkSlots, cmp.Or(l.ClientSlots, l.WorkSlots), l.ClientWaiting)
	}
	return d
}

// WebSockets returns the budgets of GraphQL WebSockets and of their operations.
func (d *Door) WebSockets() (sockets, operations *Budget) { return d.sockets, d.ops }

// Bodies returns the budget of request bodies read ahead of their work.
func (d *Door) Bodies() *Budget { return d.bodies }

// Answers returns the budget of answers held outside a request's AnswerWriter.
func (d *Door) Answers() *Budget { return d.answers }

// Batches returns the budget of what gRPC CreateUsers calls hold.
func (d *Door) Batches() *Budget { return d.batches }

// Close writes what the budgets' refusal logs hold back.
func (d *Door) Close() {
	for _, b := range []*Budget{d.bodies, d.answers, d.sockets, d.ops, d.batches} {
		b.Close()
	}
}

// Slot waits for a slot for client's work and returns the function that gives
// it back, to call once; or a *Refused, or the context's error.
func (d *Door) Slot(ctx context.Context, client string) (release func(), err error) {
	if d.queue == nil {
		return func() {}, nil
	}
	release, err = d.queue.Acquire(ctx, client)
	if errors.Is(err, ErrBusy) {
		return nil, &Refused{client, true, fmt.Sprintf("too many requests waiting from %s: at most %d may wait; try again shortly", client, d.queue.maxWaiting)}
	}
	return release, err
}

// Queue returns the door's queue; nil: work runs at once.
func (d *Door) Queue() *Queue { return d.queue }

// Stats returns the work running and waiting, and the bytes of request bodies
// read ahead and of answers waiting for their readers.
func (d *Door) Stats() (work Stats, bodyBytes, answerBytes int64) {
	if d.queue != nil {
		work = d.queue.Stats()
	}
	return work, d.bodies.Held(), d.answers.Held()
}
