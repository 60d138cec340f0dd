package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	// The gzip compressor, which @grpc/grpc-js and others offer; the decompressed
	// message is still held to maxMessageBytes.
	_ "google.golang.org/grpc/encoding/gzip"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"quartet/internal/accesslog"
	"quartet/internal/admission"
	"quartet/internal/grpcweb"
	"quartet/internal/metrics"
	"quartet/userpb"
)

// The gRPC surface: user.UserService (docs/grpc.md) over the shared store.

// grpcLimits bounds what gRPC clients may claim of the service. What clients have
// sent and the service has not handled yet is at worst maxConns × maxStreams ×
// (streamWindowBytes + maxMessageBytes): 250 MiB with the defaults.
type grpcLimits struct {
	maxConns          int           // connections open at once; more wait to be accepted
	maxConnsPerClient int           // of one client address; 0: no bound
	firstCallTimeout  time.Duration // a connection without a call this long after it is accepted is closed
	maxStreams        int           // calls at once on one connection
	maxMessageBytes   int           // one received message; more is ResourceExhausted
	maxHeaderBytes    int           // a call's metadata (HTTP/2 header list)
	streamWindowBytes int32         // data a client may send on one call (connWindowBytes: on all of a connection's) before the service reads it
	connWindowBytes   int32
	handshakeTimeout  time.Duration // for the HTTP/2 handshake of a new connection
	maxIdle           time.Duration // a connection without calls for this long is closed
	pingAfter         time.Duration // the server pings a connection silent this long, and closes it
	pingTimeout       time.Duration // if the answer takes longer than this
	minClientPing     time.Duration // a client pinging more often is told "too_many_pings" and cut off

	// A CreateUsers call is all or nothing, so its users wait in memory until the
	// client has sent them all (userCost counts their bytes).
	createUsersMax      int           // users in one call
	createUsersMaxBytes int64         // bytes of users in one call
	createUsersTime     time.Duration // from the call's start to its last message

	allUsersPage int           // users a GetAllUsers call reads from the store at a time
	webCallTime  time.Duration // a gRPC-Web call's, CreateUsers' too, from its request's arrival: its status fits in the HTTP write timeout
}

// defaultGRPCLimits are the bounds a configuration gets unless it sets its own. A user
// is under 1 KiB on the wire, so maxMessageBytes stays far below grpc-go's 4 MiB; the
// windows are fixed because no call here needs bulk throughput from the client.
func defaultGRPCLimits() grpcLimits {
	return grpcLimits{
		maxConns: 100,
		// A channel multiplexes its calls over one connection: a quarter for one
		// address leaves room for at least three others.
		maxConnsPerClient: 25,
		// Clients connect to call, and call at once; a connection made in advance
		// is kept a while, yet one that makes no call holds its slot seconds.
		firstCallTimeout: 10 * time.Second,
		// Fewer than HTTP/2's 100, since each call may hold 80 KiB of what the
		// client sent; a client past it waits, not fails.
		maxStreams:        32,
		maxMessageBytes:   16 << 10,
		maxHeaderBytes:    64 << 10, // as the HTTP server's; grpc-go's own is 16 MiB
		streamWindowBytes: 64 << 10, // HTTP/2's smallest; grpc-go ignores less
		connWindowBytes:   1 << 20,
		handshakeTimeout:  10 * time.Second,
		maxIdle:           5 * time.Minute,
		pingAfter:         2 * time.Minute,
		pingTimeout:       20 * time.Second,
		minClientPing:     5 * time.Second, // half the 10 s grpc-go clients may ping at: their timers wobble

		// 10,000 users take about 2 MB.
		createUsersMax:      10_000,
		createUsersMaxBytes: 4 << 20,
		createUsersTime:     time.Minute,

		allUsersPage: 256, // 2 KiB of pointers per call; with the pause, 25 s of sending
		webCallTime:  httpWriteTimeout - 5*time.Second,
	}
}

