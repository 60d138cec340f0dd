package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"quartet/userpb"
)

// TestAuthReads: with -auth-reads, every read of stored data on every surface needs a
// valid token, answered in each surface's own format; health and the schemas stay open.
// (Without the flag, TestRESTAuth, TestGraphQLAuth and TestGRPCAuth show
// reads open.)
func TestAuthReads(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.authReads = true
	a, _ := startApp(t, cfg)
	base := "http://" + a.httpAddr
	token := "Bearer " + testToken(t, "")
	get := func(path string, authorization ...string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Accept", "application/json")
		for _, v := range authorization {
			req.Header.Add("Authorization", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}

	guarded := []struct {
		path, contentType, body string // the refusal without a token
	}{
		{"/api/users", "application/problem+json", `"detail":"token missing"`},
		{"/api/users/1", "application/problem+json", `"detail":"token missing"`},
		{"/api/users/1/orders", "application/problem+json", `"detail":"token missing"`},
		{"/api/users/1/orders/1", "application/problem+json", `"detail":"token missing"`},
		{"/api/products", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/products/1", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/products(1)", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/products/search?q=a", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/orders", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/orders/1", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/Products", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/products/$count", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/products(1)/orders", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/api/Orders(id=1)/product/name/$value", "application/json", `{"error":{"code":"Unauthorized","message":"token missing"}}`},
		{"/graphql?query=%7Busers%7Bid%7D%7D", "application/json", `"code":"UNAUTHENTICATED"`},
	}
	for _, g := range guarded {
		status, ct, body := get(g.path)
		wantStatus := http.StatusUnauthorized
		if strings.HasPrefix(g.path, "/graphql") {
			wantStatus = http.StatusOK // application/json: GraphQL errors ride in a 200
		}
		if status != wantStatus || !strings.HasPrefix(ct, g.contentType) || !strings.Contains(body, g.body) {
			t.Errorf("GET %s without a token: %d %s %s; want %d %s containing %s", g.path, status, ct, body, wantStatus, g.contentType, g.body)
		}
		if status, _, body := get(g.path, token); status != http.StatusOK || strings.Contains(body, "token") {
			t.Errorf("GET %s with a token: %d %s", g.path, status, body)
		}
		// Two Authorization headers: which one counts would be anybody's guess.
		if status, _, body := get(g.path, token, token); status != wantStatus || !strings.Contains(body, "more than one Authorization header") {
			t.Errorf("GET %s with two tokens: %d %s", g.path, status, body)
		}
	}
	for _, path := range []string{"/healthz", "/api/$metadata", "/api/", "/api", "/graphql?query=%7B__schema%7BqueryType%7Bname%7D%7D%7D"} {
		if status, _, body := get(path); status != http.StatusOK || strings.Contains(body, "token") {
			t.Errorf("GET %s without a token: %d %s, want it open", path, status, body)
		}
	}

	// WebSocket: connection_init without a valid token is refused with 4403.
	wsInit := func(payload map[string]any) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		c := dialGraphQLSocket(t, ctx, a.httpAddr)
		defer c.CloseNow()
		wsjson.Write(ctx, c, map[string]any{"type": "connection_init", "payload": payload})
		var ack map[string]any
		if err := wsjson.Read(ctx, c, &ack); err != nil {
			return err
		}
		if ack["type"] != "connection_ack" {
			t.Errorf("connection_init answered %v", ack)
		}
		return nil
	}
	for _, payload := range []map[string]any{nil, {"Authorization": "Bearer garbage"}} {
		if err := wsInit(payload); websocket.CloseStatus(err) != 4403 {
			t.Errorf("connection_init %v: %v, want close 4403", payload, err)
		}
	}
	if err := wsInit(map[string]any{"Authorization": token}); err != nil {
		t.Errorf("connection_init with a token: %v", err)
	}

	// gRPC: every UserService method; health stays open.
	conn := dialGRPC(t, a.grpcAddr)
	c := userpb.NewUserServiceClient(conn)
	recvOne := func(ctx context.Context) error {
		stream, err := c.GetAllUsers(ctx, &userpb.Empty{})
		if err == nil {
			_, err = stream.Recv()
		}
		return err
	}
	wantCode(t, recvOne(t.Context()), codes.Unauthenticated, "token missing")
	if err := recvOne(metadata.AppendToOutgoingContext(t.Context(), "authorization", token)); err != nil {
		t.Errorf("GetAllUsers with a token: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // an open chat would wait
	defer cancel()
	chat, err := c.ChatWithUsers(ctx)
	if err == nil {
		_, err = chat.Recv()
	}
	wantCode(t, err, codes.Unauthenticated, "token missing")
	if _, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health without a token: %v", err)
	}
}

// TestAuthReadsNeedsAKey: -auth-reads alone would guard nothing, so it is refused.
func TestAuthReadsNeedsAKey(t *testing.T) {
	cfg := testConfig()
	cfg.authReads = true
	if _, err := start(cfg, discardLogger()); err == nil || !strings.Contains(err.Error(), "-auth-reads needs a key") {
		t.Errorf("start = %v, want the missing key named", err)
	}
}
