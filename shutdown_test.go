package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"quartet/internal/testkit"
	"quartet/userpb"
)

// TestShutdownCutsSlowCallsCleanly: A slow upload and an unfinished gRPC
// stream are still running when -shutdown-timeout passes: they are cut, the log says
// how many connections were, and run returns nil (the process exits 0).
func TestShutdownCutsSlowCallsCleanly(t *testing.T) {
	r := runServing(t, []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-stream-delay", "0s", "-shutdown-timeout", "100ms"}, nil)
	logs := r.logs

	// An upload that stops halfway, on a connection known to be accepted.
	conn, err := net.Dial("tcp", r.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: quartet\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	io.WriteString(conn, "POST /api/users HTTP/1.1\r\nHost: quartet\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")
	// Until its handler runs, the half-sent request's connection is idle, and
	// Shutdown closes it without cutting anything: wait for it to be in flight
	// (beside the /metrics request that asks).
	inFlight := regexp.MustCompile(`(?m)^quartet_requests_in_flight\{protocol="http"\} (\d+)`)
	testkit.Eventually(t, func() error {
		resp, err := http.Get("http://" + r.httpAddr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if n := inFlight.FindSubmatch(body); n == nil || string(n[1]) != "2" {
			return fmt.Errorf("requests in flight: %q, want 2 (the half-sent one and /metrics)", n)
		}
		return nil
	})

	// A client stream that is never closed, on a connection known to be accepted.
	cc, err := grpc.NewClient(r.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := userpb.NewUserServiceClient(cc)
	if _, err := client.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	stream, err := client.CreateUsers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&userpb.CreateUserRequest{Name: "Slow", Email: "slow@example.com"}); err != nil {
		t.Fatal(err)
	}

	if err := r.shutdown(); err != nil {
		t.Errorf("run = %v, want nil: a bounded shutdown that cut calls is a clean stop", err)
	}
	if !strings.Contains(logs.String(), "are cut") || !strings.Contains(logs.String(), "httpConnections=1") || !strings.Contains(logs.String(), "grpcConnections=1") {
		t.Errorf("the log does not say what was cut:\n%s", logs)
	}
}
