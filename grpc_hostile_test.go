package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"quartet/internal/admission"
	"quartet/internal/testkit"
	"quartet/userpb"
)

// The gRPC surface under hostile clients: every test replays an attack with
// bounded loops and checks the bound that refuses it.

// grpcConfig is testConfig with the default gRPC limits, changed by set.
func grpcConfig(set func(l *grpcLimits)) config {
	cfg := testConfig()
	cfg.grpcLimits = defaultGRPCLimits()
	set(&cfg.grpcLimits)
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
	h.SetReadDeadline(time.Now().Add(10 * time.Second * testkit.RaceSlowdown))
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
	a, _ := startApp(t, grpcConfig(func(l *grpcLimits) { l.handshakeTimeout = 100 * time.Millisecond }))
	h := dialH2(t, a.grpcAddr, false) // connects, never says a word
	h.end(t)
}

func TestGRPCIdleConnectionClosed(t *testing.T) {
	a, _ := startApp(t, grpcConfig(func(l *grpcLimits) { l.maxIdle = 100 * time.Millisecond }))
	conn := dialGRPC(t, a.grpcAddr)
	if _, err := userpb.NewUserServiceClient(conn).GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*testkit.RaceSlowdown)
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
	a, _ := startApp(t, grpcConfig(func(l *grpcLimits) {
		l.pingAfter = 100 * time.Millisecond
		l.pingTimeout = 100 * time.Millisecond
		l.maxIdle = time.Hour
	}))
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
	cfg := grpcConfig(func(l *grpcLimits) { l.maxStreams = 2 })
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
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.DeadlineExceeded, "")
	cancels[0]()
	if _, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("GetUser once a stream ended: %v", err)
	}
}

// TestGRPCConnectionsCapped: past maxConns connections, all with a call under way, a
// new one is not served until one of them has none: that one is closed for it.
func TestGRPCConnectionsCapped(t *testing.T) {
	cfg := grpcConfig(func(l *grpcLimits) { l.maxConns = 2 })
	cfg.streamDelay = time.Hour // a GetAllUsers call stays under way until cancelled
	a, _ := startApp(t, cfg)
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancels = append(cancels, cancel)
		s, err := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr)).GetAllUsers(ctx, &userpb.Empty{})
		if err == nil {
			_, err = s.Recv()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	wantCode(t, err, codes.DeadlineExceeded, "")
	cancels[0]()
	if _, err := c.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Errorf("GetUser once a connection had no call: %v", err)
	}
}

// handshaken opens n connections from the address from that finish the HTTP/2
// handshake and make no call, and returns how many the server accepted (it sends
// its SETTINGS) and how many it closed at once.
func handshaken(t *testing.T, from, addr string, n int) (accepted, closed int) {
	t.Helper()
	var conns []*h2Conn
	for range n {
		c, err := dialFrom(from, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// The preface and an empty SETTINGS frame; a connection closed at once may
		// fail the write.
		io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		conns = append(conns, &h2Conn{Conn: c, r: bufio.NewReader(c)})
	}
	for _, h := range conns {
		h.SetReadDeadline(time.Now().Add(10 * time.Second * testkit.RaceSlowdown))
		typ, _, err := h.readFrame()
		switch {
		case err == nil && typ == frameSettings:
			accepted++
		case err != nil && !isTimeout(err):
			closed++
		default:
			t.Fatalf("first frame of a connection from %s: %d, %v; want SETTINGS or the connection closed", from, typ, err)
		}
	}
	return accepted, closed
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// getUserFrom makes a GetUser call from the address from, within a bound only a
// server that keeps it waiting reaches.
func getUserFrom(t *testing.T, from, addr string) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialFrom(from, addr) }))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*testkit.RaceSlowdown)
	defer cancel()
	_, err = userpb.NewUserServiceClient(conn).GetUser(ctx, &userpb.GetUserRequest{Id: 1})
	return err
}