// webHandler serves gRPC-Web with srv. A call's body may hold what a native call
// may send before the service reads it, read within the door's budget of bodies.
func (l grpcLimits) webHandler(srv *grpc.Server, door *admission.Door) http.Handler {
	return grpcweb.Handler(srv, grpcweb.Limits{CallBytes: int64(l.streamWindowBytes), CallTime: l.webCallTime, Bodies: door.Bodies,
		ClientOf: func(r *http.Request) string { return admission.Of(r.RemoteAddr) }})
}

// serverOptions are the grpc-go settings that enforce l.
func (l grpcLimits) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(l.maxMessageBytes),
		grpc.MaxHeaderListSize(uint32(l.maxHeaderBytes)),
		grpc.MaxConcurrentStreams(uint32(l.maxStreams)),
		grpc.InitialWindowSize(l.streamWindowBytes),
		grpc.InitialConnWindowSize(l.connWindowBytes),
		grpc.ConnectionTimeout(l.handshakeTimeout),
		grpc.InTapHandle(l.createUsersDeadline),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.maxIdle, Time: l.pingAfter, Timeout: l.pingTimeout}),
		// maxIdle closes idle connections whatever their pings, so pings between
		// calls are tolerated.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.minClientPing, PermitWithoutStream: true}),
	}
}

// userService implements userpb.UserServiceServer.
type userService struct {
	userpb.UnimplementedUserServiceServer
	store       *Store
	streamDelay time.Duration
	limits      grpcLimits
	waiting     *admission.Budget            // bytes of users that CreateUsers calls hold
	clientOf    func(context.Context) string // the client a call counts as
}

// grpcServer is the gRPC server with its user service and its health service, which
// shutdown turns NOT_SERVING.
type grpcServer struct {
	*grpc.Server
	users  *userService
	health *healthService
}

// newGRPCServer returns a gRPC server with the user service, the health service and,
// when reflect is set, server reflection. entrance admits its calls'
// work through the queue; conns (nil: none) is told of each call (callLog).
func newGRPCServer(store *Store, log *slog.Logger, streamDelay time.Duration, auth *authenticator, reflect bool, limits grpcLimits, m *metrics.Set, entrance *admission.Door, conns *admission.Listener) *grpcServer {
	calls := m.Table("grpc", func(string) string { return "grpc" }, func(code int) string { return codes.Code(code).String() })
	first := callLog{log: log, calls: calls, identities: auth != nil, conns: conns, door: entrance}
	unary, stream := []grpc.UnaryServerInterceptor{first.unary}, []grpc.StreamServerInterceptor{first.stream}
	if auth != nil { // without it, one interceptor: gRPC then builds no chain per call
		unary, stream = append(unary, auth.unaryInterceptor), append(stream, auth.streamInterceptor)
	}
	srv := grpc.NewServer(append(limits.serverOptions(),
		grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...),
		grpc.UnknownServiceHandler(unknownMethod), grpc.ForceServerCodecV2(strictCodec{encoding.GetCodecV2(protocodec.Name)}))...)
	users := &userService{store: store, streamDelay: streamDelay, limits: limits, waiting: entrance.Batches, clientOf: entrance.ClientOfCall}
	reg := strictRegistrar{srv}
	userpb.RegisterUserServiceServer(reg, users)
	hs := &healthService{Server: health.NewServer(), stopping: make(chan struct{})}
	hs.SetServingStatus(userpb.UserService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(reg, hs)
	if reflect {
		reflection.Register(reg)
	}
	calls.Known = map[string]bool{} // a method a client makes up takes no series
	for service, info := range srv.GetServiceInfo() {
		for _, method := range info.Methods {
			calls.Known["/"+service+"/"+method.Name] = true
		}
	}
	return &grpcServer{Server: srv, users: users, health: hs}
}

// unknownMethod answers Unimplemented as grpc-go would, but after the interceptors,
// so the call is logged and counted.
func unknownMethod(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}

// healthService is grpc.health.v1.Health: every service SERVING until shutdown, then
// NOT_SERVING. Watch is its own because grpc-go's never ends, and an open Watch would
// hold GracefulStop until -shutdown-timeout; this one ends after telling NOT_SERVING.
type healthService struct {
	*health.Server
	stopping chan struct{} // closed by shutdown
	stopOnce sync.Once
}

