package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"quartet/userpb"
)

// What gRPC clients expect of a service besides its own methods: gzip
// and per-service health.

// TestGRPCGzip calls every kind of method with a client that compresses what it sends
// (as @grpc/grpc-js with 'grpc.default_compression_algorithm' does), and checks that
// a small message that inflates past the message bound is refused, not unpacked.
func TestGRPCGzip(t *testing.T) {
	a, _ := startApp(t, testConfig())
	// The name, not grpc's gzip package: importing that here would register the
	// compressor for the server too, and the test could not fail.
	conn, err := grpc.NewClient(a.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.UseCompressor("gzip")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := userpb.NewUserServiceClient(conn)
	ctx := t.Context()

	u, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 2})
	if err != nil || u.GetName() != "Bob Smith" {
		t.Fatalf("GetUser(2) with gzip = %v, %v", u, err)
	}

	all, err := c.GetAllUsers(ctx, &userpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; ; n++ {
		if _, err := all.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("GetAllUsers with gzip, after %d users: %v", n, err)
		}
	}
	if n == 0 {
		t.Error("GetAllUsers with gzip sent no users")
	}

	up, err := c.CreateUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Send(&userpb.CreateUserRequest{Name: "Gus Zip", Email: "gus@example.org"}); err != nil {
		t.Fatal(err)
	}
	if r, err := up.CloseAndRecv(); err != nil || r.GetUsersCreated() != 1 {
		t.Errorf("CreateUsers with gzip = %v, %v", r, err)
	}

	chat, err := c.ChatWithUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Send(&userpb.ChatMessage{UserName: "gus", Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if m, err := chat.Recv(); err != nil || m.GetMessage() != "Echo: hi" {
		t.Errorf("ChatWithUsers with gzip = %v, %v", m, err)
	}
	chat.CloseSend()

	// 1 MiB of one letter is about 1 KiB compressed: the bound is on what it inflates to.
	bomb, err := c.ChatWithUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bomb.Send(&userpb.ChatMessage{UserName: "gus", Message: strings.Repeat("a", 1<<20)})
	_, err = bomb.Recv()
	wantCode(t, err, codes.ResourceExhausted, "")
}

// TestGRPCHealthPerService: the server as a whole ("") and user.UserService are
// SERVING; a service it does not have is NOT_FOUND, as the health protocol says.
func TestGRPCHealthPerService(t *testing.T) {
	a, _ := startApp(t, testConfig())
	h := healthpb.NewHealthClient(dialGRPC(t, a.grpcAddr))
	for _, svc := range []string{"", "user.UserService"} {
		r, err := h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v, %v; want SERVING", svc, r, err)
		}
	}
	_, err := h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "user.NoSuchService"})
	wantCode(t, err, codes.NotFound, "")

	l, err := h.List(t.Context(), &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.GetStatuses(); len(got) != 2 || got["user.UserService"].GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("List = %v; want \"\" and user.UserService SERVING", got)
	}
}

// TestGRPCHealthNotServingOnShutdown: a client watching health hears NOT_SERVING when
// shutdown begins, its Watch ends, and so the drain does not wait for it: a Watch that
// stayed open would hold shutdown until -shutdown-timeout, which then logs that it cut
// the calls still running.
func TestGRPCHealthNotServingOnShutdown(t *testing.T) {
	cfg := testConfig()
	cfg.shutdownTimeout = time.Minute
	logs := &syncBuffer{}
	a, err := start(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := healthpb.NewHealthClient(dialGRPC(t, a.grpcAddr))
	watch := func(svc string, want healthpb.HealthCheckResponse_ServingStatus) healthpb.Health_WatchClient {
		t.Helper()
		w, err := h.Watch(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := w.Recv(); err != nil || r.GetStatus() != want {
			t.Fatalf("Watch(%q) first = %v, %v; want %v", svc, r, err, want)
		}
		return w
	}
	whole := watch("", healthpb.HealthCheckResponse_SERVING)
	users := watch("user.UserService", healthpb.HealthCheckResponse_SERVING)
	unknown := watch("user.NoSuchService", healthpb.HealthCheckResponse_SERVICE_UNKNOWN)

	done := make(chan error, 1)
	go func() { done <- a.shutdown() }()
	for svc, w := range map[string]healthpb.Health_WatchClient{"": whole, "user.UserService": users} {
		if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Watch(%q) at shutdown = %v, %v; want NOT_SERVING", svc, r, err)
		}
		if _, err := w.Recv(); err != io.EOF {
			t.Errorf("Watch(%q) after NOT_SERVING: %v, want the call to end", svc, err)
		}
	}
	if _, err := unknown.Recv(); err != io.EOF {
		t.Errorf("Watch of an unknown service at shutdown: %v, want the call to end", err)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
	if l := logs.String(); strings.Contains(l, "calls still running after -shutdown-timeout are cut") {
		t.Errorf("the Watch calls held the drain until the timeout cut them:\n%s", l)
	}
	for _, svc := range []string{"", "user.UserService"} {
		r, err := a.grpc.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Check(%q) after shutdown = %v, %v; want NOT_SERVING", svc, r, err)
		}
	}
}