// TestGRPCConnFloodFromOneAddress: one address opening as many connections as the
// whole server may have, each finishing the handshake and making no call, gets its
// share; a call from another address is served.
func TestGRPCConnFloodFromOneAddress(t *testing.T) {
	a, logs := startApp(t, testConfig())
	d := defaultGRPCLimits()
	accepted, closed := handshaken(t, "127.0.0.2", a.grpcAddr, d.maxConns)
	if accepted != d.maxConnsPerClient || closed != d.maxConns-d.maxConnsPerClient {
		t.Errorf("%d connections accepted and %d closed, want %d and %d", accepted, closed, d.maxConnsPerClient, d.maxConns-d.maxConnsPerClient)
	}
	if err := getUserFrom(t, "127.0.0.1", a.grpcAddr); err != nil {
		t.Errorf("a call from another address: %v", err)
	}
	if !strings.Contains(logs.String(), `msg="gRPC connections refused: their client address has as many open as it may"`) {
		t.Errorf("the refusals were not logged:\n%s", logs)
	}
}

// TestGRPCConnFullShedsIdle: four addresses fill every connection slot with
// connections that make no call; a call from a fifth is served, in the place of an
// idle connection of an address holding the most.
func TestGRPCConnFullShedsIdle(t *testing.T) {
	a, logs := startApp(t, testConfig())
	d := defaultGRPCLimits()
	for _, from := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		if accepted, _ := handshaken(t, from, a.grpcAddr, d.maxConns/4); accepted != d.maxConns/4 {
			t.Fatalf("%d connections of %s accepted, want %d", accepted, from, d.maxConns/4)
		}
	}
	if err := getUserFrom(t, "127.0.0.1", a.grpcAddr); err != nil {
		t.Errorf("a call from another address: %v", err)
	}
	if !strings.Contains(logs.String(), `msg="gRPC connection limit reached; idle connections closed to make room"`) {
		t.Errorf("the closing was not logged:\n%s", logs)
	}
}

// TestGRPCUnusedConnClosed: a connection that finishes the handshake and makes no
// call is closed when the first-call deadline passes; one that made a call stays.
func TestGRPCUnusedConnClosed(t *testing.T) {
	a, _ := startApp(t, grpcConfig(func(l *grpcLimits) { l.firstCallTimeout = 100 * time.Millisecond; l.maxIdle = time.Hour }))
	used := dialGRPC(t, a.grpcAddr)
	if _, err := userpb.NewUserServiceClient(used).GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	h := dialH2(t, a.grpcAddr, true)
	if goAway, _ := h.end(t); goAway != "" {
		t.Errorf("GOAWAY %q, want the connection closed by the first-call deadline", goAway)
	}
	// The used connection's deadline passed before the unused one's.
	if s := used.GetState(); s != connectivity.Ready {
		t.Errorf("the connection that made a call is %v", s)
	}
}

