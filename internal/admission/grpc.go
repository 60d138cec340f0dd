package admission

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Call waits for a slot for a unary gRPC call that came on conn (nil: unknown),
// and returns the function that gives it back; a refusal is a gRPC status.
func (d *Door) Call(ctx context.Context, conn *Conn) (release func(), err error) {
	client := ""
	if conn != nil && !d.proxies.Any() {
		client = conn.client // named once, when it was accepted
	} else {
		client = d.ClientOfCall(ctx)
	}
	if release, err = d.Slot(ctx, client); err != nil {
		return nil, grpcRefusal(err)
	}
	return release, nil
}

// Stream has each message a stream receives take a slot, held until the call
// receives again, sends or returns.
func (d *Door) Stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	qs := &queuedStream{ServerStream: ss, door: d, client: d.ClientOfCall(ss.Context())}
	defer qs.held.end()
	return handler(srv, qs)
}

// grpcRefusal is the status of a call the queue did not admit.
func grpcRefusal(err error) error {
	if refused, ok := err.(*Refused); ok {
		return status.Error(codes.ResourceExhausted, refused.Error())
	}
	return status.FromContextError(err).Err()
}

type queuedStream struct {
	grpc.ServerStream
	door   *Door
	client string
	held   heldSlot // ended when the call returns
}

// RecvMsg gives back the slot the message before took, receives the next, and
// waits for a slot for it.
func (s *queuedStream) RecvMsg(m any) error {
	s.held.giveBack()
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	release, err := s.door.Slot(s.Context(), s.client)
	if err != nil {
		return grpcRefusal(err)
	}
	s.held.hold(release)
	return nil
}

// SendMsg gives back the slot first: sending ends the work, as an HTTP answer does.
func (s *queuedStream) SendMsg(m any) error {
	s.held.giveBack()
	return s.ServerStream.SendMsg(m)
}

// ClientOfCall is a gRPC call's client: its peer, or the client a trusted proxy
// names.
func (d *Door) ClientOfCall(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	addr := p.Addr.String()
	if d.proxies.Any() {
		md, _ := metadata.FromIncomingContext(ctx)
		addr = d.proxies.RemoteAddr(addr, md.Get)
	}
	return Of(addr)
}

// heldSlot is a slot given back by whichever comes next: a receive, a send, or the
// call's end, after which a slot handed to it (by a late receive) goes back at once.
type heldSlot struct {
	mu      sync.Mutex
	release func() // gives back the slot held; nil when none is
	ended   bool
}

func (h *heldSlot) hold(release func()) {
	h.mu.Lock()
	if !h.ended {
		h.release, release = release, nil
	}
	h.mu.Unlock()
	if release != nil {
		release()
	}
}

func (h *heldSlot) giveBack() {
	h.mu.Lock()
	release := h.release
	h.release = nil
	h.mu.Unlock()
	if release != nil {
		release()
	}
}

func (h *heldSlot) end() {
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.giveBack()
}