// shutdown turns every service NOT_SERVING for good and ends every Watch: call it
// before GracefulStop.
func (h *healthService) shutdown() {
	h.stopOnce.Do(func() {
		h.Server.Shutdown()
		close(h.stopping)
	})
}

// Watch sends the service's status, then NOT_SERVING at shutdown, and ends; an
// unknown service's call stays open until the client ends it or shutdown.
func (h *healthService) Watch(in *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx := stream.Context()
	st := healthpb.HealthCheckResponse_SERVICE_UNKNOWN
	if r, err := h.Check(ctx, in); err == nil {
		st = r.GetStatus()
	}
	if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-h.stopping:
	}
	if st == healthpb.HealthCheckResponse_SERVING {
		return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
	}
	return nil
}

// strictRegistrar registers services made strict (strictService).
type strictRegistrar struct{ *grpc.Server }

func (r strictRegistrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.Server.RegisterService(strictService(desc), impl)
}

// strictService returns a copy of desc whose calls answer a request message that does
// not decode (invalid UTF-8, a field cut short) with InvalidArgument, where grpc-go
// would answer Internal before the service saw the error: the service hands the codec
// a receiving box, in which strictCodec reports the failure instead.
func strictService(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i, m := range d.Methods {
		d.Methods[i].Handler = func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			return m.Handler(srv, ctx, func(req any) error { return receive(dec, req) }, in)
		}
	}
	d.Streams = slices.Clone(desc.Streams)
	for i, s := range d.Streams {
		d.Streams[i].Handler = func(srv any, ss grpc.ServerStream) error {
			return s.Handler(srv, strictStream{ss})
		}
	}
	return &d
}

type strictStream struct{ grpc.ServerStream }

func (s strictStream) RecvMsg(m any) error { return receive(s.ServerStream.RecvMsg, m) }

// receiving is a request message on its way through strictCodec, with the error of
// decoding it.
type receiving struct {
	msg any
	err error
}

// receive reads one message into m with recv; one that does not decode is
// InvalidArgument.
func receive(recv func(any) error, m any) error {
	r := &receiving{msg: m}
	if err := recv(r); err != nil {
		return err
	}
	if r.err != nil {
		return status.Errorf(codes.InvalidArgument, "malformed message: %v", r.err)
	}
	return nil
}

// strictCodec is grpc-go's proto codec, except that it decodes into a receiving box
// and keeps the error there.
type strictCodec struct{ encoding.CodecV2 }

func (c strictCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*receiving); ok {
		r.err = c.CodecV2.Unmarshal(data, r.msg)
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// GetUser returns one user (docs/grpc.md, docs/errors.md).
func (s *userService) GetUser(ctx context.Context, req *userpb.GetUserRequest) (*userpb.UserResponse, error) {
	if req.GetId() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "user id must be positive")
	}
	u, ok := s.store.User(int64(req.GetId()))
	if !ok {
		return nil, userNotFound(int64(req.GetId()))
	}
	return userMessage(u), nil
}