func TestGRPCLimitFlags(t *testing.T) {
	for _, args := range [][]string{{"-grpc-max-conns", "0"}, {"-grpc-max-streams", "0"}, {"-grpc-max-idle", "0s"},
		{"-grpc-max-conns-per-client", "-1"}, {"-grpc-first-call-timeout", "0s"}} {
		err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// longUser is a valid user of the longest name (100 four-byte characters) and a long
// address: 718 bytes by userCost.
var longUser = &userpb.CreateUserRequest{Name: strings.Repeat("𝔸", 100), Email: strings.Repeat("a", 240) + "@example.com"}

// createUsers opens a CreateUsers call on c and sends n copies of u, stopping early if
// the server ends the call; it does not close the call.
func createUsers(t *testing.T, c userpb.UserServiceClient, n int, u *userpb.CreateUserRequest) grpc.ClientStreamingClient[userpb.CreateUserRequest, userpb.CreateUsersResponse] {
	t.Helper()
	s, err := c.CreateUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if s.Send(u) != nil {
			break // the call has ended; RecvMsg says why
		}
	}
	return s
}

// usersHeld holds, for testkit.Eventually, once CreateUsers calls hold n bytes of
// users waiting to be stored.
func usersHeld(a *app, n int64) func() error {
	return func() error {
		if held := a.grpc.users.waiting.Held(); held != n {
			return fmt.Errorf("CreateUsers calls hold %d bytes of users, want %d", held, n)
		}
		return nil
	}
}

// finish reads how a CreateUsers call ended, without closing it first.
func finish(s grpc.ClientStreamingClient[userpb.CreateUserRequest, userpb.CreateUsersResponse]) error {
	return s.RecvMsg(new(userpb.CreateUsersResponse))
}

func TestGRPCCreateUsersBounds(t *testing.T) {
	cost := userCost(longUser)
	a, _ := startApp(t, grpcConfig(func(l *grpcLimits) {
		l.createUsersMax = 3
		l.createUsersMaxBytes = 2*cost + cost/2
		l.createUsersTime = 200 * time.Millisecond
	}))
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	short := &userpb.CreateUserRequest{Name: "A", Email: "a@example.com"}
	wantCode(t, finish(createUsers(t, c, 4, short)), codes.ResourceExhausted, "at most 3 users per CreateUsers call")
	wantCode(t, finish(createUsers(t, c, 3, longUser)), codes.ResourceExhausted, fmt.Sprintf("at most %d bytes of users per CreateUsers call", 2*cost+cost/2))
	// A client that stops sending loses the call when its time is up.
	wantCode(t, finish(createUsers(t, c, 1, short)), codes.DeadlineExceeded, "context deadline exceeded")
	if n := len(a.store.Users()); n != 6 {
		t.Errorf("%d users, want the demo's 6: nothing of a refused call is stored", n)
	}
	testkit.Eventually(t, usersHeld(a, 0))
	// At the bounds, a call is served.
	s := createUsers(t, c, 2, longUser)
	if resp, err := s.CloseAndRecv(); err != nil || resp.GetUsersCreated() != 2 {
		t.Errorf("two long users: %v, %v", resp, err)
	}
	if used := a.grpc.users.waiting.Held(); used != 0 {
		t.Errorf("%d bytes still held after a stored call", used)
	}
}

// TestGRPCCreateUsersReceivesInItsHandler: many CreateUsers calls at once, half of
// them from clients that stop sending and run out of time, half finished. Whenever a
// call has returned (its log line, written once the handler returned), every goroutine
// receiving users is a handler still running; once the server has stopped, every byte
// the calls held is given back.
func TestGRPCCreateUsersReceivesInItsHandler(t *testing.T) {
	cfg := grpcConfig(func(l *grpcLimits) { l.createUsersTime = 250 * time.Millisecond })
	receivers := &receiverCheck{Handler: slog.DiscardHandler, state: &receiverState{}}
	a, err := start(cfg, slog.New(receivers))
	if err != nil {
		t.Fatal(err)
	}
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	short := &userpb.CreateUserRequest{Name: "A", Email: "a@example.com"}
	const calls = 24
	codesSeen := make([]codes.Code, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			s, err := c.CreateUsers(t.Context())
			if err == nil {
				err = s.Send(short)
			}
			if err == nil && i%2 == 0 {
				err = s.CloseSend()
			}
			if err == nil {
				err = finish(s)
			}
			codesSeen[i] = status.Code(err)
		})
	}
	wg.Wait()
	if err := a.shutdown(); err != nil { // returns once every handler has
		t.Error(err)
	}
	for i, code := range codesSeen {
		if want := []codes.Code{codes.OK, codes.DeadlineExceeded}[i%2]; code != want {
			t.Errorf("call %d: %v, want %v", i, code, want)
		}
	}
	if used := a.grpc.users.waiting.Held(); used != 0 {
		t.Errorf("%d bytes still held once every call returned", used)
	}
	receivers.state.mu.Lock()
	defer receivers.state.mu.Unlock()
	if receivers.state.checks < calls || receivers.state.outside != "" {
		t.Errorf("%d calls checked; a goroutine receiving outside its handler:\n%s", receivers.state.checks, receivers.state.outside)
	}
}

// receiverCheck is a log handler that, at each gRPC call's log line, looks for a
// goroutine receiving a CreateUsers call's users outside the call's handler.
type receiverCheck struct {
	slog.Handler
	state *receiverState
}

