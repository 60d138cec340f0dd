package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"quartet/userpb"
)

// The gRPC surface under hostile clients (issue 14): every test replays an attack with
// bounded loops and checks the bound that refuses it.

// grpcConfig is testConfig with the given gRPC limits (zero fields take the defaults).
func grpcConfig(l grpcLimits) config {
	cfg := testConfig()
	cfg.grpcLimits = l
	return cfg
}

// h2Conn is a hand-driven HTTP/2 connection, for what no gRPC client does: pinging in
// a loop, never answering a ping, never finishing the handshake.
type h2Conn struct {
	net.Conn
	r *bufio.Reader
}

// dialH2 opens a connection and, when handshake is set, sends the client's preface
// and an empty SETTINGS frame (RFC 9113 section 3.4).
func dialH2(t *testing.T, addr string, handshake bool) *h2Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h := &h2Conn{Conn: c, r: bufio.NewReader(c)}
	if handshake {
		if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		h.writeFrame(t, frameSettings, 0, nil)
	}
	return h
}

// HTTP/2 frame types (RFC 9113 section 6).
const (
	frameSettings = 0x4
	framePing     = 0x6
	frameGoAway   = 0x7
)

func (h *h2Conn) writeFrame(t *testing.T, typ, flags byte, payload []byte) {
	t.Helper()
	hdr := make([]byte, 9, 9+len(payload)) // length (24 bits), type, flags, stream 0
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	if _, err := h.Write(append(hdr, payload...)); err != nil {
		t.Fatal(err)
	}
}

// readFrame reads the next frame's type and payload; err is the connection's end.
func (h *h2Conn) readFrame() (typ byte, payload []byte, err error) {
	var hdr [9]byte
	if _, err := io.ReadFull(h.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	payload = make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
	_, err = io.ReadFull(h.r, payload)
	return hdr[3], payload, err
}

// end reads frames until the server sends GOAWAY or closes the connection, within a
// bound long enough that only a server that does neither fails; it returns the
// GOAWAY's debug data ("" for none) and whether the server pinged first.
func (h *h2Conn) end(t *testing.T) (goAway string, pinged bool) {
	t.Helper()
	h.SetReadDeadline(time.Now().Add(10 * time.Second * raceSlowdown))
	for {
		typ, payload, err := h.readFrame()
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			t.Fatalf("the server kept the connection open (pinged %v)", pinged)
		}
		switch {
		case err != nil:
			return "", pinged
		case typ == frameGoAway: // last stream id (4 bytes), error code (4), debug data
			return string(payload[8:]), pinged
		case typ == framePing:
			pinged = true
		}
	}
}

func TestGRPCHandshakeTimeout(t *testing.T) {
	a, _ := startApp(t, grpcConfig(grpcLimits{handshakeTimeout: 100 * time.Millisecond}))
	h := dialH2(t, a.grpcAddr, false) // connects, never says a word
	h.end(t)
}

func TestGRPCIdleConnectionClosed(t *testing.T) {
	a, _ := startApp(t, grpcConfig(grpcLimits{maxIdle: 200 * time.Millisecond}))
	conn := dialGRPC(t, a.grpcAddr)
	if _, err := userpb.NewUserServiceClient(conn).GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*raceSlowdown)
	defer cancel()
	if !conn.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("the idle connection was never closed")
	}
	// The raw view: a connection that opens no call is sent GOAWAY "max_idle".
	h := dialH2(t, a.grpcAddr, true)
	if goAway, _ := h.end(t); goAway != "max_idle" {
		t.Errorf("GOAWAY %q, want max_idle", goAway)
	}
}

// TestGRPCPingFlood: a client pinging more often than minClientPing is cut off.
func TestGRPCPingFlood(t *testing.T) {
	a, _ := startApp(t, testConfig())
	h := dialH2(t, a.grpcAddr, true)
	for range 10 {
		h.writeFrame(t, framePing, 0, make([]byte, 8))
	}
	if goAway, _ := h.end(t); goAway != "too_many_pings" {
		t.Errorf("GOAWAY %q, want too_many_pings", goAway)
	}
}

// TestGRPCSilentPeerClosed: a peer that stops answering (a dead host) loses its
// connection after pingAfter + pingTimeout.
func TestGRPCSilentPeerClosed(t *testing.T) {
	a, _ := startApp(t, grpcConfig(grpcLimits{pingAfter: 100 * time.Millisecond, pingTimeout: 100 * time.Millisecond, maxIdle: time.Hour}))
	h := dialH2(t, a.grpcAddr, true)
	if _, pinged := h.end(t); !pinged {
		t.Error("closed without a ping first")
	}
}

func TestGRPCOversizedMessage(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	huge := strings.Repeat("x", 5<<20)
	create, err := c.CreateUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	create.Send(&userpb.CreateUserRequest{Name: huge, Email: "a@example.com"})
	_, err = create.CloseAndRecv()
	wantCode(t, err, codes.ResourceExhausted, "")
	chat, err := c.ChatWithUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	chat.Send(&userpb.ChatMessage{Message: huge})
	_, err = chat.Recv()
	wantCode(t, err, codes.ResourceExhausted, "")
	// Just past the bound is refused too; just under it is served.
	limit := defaultGRPCLimits().maxMessageBytes
	chat, err = c.ChatWithUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	chat.Send(&userpb.ChatMessage{Message: strings.Repeat("x", limit-16)})
	if _, err := chat.Recv(); err != nil {
		t.Errorf("a message under the bound: %v", err)
	}
	chat.Send(&userpb.ChatMessage{Message: strings.Repeat("x", limit)})
	_, err = chat.Recv()
	wantCode(t, err, codes.ResourceExhausted, "")
	if n := len(a.store.Users()); n != 6 {
		t.Errorf("%d users, want the demo's 6", n)
	}
}

// TestGRPCStreamsPerConnection: past maxStreams calls on one connection, a call waits
// for one of them to end (grpc-go's client honours the server's
// SETTINGS_MAX_CONCURRENT_STREAMS; the server would refuse the stream otherwise).
func TestGRPCStreamsPerConnection(t *testing.T) {
	cfg := grpcConfig(grpcLimits{maxStreams: 2})
	cfg.streamDelay = time.Hour
	a, _ := startApp(t, cfg)
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancels = append(cancels, cancel)
		s, err := c.GetAllUsers(ctx, &userpb.Empty{})
		if err == nil {
			_, err = s.Recv()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.DeadlineExceeded, "")
	cancels[0]()
	if _, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("GetUser once a stream ended: %v", err)
	}
}

// TestGRPCConnectionsCapped: past maxConns connections, a new one is not served until
// one of them closes.
func TestGRPCConnectionsCapped(t *testing.T) {
	a, _ := startApp(t, grpcConfig(grpcLimits{maxConns: 2}))
	held := []*h2Conn{dialH2(t, a.grpcAddr, true), dialH2(t, a.grpcAddr, true)}
	for _, h := range held { // the server's SETTINGS: it has accepted the connection
		if typ, _, err := h.readFrame(); err != nil || typ != frameSettings {
			t.Fatalf("first frame %d, %v; want SETTINGS", typ, err)
		}
	}
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.DeadlineExceeded, "")
	held[0].Close()
	if _, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("GetUser once a connection closed: %v", err)
	}
}

func TestGRPCLimitFlags(t *testing.T) {
	for _, args := range [][]string{{"-grpc-max-conns", "0"}, {"-grpc-max-streams", "0"}, {"-grpc-max-idle", "0s"}} {
		err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
