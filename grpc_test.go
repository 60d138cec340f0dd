package main

import (
	"fmt"
	"quartet/internal/admission"
	"quartet/internal/testkit"

	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"quartet/internal/jwt"
	"quartet/internal/metrics"
	"quartet/userpb"
)

// syncBuffer is a log sink tests can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testConfig is a configuration on free 127.0.0.1 ports with the demo data and the
// fixed clock.
func testConfig() config {
	return config{httpAddr: "127.0.0.1:0", grpcAddr: "127.0.0.1:0", demo: true, env: "development",
		shutdownTimeout: 5 * time.Second, clock: func() time.Time { return fixedTime }, grpcLimits: defaultGRPCLimits(),
		admission: admission.Defaults(), httpPerClient: defaultHTTPMaxConnsPerClient} // the defaults, as -h shows them
}

// startApp starts the whole service and stops it when the test ends.
func startApp(t *testing.T, cfg config) (*app, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	a, err := start(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.shutdown(); err != nil {
			t.Error(err)
		}
	})
	return a, logs
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func wantCode(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || (msg != "" && st.Message() != msg) {
		t.Errorf("got %v %q, want %v %q", st.Code(), st.Message(), code, msg)
	}
}

func TestGRPCGetUser(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	ctx := t.Context()
	u, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetId() != 2 || u.GetName() != "Bob Smith" || u.GetEmail() != "bob.smith@example.org" || u.GetCreatedAt() != "2024-01-12 14:30:00" {
		t.Errorf("GetUser(2) = %v", u)
	}
	_, err = c.GetUser(ctx, &userpb.GetUserRequest{Id: 99})
	wantCode(t, err, codes.NotFound, "user 99 not found")
	for _, id := range []int32{0, -5} {
		_, err = c.GetUser(ctx, &userpb.GetUserRequest{Id: id})
		wantCode(t, err, codes.InvalidArgument, "user id must be positive")
	}
}

func TestGRPCGetAllUsers(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	stream, err := c.GetAllUsers(t.Context(), &userpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for {
		u, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.GetId())
	}
	if len(ids) != 6 || ids[0] != 1 || ids[5] != 6 {
		t.Errorf("ids %v, want 1..6 in order", ids)
	}
}

// TestGRPCGetAllUsersStopsOnCancel proves the server-side loop ends when the client
// cancels: with a pause of an hour, the call's log line (written when the handler
// returns) can only appear because the cancellation ended the wait.
func TestGRPCGetAllUsersStopsOnCancel(t *testing.T) {
	cfg := testConfig()
	cfg.streamDelay = time.Hour
	a, logs := startApp(t, cfg)
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := c.GetAllUsers(ctx, &userpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	testkit.Eventually(t, func() error {
		if !strings.Contains(logs.String(), "method=/user.UserService/GetAllUsers code=Canceled") {
			return fmt.Errorf("the server-side loop did not end after cancel; log:\n%s", logs)
		}
		return nil
	})
}

func TestGRPCCreateUsers(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	sub := a.store.Subscribe(10, nil, nil)
	defer sub.Close()

	send := func(reqs ...*userpb.CreateUserRequest) (*userpb.CreateUsersResponse, error) {
		stream, err := c.CreateUsers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := stream.Send(r); err != nil {
				break // the server may have failed the call already
			}
		}
		return stream.CloseAndRecv()
	}
	_, err := send(&userpb.CreateUserRequest{Name: "Ok", Email: "ok@example.com"}, &userpb.CreateUserRequest{Name: "Bad", Email: "bad"})
	wantCode(t, err, codes.InvalidArgument, "user 1: invalid input: email must be a valid email address")
	if n := len(a.store.Users()); n != 6 {
		t.Errorf("%d users after a failed call, want 6: nothing of a failed call is stored", n)
	}
	resp, err := send(&userpb.CreateUserRequest{Name: "G1", Email: "g1@example.com"}, &userpb.CreateUserRequest{Name: "G2", Email: "g2@example.com"})
	if err != nil || resp.GetUsersCreated() != 2 {
		t.Fatalf("CreateUsers = %v, %v", resp, err)
	}
	u, ok := a.store.User(8)
	if !ok || u.Name != "G2" || !u.CreatedAt.Equal(fixedTime) {
		t.Errorf("user 8 = %+v", u)
	}
	if got, _ := waiting(sub); len(got) != 2 || got[0].(*User).Name != "G1" || got[1].(*User).Name != "G2" {
		t.Errorf("feed events %+v, want users G1 and G2", got)
	}
	resp, err = send()
	if err != nil || resp.GetUsersCreated() != 0 {
		t.Errorf("empty call = %v, %v", resp, err)
	}
}