type receiverState struct {
	mu      sync.Mutex
	checks  int
	outside string // the first such goroutine's stack
}

func (h *receiverCheck) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "grpc" {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		h.state.mu.Lock()
		h.state.checks++
		for g := range strings.SplitSeq(all, "\n\n") {
			frames, _, _ := strings.Cut(g, "\ncreated by ")
			if strings.Contains(frames, "(*userService).receive") && !strings.Contains(frames, "(*userService).CreateUsers(") && h.state.outside == "" {
				h.state.outside = g
			}
		}
		h.state.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h *receiverCheck) Enabled(context.Context, slog.Level) bool { return true }

func (h *receiverCheck) WithAttrs(as []slog.Attr) slog.Handler {
	return &receiverCheck{h.Handler.WithAttrs(as), h.state}
}

func (h *receiverCheck) WithGroup(name string) slog.Handler {
	return &receiverCheck{h.Handler.WithGroup(name), h.state}
}

// TestGRPCCreateUsersBudget: what calls hold together is bounded, per client and in
// all; a call past the budget is refused, and the budget is free again once the
// holder is done.
func TestGRPCCreateUsersBudget(t *testing.T) {
	for _, tc := range []struct {
		name             string
		perClient, total int64
		refusal          string
	}{
		{"per client", 5, 0, "too many bytes of CreateUsers batches from 127.0.0.1: at most %d at once; try again shortly"},
		{"in all", 0, 5, "too many bytes of CreateUsers batches over all clients: at most %d at once; try again shortly"},
	} {
		t.Run(tc.name, func(t *testing.T) { createUsersBudget(t, tc.perClient, tc.total, tc.refusal) })
	}
}

func createUsersBudget(t *testing.T, perClient, total int64, refusal string) {
	cost := userCost(longUser)
	cfg := testConfig()
	cfg.admission.BatchClientBytes, cfg.admission.BatchTotalBytes = perClient*cost, total*cost
	a, _ := startApp(t, cfg)
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	holder := createUsers(t, c, 3, longUser)
	testkit.Eventually(t, usersHeld(a, 3*cost))
	wantCode(t, finish(createUsers(t, c, 3, longUser)), codes.ResourceExhausted, fmt.Sprintf(refusal, 5*cost))
	if resp, err := holder.CloseAndRecv(); err != nil || resp.GetUsersCreated() != 3 {
		t.Fatalf("the first call: %v, %v", resp, err)
	}
	if resp, err := createUsers(t, c, 3, longUser).CloseAndRecv(); err != nil || resp.GetUsersCreated() != 3 {
		t.Errorf("a call once the budget is free: %v, %v", resp, err)
	}
	if n := len(a.store.Users()); n != 12 {
		t.Errorf("%d users, want 6 + 3 + 3", n)
	}
}

