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
	// Set by NewDoor; the surfaces hand the budgets to what claims them.
	Queue      *Queue  // nil: work runs at once
	Bodies     *Budget // request bodies read ahead of their slot
	Answers    *Budget // answer bytes rendered and not yet written
	Sockets    *Budget // GraphQL WebSockets open
	Operations *Budget // operations active on them
	Batches    *Budget // users of gRPC CreateUsers calls held until the last arrives
	proxies    Proxies // for gRPC's client (HTTP's is named before its door)
	maxBody    int64   // the largest body read ahead; a longer one is the handler's to refuse
}

// NewDoor returns the door l describes, naming the clients of trusted proxies
// by proxies; log (nil: none) gets its refusals.
func NewDoor(l Limits, proxies Proxies, log *slog.Logger) *Door {
	d := &Door{proxies: proxies, maxBody: MaxBodyBytes,
		Bodies:     NewBudget("request body bytes read ahead", l.ClientBodyBytes, l.TotalBodyBytes, log),
		Answers:    NewBudget("answer bytes waiting to be read", l.ClientAnswerBytes, l.TotalAnswerBytes, log),
		Sockets:    NewBudget("WebSocket connections", int64(l.WSSocketsPerClient), int64(l.WSSockets), log),
		Operations: NewBudget("WebSocket operations", int64(l.WSOperationsPerClient), int64(l.WSOperations), log),
		Batches:    NewBudget("bytes of CreateUsers batches", l.BatchClientBytes, l.BatchTotalBytes, log)}
	if l.WorkSlots > 0 {
		d.Queue = NewQueue(l.WorkSlots, cmp.Or(l.ClientSlots, l.WorkSlots), l.ClientWaiting)
	}
	return d
}

// Close writes what the budgets' refusal logs hold back.
func (d *Door) Close() {
	for _, b := range []*Budget{d.Bodies, d.Answers, d.Sockets, d.Operations, d.Batches} {
		b.Close()
	}
}

// Slot waits for a slot for client's work and returns the function that gives
// it back, to call once; or a *Refused, or the context's error.
func (d *Door) Slot(ctx context.Context, client string) (release func(), err error) {
	if d.Queue == nil {
		return func() {}, nil
	}
	release, err = d.Queue.Acquire(ctx, client)
	if errors.Is(err, ErrBusy) {
		return nil, &Refused{client, true, fmt.Sprintf("too many requests waiting from %s: at most %d may wait; try again shortly", client, d.Queue.maxWaiting)}
	}
	return release, err
}

// Stats returns the work running and waiting, and the bytes of request bodies
// read ahead and of answers waiting for their readers.
func (d *Door) Stats() (work Stats, bodyBytes, answerBytes int64) {
	if d.Queue != nil {
		work = d.Queue.Stats()
	}
	return work, d.Bodies.Held(), d.Answers.Held()
}