// GetAllUsers streams every user in id order with a pause after each (docs/grpc.md);
// a cancelled call stops at once.
func (s *userService) GetAllUsers(_ *userpb.Empty, stream grpc.ServerStreamingServer[userpb.UserResponse]) error {
	ctx := stream.Context()
	pause := time.NewTimer(0)
	defer pause.Stop()
	for u := range s.allUsers() {
		if err := stream.Send(userMessage(u)); err != nil {
			return err
		}
		if s.streamDelay > 0 {
			pause.Reset(s.streamDelay)
			select {
			case <-ctx.Done():
			case <-pause.C:
			}
		}
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

// allUsers yields every user in id order, reading the store a page at a time so that
// many calls at once do not each hold a copy of the whole list.
func (s *userService) allUsers() iter.Seq[*User] {
	return func(yield func(*User) bool) {
		for after := int64(0); ; {
			page := s.store.UsersAfter(after, s.limits.allUsersPage)
			if len(page) == 0 {
				return
			}
			for _, u := range page {
				if !yield(u) {
					return
				}
			}
			after = page[len(page)-1].ID
		}
	}
}

// CreateUsers stores every user the client sent, all at once when the client has
// finished, or none if any is invalid or the call breaks a bound (docs/grpc.md).
func (s *userService) CreateUsers(stream grpc.ClientStreamingServer[userpb.CreateUserRequest, userpb.CreateUsersResponse]) error {
	client := s.clientOf(stream.Context())
	batch, held, err := s.receiveUsers(stream, client)
	defer s.waiting.Release(client, held)
	if err != nil {
		return err
	}
	users, err := s.store.CreateUsers(batch)
	if err != nil {
		return err
	}
	return stream.SendAndClose(&userpb.CreateUsersResponse{UsersCreated: int32(len(users))})
}

// createUsersDeadline is grpc-go's tap handle: it gives a CreateUsers call's stream
// context its time limit, the only way to end a Recv waiting for a client that sends
// nothing. Recv then fails, and grpc-go answers DeadlineExceeded as for a client's
// own deadline; receiving stays in the handler's goroutine, so nothing receives after
// the handler returned, and what it held is given back before the client is answered.
// grpc-go cancels the parent when the call ends, which stops the timer, so cancel is
// not needed.
func (l grpcLimits) createUsersDeadline(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != userpb.UserService_CreateUsers_FullMethodName {
		return ctx, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.createUsersTime)
	_ = cancel
	return ctx, nil
}

// receiveUsers receives a CreateUsers call's users until the client has sent them all,
// within the call's bounds; held is what it claimed of s.waiting, also on failure.
func (s *userService) receiveUsers(stream grpc.ClientStreamingServer[userpb.CreateUserRequest, userpb.CreateUsersResponse], client string) (batch []NewUser, held int64, err error) {
	l := s.limits
	for {
		req, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return batch, held, nil
		case err != nil:
			return batch, held, err
		case len(batch) == l.createUsersMax:
			return batch, held, status.Errorf(codes.ResourceExhausted, "at most %d users per CreateUsers call", l.createUsersMax)
		}
		if _, _, err := validateUser(req.GetName(), req.GetEmail()); err != nil {
			return batch, held, &Error{Kind: KindInvalid, Message: fmt.Sprintf("user %d: %s", len(batch), asError(err).Message)}
		}
		cost := userCost(req)
		if held+cost > l.createUsersMaxBytes {
			return batch, held, status.Errorf(codes.ResourceExhausted, "at most %d bytes of users per CreateUsers call", l.createUsersMaxBytes)
		}
		if err := s.waiting.Claim(client, cost); err != nil {
			return batch, held, status.Error(codes.ResourceExhausted, err.Error())
		}
		held += cost
		batch = append(batch, NewUser{Name: req.GetName(), Email: req.GetEmail()})
	}
}

// userCost is what one waiting user holds: its texts, and its slot in the batch (two
// string headers, and as much again that append may leave spare).
func userCost(req *userpb.CreateUserRequest) int64 {
	return int64(len(req.GetName()) + len(req.GetEmail()) + 64)
}

// ChatWithUsers answers each message with an echo from "Server" (docs/grpc.md).
func (s *userService) ChatWithUsers(stream grpc.BidiStreamingServer[userpb.ChatMessage, userpb.ChatMessage]) error {
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&userpb.ChatMessage{UserName: "Server", Message: "Echo: " + in.GetMessage(), Timestamp: s.store.now().Format(time.TimeOnly)}); err != nil {
			return err
		}
	}
}

func userMessage(u *User) *userpb.UserResponse {
	// The store holds no id past maxID.
	return &userpb.UserResponse{Id: int32(u.ID), Name: u.Name, Email: u.Email, CreatedAt: u.CreatedAt.UTC().Format(time.DateTime)}
}

// grpcError turns a handler's error into a status: a status error passes unchanged, a
// domain error takes its Kind's code, anything else becomes Internal with a generic
// message while the detail goes to the log.
func grpcError(log *slog.Logger, method string, err error) error {
	if _, ok := status.FromError(err); ok { // nil too
		return err
	}
	var e *Error // here, not above: errors.As moves it to the heap
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case errors.As(err, &e) && e.Kind != KindInternal:
		return status.Error(kindCodes[e.Kind].grpc, e.Message)
	}
	log.Error("grpc internal error", "method", method, "error", err)
	return status.Error(codes.Internal, "internal server error")
}