// TestGRPCCreateUsersFlood replays the hostile attack with the default limits: 8
// connections each open a CreateUsers call and try to send 100,000 users, which held
// 492 MB before the bounds. First every call sends 5,500 long users (3.9 MB, within a
// call's bounds) and keeps the call open: the server holds at most the client's 8 MiB
// budget and refuses the calls past it. Then every call goes on towards 100,000 and is refused
// at its 4 MiB. Nothing is stored.
func TestGRPCCreateUsersFlood(t *testing.T) {
	testkit.SkipIfShort(t, "streams 8 calls of up to 4 MiB of users")
	a, _ := startApp(t, testConfig())
	limits, cost := defaultGRPCLimits(), userCost(longUser)
	budget := admission.Defaults().BatchClientBytes // the calls all come from one address
	const calls, first = 8, 5_500
	before := testkit.LiveHeap()

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
		errs    []error
		proceed = make(chan struct{})
	)
	for range calls {
		c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
		wg.Go(func() {
			s := createUsers(t, c, first, longUser)
			ended := make(chan error, 1)
			go func() { ended <- finish(s) }()
			select {
			case err := <-ended: // refused while within its own bounds: the budget
				mu.Lock()
				refused++
				errs = append(errs, err)
				mu.Unlock()
				<-proceed
				return
			case <-proceed:
			}
			for range 100_000 - first {
				if s.Send(longUser) != nil {
					break
				}
			}
			mu.Lock()
			errs = append(errs, <-ended)
			mu.Unlock()
		})
	}
	// Settled: every call is refused or wholly held.
	testkit.Eventually(t, func() error {
		mu.Lock()
		defer mu.Unlock()
		return usersHeld(a, int64(calls-refused)*first*cost)()
	})
	held := testkit.LiveHeap() - before
	mu.Lock()
	holders := calls - refused
	mu.Unlock()
	t.Logf("%d calls held, %d refused by the budget; heap grew %.1f MiB", holders, refused, float64(held)/(1<<20))
	if maxHolders := int(budget / (first * cost)); holders > maxHolders || holders == calls {
		t.Errorf("%d calls held, want at most %d", holders, maxHolders)
	}
	// The budget, plus the connections' flow-control windows and the transport's
	// buffers (client and server are in this process).
	if bound := budget + calls*int64(limits.connWindowBytes); held > bound {
		t.Errorf("holding the calls grew the heap %d bytes, want under %d", held, bound)
	}
	close(proceed)
	wg.Wait()
	for _, err := range errs {
		wantCode(t, err, codes.ResourceExhausted, "")
	}
	if n := len(a.store.Users()); n != 6 {
		t.Errorf("%d users, want the demo's 6", n)
	}
	testkit.Eventually(t, usersHeld(a, 0))
	if grown := testkit.LiveHeap() - before; grown > 8<<20 {
		t.Errorf("after the refusals the heap is %d bytes larger, want under 8 MiB", grown)
	}
}

// TestGRPCGetAllUsersManyCalls: 64 GetAllUsers calls at once over 50,000 users each
// hold a page of the list, not a copy of it (which would be 64 × 400 KB).
func TestGRPCGetAllUsersManyCalls(t *testing.T) {
	cfg := grpcConfig(func(l *grpcLimits) { l.maxStreams = 64 })
	cfg.streamDelay = time.Hour // every call stops after its first user, holding what it read
	a, _ := startApp(t, cfg)
	batch := make([]NewUser, 50_000)
	for i := range batch {
		batch[i] = NewUser{Name: fmt.Sprint("User ", i), Email: fmt.Sprintf("u%d@example.com", i)}
	}
	if _, err := a.store.CreateUsers(batch); err != nil {
		t.Fatal(err)
	}
	batch = nil
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	before := testkit.LiveHeap()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 64 {
		s, err := c.GetAllUsers(ctx, &userpb.Empty{})
		if err == nil {
			_, err = s.Recv()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A call's own cost (its goroutines, buffers and HTTP/2 state, in server and client)
	// is some kilobytes; a copy of the list would be 400 KB more.
	if grown := testkit.LiveHeap() - before; grown > 64*100<<10 {
		t.Errorf("64 calls grew the heap %d bytes, want under %d", grown, 64*100<<10)
	}
}

// TestGRPCOversizedMetadata: a call's metadata is bounded (grpc-go would take 16 MiB).
// The server announces the bound in its SETTINGS; grpc-go's client refuses to send
// past it, and the server would refuse what another client sends.
func TestGRPCOversizedMetadata(t *testing.T) {
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	call := func(size int) error {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "x-padding", strings.Repeat("x", size))
		_, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1})
		return err
	}
	if err := call(8 << 10); err != nil {
		t.Errorf("8 KiB of metadata: %v", err)
	}
	if err := call(100 << 10); status.Code(err) == codes.OK {
		t.Error("100 KiB of metadata was taken")
	}
}

// TestLimitListenerCloseWhileWaiting: an Accept waiting for a free slot ends when the
// listener is closed, so a server at its cap still shuts down.
func TestLimitListenerCloseWhileWaiting(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := admission.NewListener(inner, "gRPC", 1, discardLogger())
	client, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	waiting := make(chan error)
	go func() {
		_, err := l.Accept()
		waiting <- err
	}()
	l.Close()
	if err := <-waiting; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
