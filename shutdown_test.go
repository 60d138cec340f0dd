package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"quartet/userpb"
)

// TestShutdownCutsSlowCallsCleanly: A slow upload and an unfinished gRPC
// stream are still running when -shutdown-timeout passes: they are cut, the log says
// how many connections were, and run returns nil (the process exits 0).
func TestShutdownCutsSlowCallsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-stream-delay", "0s", "-shutdown-timeout", "100ms"},
			envFrom(nil), io.Discard, logs)
	}()
	serving := regexp.MustCompile(`msg="quartet serving" http=(\S+) grpc=(\S+)`)
	var m []string
	for range 1000 {
		if m = serving.FindStringSubmatch(logs.String()); m != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m == nil {
		t.Fatalf("no serving line in the log:\n%s", logs)
	}

	// An upload that stops halfway, on a connection known to be accepted.
	conn, err := net.Dial("tcp", m[1])
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
	waitFor(t, "the half-sent request is in flight", func() bool {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		n := inFlight.FindSubmatch(body)
		return n != nil && string(n[1]) == "2"
	})

	// A client stream that is never closed, on a connection known to be accepted.
	cc, err := grpc.NewClient(m[2], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := userpb.NewUserServiceClient(cc)
	if _, err := client.GetUser(ctx, &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	stream, err := client.CreateUsers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&userpb.CreateUserRequest{Name: "Slow", Email: "slow@example.com"}); err != nil {
		t.Fatal(err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run = %v, want nil: a bounded shutdown that cut calls is a clean stop", err)
	}
	if !strings.Contains(logs.String(), "are cut") || !strings.Contains(logs.String(), "httpConnections=1") || !strings.Contains(logs.String(), "grpcConnections=1") {
		t.Errorf("the log does not say what was cut:\n%s", logs)
	}
}