// callLog is every call's first interceptor, unary or stream. It tells conns (nil:
// none) when the call begins and ends, for its first-call deadline and its shedding of
// idle connections: a map lookup a call, where a stats.Handler would cost an event per
// step. It answers a panic or a handler's error as a status (grpcError), counts the
// call and logs a line for it; with identities (auth on) it gives the call a caller
// for authentication to name in that line. It takes the call's slots at the door
// too (a stream's, one per message), before authentication, whose checks then run
// in them: one interceptor fewer is a closure fewer on every call.
type callLog struct {
	log        *slog.Logger
	calls      *metrics.Table
	identities bool
	conns      *admission.Listener
	door       *admission.Door
}

// around runs one call of method; run is the rest of the chain, given the call's
// context and the connection it came on (nil: unknown).
func (l callLog) around(ctx context.Context, method string, run func(context.Context, *admission.Conn) error) (err error) {
	var conn *admission.Conn // nil does nothing
	if l.conns != nil {
		if p, ok := peer.FromContext(ctx); ok {
			conn = l.conns.Find(p.LocalAddr, p.Addr)
		}
		conn.Begin()
		defer conn.End()
	}
	start := time.Now()
	l.calls.Start()
	var who *caller
	if l.identities {
		ctx, who = withCaller(ctx)
	}
	defer func() {
		if v := recover(); v != nil {
			l.log.Error("panic in grpc call", "method", method, "panic", v)
			err = status.Error(codes.Internal, "internal server error")
		}
		end := time.Now()
		d, code := end.Sub(start), status.Code(err)
		l.calls.Done(method, int(code), d)
		// The handler itself, as for HTTP's line: no caller's program counter,
		// which Logger looks up although no source is printed.
		if h := l.log.Handler(); h.Enabled(ctx, slog.LevelInfo) {
			line := slog.NewRecord(end, slog.LevelInfo, "grpc", 0)
			line.AddAttrs(slog.String("method", method), slog.String("code", code.String()), slog.Duration("duration", d))
			line.AddAttrs(subjectAttrs(who)...)
			line.AddAttrs(accesslog.TraceAttrs(metadata.ValueFromIncomingContext(ctx, "traceparent"))...)
			h.Handle(ctx, line)
		}
	}()
	return grpcError(l.log, method, run(ctx, conn))
}

func (l callLog) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	err = l.around(ctx, info.FullMethod, func(ctx context.Context, conn *admission.Conn) error {
		release, err := l.door.Call(ctx, conn)
		if err != nil {
			return err
		}
		defer release()
		resp, err = handler(ctx, req)
		return err
	})
	return resp, err
}

func (l callLog) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return l.around(ss.Context(), info.FullMethod, func(ctx context.Context, _ *admission.Conn) error {
		if l.identities {
			ss = &streamWithContext{ServerStream: ss, ctx: ctx}
		}
		return l.door.Stream(srv, ss, info, handler)
	})
}

type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *streamWithContext) Context() context.Context { return s.ctx }

// grpcAccess is what a user service method needs beyond the read rule; the health and
// reflection services are open. GetAllUsers streams what GetUser answers, so it
// needs the same.
var grpcAccess = map[string]access{
	userpb.UserService_GetUser_FullMethodName:     accessToken,
	userpb.UserService_GetAllUsers_FullMethodName: accessToken,
	userpb.UserService_CreateUsers_FullMethodName: accessWrite,
}

var userServicePrefix = "/" + userpb.UserService_ServiceDesc.ServiceName + "/"

func (a *authenticator) checkGRPC(ctx context.Context, method string) error {
	need := grpcAccess[method]
	if need == accessOpen && strings.HasPrefix(method, userServicePrefix) {
		need = a.readAccess()
	}
	if a == nil || need == accessOpen {
		return nil
	}
	authorization, err := oneAuthorization(metadata.ValueFromIncomingContext(ctx, "authorization"), "more than one authorization value")
	if err == nil {
		_, err = a.authorize(ctx, authorization, need)
	}
	return err
}

func (a *authenticator) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := a.checkGRPC(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a *authenticator) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := a.checkGRPC(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