func TestGRPCChat(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	stream, err := c.ChatWithUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"hello", "", "ünïcode"} {
		if err := stream.Send(&userpb.ChatMessage{UserName: "me", Message: m}); err != nil {
			t.Fatal(err)
		}
		r, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetUserName() != "Server" || r.GetMessage() != "Echo: "+m || r.GetTimestamp() != "03:04:05" {
			t.Errorf("reply %v", r)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after half-close: %v, want EOF", err)
	}
}

func TestGRPCReflectionOnlyInDevelopment(t *testing.T) {
	for _, env := range []string{"development", "production"} {
		cfg := testConfig()
		cfg.env = env
		a, _ := startApp(t, cfg)
		conn := dialGRPC(t, a.grpcAddr)
		h, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s: health = %v, %v", env, h, err)
		}
		rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
		if err == nil {
			err = rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		}
		if err == nil {
			_, err = rs.Recv()
		}
		if got := status.Code(err); (env == "development") != (got == codes.OK) {
			t.Errorf("%s: reflection answered %v", env, got)
		}
	}
}

func TestGRPCErrorMapping(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Method"}
	call := func(h grpc.UnaryHandler) error {
		_, err := callLog{log: log, calls: &metrics.Table{}, door: admission.NewDoor(admission.Limits{}, admission.Proxies{}, nil)}.unary(t.Context(), nil, info, h)
		return err
	}
	wantCode(t, call(func(context.Context, any) (any, error) { panic("boom") }), codes.Internal, "internal server error")
	wantCode(t, call(func(context.Context, any) (any, error) { return nil, errors.New("disk on fire") }), codes.Internal, "internal server error")
	wantCode(t, call(func(context.Context, any) (any, error) { return nil, status.Error(codes.Aborted, "as is") }), codes.Aborted, "as is")
	wantCode(t, call(func(context.Context, any) (any, error) { return nil, notFound("thing 3 not found") }), codes.NotFound, "thing 3 not found")
	wantCode(t, call(func(context.Context, any) (any, error) { return nil, &Error{Kind: KindForbidden, Message: "no"} }), codes.PermissionDenied, "no")
	stream := callLog{log: log, calls: &metrics.Table{}, door: admission.NewDoor(admission.Limits{}, admission.Proxies{}, nil)}.stream
	err := stream(nil, &streamWithContext{ctx: t.Context()}, &grpc.StreamServerInfo{FullMethod: "/test/Stream"}, func(any, grpc.ServerStream) error { panic("boom") })
	wantCode(t, err, codes.Internal, "internal server error")
}

const testSecret = "0123456789abcdef0123456789abcdef" // 32 bytes: the RFC 7518 minimum

func testToken(t *testing.T, scope string) string {
	t.Helper()
	tok, err := jwt.SignHS256(jwt.Config{Secret: []byte(testSecret)}, "alice", scope, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGRPCAuth(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	a, logs := startApp(t, cfg)
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	withToken := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	}
	_, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.Unauthenticated, "token missing")
	_, err = c.GetUser(withToken("not.a.token"), &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.Unauthenticated, "")
	if _, err := c.GetUser(withToken(testToken(t, "")), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("GetUser with a valid token: %v", err)
	}
	create := func(ctx context.Context) error {
		stream, err := c.CreateUsers(ctx)
		if err != nil {
			return err
		}
		stream.Send(&userpb.CreateUserRequest{Name: "A", Email: "a@example.com"})
		_, err = stream.CloseAndRecv()
		return err
	}
	wantCode(t, create(t.Context()), codes.Unauthenticated, "token missing")
	wantCode(t, create(withToken(testToken(t, "read"))), codes.PermissionDenied, "the token's scope does not include write")
	if err := create(withToken(testToken(t, "read write"))); err != nil {
		t.Errorf("CreateUsers with write scope: %v", err)
	}
	// GetAllUsers streams what GetUser answers: it needs a token too.
	allUsers := func(ctx context.Context) error {
		stream, err := c.GetAllUsers(ctx, &userpb.Empty{})
		if err == nil {
			_, err = stream.Recv()
		}
		return err
	}
	wantCode(t, allUsers(t.Context()), codes.Unauthenticated, "token missing")
	if err := allUsers(withToken(testToken(t, ""))); err != nil {
		t.Errorf("GetAllUsers with a valid token: %v", err)
	}
	// Chat serves no stored data and stays open.
	chat, err := c.ChatWithUsers(t.Context())
	if err == nil {
		err = chat.Send(&userpb.ChatMessage{UserName: "bob", Message: "hi"})
	}
	if err == nil {
		_, err = chat.Recv()
	}
	if err != nil {
		t.Errorf("ChatWithUsers without a token: %v", err)
	}
	for _, m := range []string{"GetUser", "CreateUsers"} {
		if !strings.Contains(logs.String(), "method=/user.UserService/"+m+" code=OK") ||
			!regexp.MustCompile(`method=/user.UserService/`+m+` code=OK .* sub=alice`).MatchString(logs.String()) {
			t.Errorf("no %s log line naming the caller:\n%s", m, logs)
		}
	}
}

