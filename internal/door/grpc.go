package door

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"quartet/internal/clientaddr"
)

// A gRPC call's work takes slots in the same queue as HTTP requests: a unary call's
// handler runs in a slot; a stream's message takes one once it has arrived and holds
// it until the call receives the next message, sends, or returns. The wait for a
// message holds no slot, and neither does a stream's sending.

// Unary runs each unary call's handler in a slot of its client's.
func (d *Door) Unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	client := d.grpcClient(ctx)
	release, err := d.enter(ctx, client)
	if err != nil {
		return nil, grpcRefusal(err)
	}
	defer release()
	return handler(ctx, req)
}

// Stream has each message a stream receives take a slot (queuedStream).
func (d *Door) Stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	qs := &queuedStream{ServerStream: ss, door: d, client: d.grpcClient(ss.Context())}
	defer qs.held.end()
	return handler(srv, qs)
}

// grpcRefusal is the status of a call the queue did not admit: the client has too
// much waiting, or the call ended first.
func grpcRefusal(err error) error {
	if busy, ok := err.(*Busy); ok {
		return status.Error(codes.ResourceExhausted, busy.Error())
	}
	return status.FromContextError(err).Err()
}

// queuedStream is a stream whose received messages take slots.
type queuedStream struct {
	grpc.ServerStream
	door   *Door
	client string
	held   heldSlot // ended when the call returns
}

// RecvMsg gives back the slot the message before took, receives the next message,
// and waits for a slot for it.
func (s *queuedStream) RecvMsg(m any) error {
	s.held.giveBack()
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	release, err := s.door.enter(s.Context(), s.client)
	if err != nil {
		return grpcRefusal(err)
	}
	s.held.hold(release)
	return nil
}

// SendMsg gives back the slot first: like an HTTP handler's first write, sending
// is the end of the work the message received made.
func (s *queuedStream) SendMsg(m any) error {
	s.held.giveBack()
	return s.ServerStream.SendMsg(m)
}

// grpcClient is the client a call counts as in the queue: its peer's address, or,
// from a trusted proxy, the client the proxy names in the forwarded or
// x-forwarded-for metadata.
func (d *Door) grpcClient(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	addr := p.Addr.String()
	if len(d.proxies) > 0 {
		md, _ := metadata.FromIncomingContext(ctx)
		addr = d.proxies.RemoteAddr(addr, md.Get("forwarded"), md.Get("x-forwarded-for"))
	}
	return clientaddr.Of(addr)
}

// heldSlot is a slot kept across calls and given back by whichever comes next: a
// later receive, a send, or the end of the call. Once it has ended, a slot handed
// to it is given back at once, so that one taken late by another goroutine (a
// receive still under way when the handler returned) is not kept.
type heldSlot struct {
	mu      sync.Mutex
	release func() // gives back the slot held; nil when none is
	ended   bool
}

// hold keeps the slot that release gives back, or gives it back at once when h
// has ended.
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

// giveBack gives back the slot held, if any.
func (h *heldSlot) giveBack() {
	h.mu.Lock()
	release := h.release
	h.release = nil
	h.mu.Unlock()
	if release != nil {
		release()
	}
}

// end gives back the slot held, and any handed to h later.
func (h *heldSlot) end() {
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.giveBack()
}