// rawCodec sends and receives messages as the bytes they are, so a test can send what
// no generated client would: a malformed message. It takes the proto codec's name, so
// the server decodes what it sends as protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// TestGRPCMalformedMessageIsInvalidArgument: a message that does not
// decode (invalid UTF-8 in a string field, a field cut short) is the client's fault,
// answered InvalidArgument on unary calls and streams alike, never Internal.
func TestGRPCMalformedMessageIsInvalidArgument(t *testing.T) {
	a, _ := startApp(t, testConfig())
	conn := dialGRPC(t, a.grpcAddr)
	badUTF8 := []byte{0x0a, 0x01, 0xff} // field 1 (a string in each message below): "\xff"
	truncated := []byte{0x08}           // field 1, a varint without its value
	validUser := []byte{0x0a, 0x01, 'A', 0x12, 0x07, 'a', '@', 'b', '.', 'c', 'o', 'm'}
	raw := grpc.ForceCodecV2(rawCodec{})
	unary := func(method string, in []byte) error {
		var out []byte
		return conn.Invoke(t.Context(), method, &in, &out, raw)
	}
	// send opens a stream, sends ins, and returns the call's status.
	send := func(method string, ins ...[]byte) error {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, raw)
		if err != nil {
			return err
		}
		for _, in := range ins {
			if err := s.SendMsg(&in); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
		var out []byte
		for {
			if err := s.RecvMsg(&out); err != nil {
				return err
			}
		}
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"health Check, invalid UTF-8", unary("/grpc.health.v1.Health/Check", badUTF8)},
		{"GetUser, truncated", unary("/user.UserService/GetUser", truncated)},
		{"CreateUsers, invalid UTF-8", send("/user.UserService/CreateUsers", validUser, badUTF8)},
		{"ChatWithUsers, invalid UTF-8", send("/user.UserService/ChatWithUsers", badUTF8)},
		{"ServerReflectionInfo, invalid UTF-8", send("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", badUTF8)},
	} {
		want := "malformed message: string field contains invalid UTF-8"
		if strings.Contains(c.name, "truncated") {
			want = "malformed message: proto: cannot parse invalid wire-format data"
		}
		if st, _ := status.FromError(c.err); st.Code() != codes.InvalidArgument || strings.ReplaceAll(st.Message(), "\u00a0", " ") != want {
			t.Errorf("%s: %v %q, want InvalidArgument %q", c.name, st.Code(), st.Message(), want)
		}
	}
	if n := len(a.store.Users()); n != 6 {
		t.Errorf("%d users, want the demo's 6: nothing of a refused call is stored", n)
	}
	if resp, err := userpb.NewUserServiceClient(conn).GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil || resp.GetId() != 1 {
		t.Errorf("a well-formed call after the malformed ones: %v, %v", resp, err)
	}
}

// TestGRPCAllUsersReadsPages: GetAllUsers reads the store a page at a time by id, so a
// deletion behind the call shifts nothing (user 3 still comes), one ahead of it is
// seen, and a user added meanwhile comes at the end.
func TestGRPCAllUsersReadsPages(t *testing.T) {
	store := NewStore()
	if err := store.Load(DemoDataset()); err != nil {
		t.Fatal(err)
	}
	svc := &userService{store: store, limits: grpcLimits{allUsersPage: 2}}
	var ids []int64
	for u := range svc.allUsers() {
		ids = append(ids, u.ID)
		if u.ID == 1 {
			for _, id := range []int64{1, 4} {
				if ok, err := store.DeleteUser(id); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			if _, err := store.CreateUser("Late", "late@example.com"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []int64{1, 2, 3, 5, 6, 7}; !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if got := store.UsersAfter(7, 5); len(got) != 0 {
		t.Errorf("UsersAfter(last id) = %v, want none", got)
	}
}
