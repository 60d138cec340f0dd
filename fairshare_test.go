package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"quartet/internal/testkit"
	"quartet/userpb"
)

func TestFairShareTurns(t *testing.T) {
	f := newFairShare(2, 1)
	stopped := time.Now()
	f.now = func() time.Time { return stopped } // no turn is held long enough to be paced
	ctx := context.Background()
	leave1, ok1 := f.enter(ctx, "a")
	leave2, ok2 := f.enter(ctx, "a")
	if !ok1 || !ok2 {
		t.Fatal("the first two requests of a client did not run at once")
	}
	entered := make(chan func())
	go func() {
		leave, ok := f.enter(ctx, "a")
		if !ok {
			t.Error("the waiting request was refused")
		}
		entered <- leave
	}()
	waitFor(t, "a third request of a waits", func() bool { return f.users("a") == 3 })
	if _, ok := f.enter(ctx, "a"); ok {
		t.Fatal("a fourth request ran or waited past share 2 + waiting 1")
	}
	if leave, ok := f.enter(ctx, "b"); !ok {
		t.Fatal("another client waited for a's turns")
	} else {
		leave()
	}
	select {
	case <-entered:
		t.Fatal("the third request ran before a turn was given back")
	default:
	}
	leave1()
	leave1() // a second call gives nothing back
	leave3 := <-entered
	if got := f.users("a"); got != 2 {
		t.Fatalf("users after one left and the waiting one entered = %d, want 2", got)
	}

	cancelled, cancel := context.WithCancel(ctx)
	go func() {
		waitFor(t, "a third request of a waits", func() bool { return f.users("a") == 3 })
		cancel()
	}()
	if _, ok := f.enter(cancelled, "a"); ok {
		t.Fatal("a request whose context ended was let in")
	}
	leave2()
	leave3()
	if len(f.clients) != 0 {
		t.Fatalf("clients left behind: %v", f.clients)
	}
}

// TestFairSharePacesCostlyTurns: while another client is about, a costly turn
// of a client with a request waiting comes back only as long again after it
// was left; cheap turns, a client's one request at a time, and a client alone
// come back at once.
func TestFairSharePacesCostlyTurns(t *testing.T) {
	f := newFairShare(1, 4)
	clock := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return clock }
	var paced []time.Duration
	var giveBack func()
	f.afterFunc = func(d time.Duration, fn func()) *time.Timer {
		paced, giveBack = append(paced, d), fn
		return nil
	}
	ctx := context.Background()
	turn := func(client string, held time.Duration) {
		t.Helper()
		leave, ok := f.enter(ctx, client)
		if !ok {
			t.Fatalf("%s was refused", client)
		}
		clock = clock.Add(held)
		leave()
	}
	noPacing := func(why string) {
		t.Helper()
		if len(paced) != 0 || f.running("a") != 0 {
			t.Fatalf("%s: paced %v, %d running; want no pacing", why, paced, f.running("a"))
		}
	}

	next, _ := f.reserve("a") // a's next request, counted in: a sends faster than it is served
	turn("a", 5*time.Millisecond)
	noPacing("alone")
	turn("b", 0)
	clock = clock.Add(paceWindow / 2)
	turn("a", paceAfter-time.Microsecond)
	noPacing("cheap")

	turn("a", 7*time.Millisecond) // costly, a request waiting, b seen within paceWindow
	if len(paced) != 1 || paced[0] != 7*time.Millisecond {
		t.Fatalf("paced %v, want [7ms]", paced)
	}
	entered := make(chan func())
	go func() {
		leave, _ := next.wait(ctx)
		entered <- leave
	}()
	if leave, ok := f.enter(ctx, "b"); !ok {
		t.Fatal("b waited for a's paced turn")
	} else {
		leave()
	}
	select {
	case <-entered:
		t.Fatal("a's next request ran while its turn was paced")
	default:
	}
	giveBack()
	(<-entered)()

	paced = nil
	turn("a", 7*time.Millisecond)
	noPacing("one request at a time")

	next, _ = f.reserve("a")
	clock = clock.Add(paceWindow) // b is gone: a is alone again
	turn("a", 7*time.Millisecond)
	noPacing("alone again")
	leave, _ := next.wait(ctx)
	leave()
	if len(f.clients) != 0 {
		t.Fatalf("clients left behind: %v", f.clients)
	}
}

// enter reserves a place for client and waits for its turn.
func (f *fairShare) enter(ctx context.Context, client string) (leave func(), ok bool) {
	leave, err := f.take(ctx, client)
	return leave, err == nil
}

// holdTurn takes one of client's turns in f, as a running request of the client
// would, and returns the function that gives it back.
func holdTurn(t *testing.T, f *fairShare, client string) (leave func()) {
	t.Helper()
	leave, ok := f.enter(t.Context(), client)
	if !ok {
		t.Fatal("no turn for the test")
	}
	return leave
}

// startOneTurnApp starts the service with one turn and waiting places per
// client address.
func startOneTurnApp(t *testing.T, waiting int) *app {
	t.Helper()
	cfg := testConfig()
	cfg.clientShare, cfg.clientWaiting = 1, waiting
	a, _ := startApp(t, cfg)
	return a
}

// sendRaw connects to addr and writes text, a request as it goes on the wire;
// the connection is closed when the test ends.
func sendRaw(t *testing.T, addr, text string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	return conn
}

// running is the number of client's requests holding a turn.
func (f *fairShare) running(client string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.clients[client]; t != nil {
		return len(t.running)
	}
	return 0
}

// users is the number of client's requests running or waiting.
func (f *fairShare) users(client string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.clients[client]; t != nil {
		return t.users
	}
	return 0
}

// TestFairShareBetweenClients runs the real service with one turn and one waiting
// place per client address: a client whose turn is held (by a handler the test
// adds, which runs until released) does not delay another address, its own next
// request waits, and the one after that is refused in the format of its surface.
func TestFairShareBetweenClients(t *testing.T) {
	a := startOneTurnApp(t, 1)
	release := make(chan struct{})
	a.server.mux.HandleFunc("GET /test/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	stranger := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	strangers := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: stranger.DialContext}}
	turns := a.server.turns

	held := make(chan int)
	go func() {
		status, _ := get(t, strangers, "http://"+a.httpAddr+"/test/hold")
		held <- status
	}()
	waitFor(t, "the held request has its turn", func() bool { return turns.users("127.0.0.2") == 1 })

	own := &http.Client{Timeout: 10 * time.Second}
	if status, _ := get(t, own, "http://"+a.httpAddr+"/api/users/1"); status != http.StatusOK {
		t.Fatalf("another address got %d while the stranger's turn was held", status)
	}

	waited := make(chan int)
	go func() {
		status, _ := get(t, strangers, "http://"+a.httpAddr+"/api/users/1")
		waited <- status
	}()
	waitFor(t, "the second request waits", func() bool { return turns.users("127.0.0.2") == 2 })

	for _, c := range []struct{ path, contentType, code string }{
		{"/api/users/1", "application/problem+json", ""},
		{"/graphql?query=%7Bname%7D", "application/json", "TOO_MANY_REQUESTS"},
		{"/api/Products(1)", "application/json", "TooManyRequests"},
	} {
		resp, err := strangers.Get("http://" + a.httpAddr + c.path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.contentType) {
			t.Errorf("%s past the waiting place: %d, Retry-After %q, Content-Type %q; want 429, 1, %s", c.path, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), c.contentType)
		}
		var answer struct {
			Detail string
			Errors []struct{ Extensions struct{ Code string } }
			Error  struct{ Code string }
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			t.Fatalf("%s: %v in %s", c.path, err, raw)
		}
		got := answer.Error.Code
		if len(answer.Errors) == 1 {
			got = answer.Errors[0].Extensions.Code
		}
		if got != c.code || (c.code == "" && !strings.Contains(answer.Detail, "127.0.0.2")) {
			t.Errorf("%s past the waiting place answered %s", c.path, raw)
		}
	}

	select {
	case status := <-waited:
		t.Fatalf("the stranger's second request ran (%d) while its first held the turn", status)
	default:
	}
	close(release)
	if status := <-held; status != http.StatusOK {
		t.Fatalf("the held request got %d", status)
	}
	if status := <-waited; status != http.StatusOK {
		t.Fatalf("the stranger's waiting request got %d once its turn came", status)
	}
	waitFor(t, "the stranger is forgotten", func() bool { return turns.users("127.0.0.2") == 0 })
}

// TestFairShareSlowUploadHoldsNoTurn: with one turn per address, a request whose
// body is still on its way holds a waiting place but no turn, so the same address's next request is
// answered; the upload is answered once its body is complete.
func TestFairShareSlowUploadHoldsNoTurn(t *testing.T) {
	a := startOneTurnApp(t, 1)
	body := `{"query":"{ user(id: 1) { name } }"}`
	conn := sendRaw(t, a.httpAddr, "POST /graphql HTTP/1.1\r\nHost: quartet\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body[:5])
	if status, _ := get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+a.httpAddr+"/api/users/1"); status != http.StatusOK {
		t.Fatalf("a request beside a half-sent upload got %d", status)
	}
	if got := a.server.turns.running("127.0.0.1"); got != 0 {
		t.Fatalf("the half-sent upload holds a turn (%d running)", got)
	}
	if _, err := io.WriteString(conn, body[5:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "Alice Johnson") {
		t.Fatalf("the completed upload: %d %s", resp.StatusCode, answer)
	}
}

// TestFairShareWebSocketGivesTurnBack opens a GraphQL WebSocket with one turn per
// client: the socket, which lives on, must not keep its client's HTTP requests
// waiting.
func TestFairShareWebSocketGivesTurnBack(t *testing.T) {
	a := startOneTurnApp(t, 1)
	dialSubscription(t, a.httpAddr, "subscription { onUserCreated { id } }")
	if status, _ := get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+a.httpAddr+"/api/users/1"); status != http.StatusOK {
		t.Fatalf("a request beside an open WebSocket got %d", status)
	}
}

// TestFairShareProfileHoldsNoTurn: a CPU profile waits for seconds without writing;
// under the share it would hold its client's only turn, so that of two requests sent
// meanwhile one would wait and the other, past the waiting room of one, get 429.
func TestFairShareProfileHoldsNoTurn(t *testing.T) {
	a := startOneTurnApp(t, 1)
	c := &http.Client{Timeout: 20 * time.Second}
	profiled := make(chan int, 1)
	go func() {
		status, _ := get(t, c, "http://"+a.httpAddr+"/debug/pprof/profile?seconds=2")
		profiled <- status
	}()
	time.Sleep(300 * time.Millisecond) // the profile is running
	statuses := make(chan int, 2)
	for range 2 {
		go func() {
			status, _ := get(t, c, "http://"+a.httpAddr+"/api/users/1")
			statuses <- status
		}()
	}
	for range 2 {
		if status := <-statuses; status != http.StatusOK {
			t.Errorf("a request beside a running profile got %d", status)
		}
	}
	if status := <-profiled; status != http.StatusOK {
		t.Errorf("the profile got %d", status)
	}
}

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Error(err) // also from the goroutine of a waiting request
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestReadAheadCopiesOnce: a large body of declared length is read into about
// its length, not into a buffer doubling past it, and yields the same bytes; so
// does a body of unknown length.
func TestReadAheadCopiesOnce(t *testing.T) {
	want := strings.Repeat("0123456789", 27_000)
	for _, declared := range []int64{int64(len(want)), -1} {
		r, _ := http.NewRequest("POST", "http://localhost/graphql", io.NopCloser(strings.NewReader(want)))
		r.ContentLength = declared
		limit := int64(len(want)) * 3 / 2
		if declared < 0 {
			limit = 2 * int64(len(want)) // doubling chunks from minAheadChunk
		}
		if n := testkit.BytesAllocated(func() { readAhead(r, maxBodyBytes+1) }); n > uint64(limit) {
			t.Errorf("declared %d: a %d-byte body took %d bytes", declared, len(want), n)
		}
		if got, err := io.ReadAll(r.Body); string(got) != want || err != nil {
			t.Errorf("declared %d: read back %d bytes, %v; want the body", declared, len(got), err)
		}
	}
}

// TestReadAheadClaimsWhatArrives: a body declared at a megabyte of which ten bytes
// arrive before the client goes claims a first read's room, not the megabyte.
func TestReadAheadClaimsWhatArrives(t *testing.T) {
	body := io.MultiReader(strings.NewReader("0123456789"), &failedReader{io.ErrUnexpectedEOF})
	r, _ := http.NewRequest("POST", "http://localhost/graphql", io.NopCloser(body))
	r.ContentLength = 1 << 20
	// Bounded loosely: other goroutines allocate meanwhile (under -race, a first
	// read's room again).
	if n := testkit.BytesAllocated(func() { readAhead(r, maxBodyBytes+1) }); n > 4*aheadChunk {
		t.Errorf("ten bytes of a declared megabyte claimed %d bytes", n)
	}
	if got, err := io.ReadAll(r.Body); string(got) != "0123456789" || err != io.ErrUnexpectedEOF {
		t.Errorf("read back %q, %v; want the ten bytes, then the client's error", got, err)
	}
}

// TestFairShareGRPC: a gRPC client's messages take the same turns as its HTTP
// requests. With its address's one turn held, its unary call waits while another
// address's is answered, the next call past the one waiting place is refused with
// ResourceExhausted, and a stream that waits for the client's next message, or
// sends, holds no turn.
func TestFairShareGRPC(t *testing.T) {
	cfg := testConfig()
	cfg.clientShare, cfg.clientWaiting = 1, 1
	cfg.streamDelay = time.Hour
	a, _ := startApp(t, cfg)
	turns := a.server.turns // the HTTP server's, which gRPC shares
	own := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	stranger := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	strangerConn, err := grpc.NewClient(a.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return stranger.DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer strangerConn.Close()
	strangers := userpb.NewUserServiceClient(strangerConn)

	leave := holdTurn(t, turns, "127.0.0.1") // as a running HTTP request of the address would
	answered := make(chan error, 1)
	go func() {
		_, err := own.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1})
		answered <- err
	}()
	waitFor(t, "the call waits for its turn", func() bool { return turns.users("127.0.0.1") == 2 })
	if _, err := strangers.GetUser(t.Context(), &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatalf("another address's call, while the turn was held: %v", err)
	}
	_, err = own.GetUser(t.Context(), &userpb.GetUserRequest{Id: 2})
	wantCode(t, err, codes.ResourceExhausted, "too many requests at once from 127.0.0.1: 1 may run and 1 wait; try again shortly")
	select {
	case err := <-answered:
		t.Fatalf("the call ran (%v) while its address's turn was held", err)
	default:
	}
	leave()
	if err := <-answered; err != nil {
		t.Fatalf("the waiting call, once its turn came: %v", err)
	}
	waitFor(t, "the calls gave their turns back", func() bool { return turns.users("127.0.0.1") == 0 })

	created := createUsers(t, own, 2, &userpb.CreateUserRequest{Name: "Turn Taker", Email: "turn@example.com"})
	all, err := own.GetAllUsers(t.Context(), &userpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := all.Recv(); err != nil { // the first user is sent; the stream pauses for an hour
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*raceSlowdown)
	defer cancel()
	if _, err := own.GetUser(ctx, &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatalf("a call beside an open CreateUsers and a pausing GetAllUsers: %v", err)
	}
	waitFor(t, "the streams that wait hold no turn", func() bool { return turns.running("127.0.0.1") == 0 })
	resp, err := created.CloseAndRecv()
	if err != nil || resp.GetUsersCreated() != 2 {
		t.Fatalf("CreateUsers: %v, %v", resp, err)
	}
}

// TestFairShareWebSocketOperations: setting up a WebSocket operation takes a
// turn in its client's fair share, as its HTTP requests do: with the address's
// one turn held the operation waits, and runs once the turn is given back; with
// its waiting place taken too, it gets TOO_MANY_REQUESTS.
func TestFairShareWebSocketOperations(t *testing.T) {
	a := startOneTurnApp(t, 1)
	turns := a.server.turns
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*raceSlowdown)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+a.httpAddr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsjson.Write(ctx, c, map[string]any{"type": "connection_init"})
	var ack map[string]any
	if err := wsjson.Read(ctx, c, &ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("ack: %v %v", ack, err)
	}
	query := func(id string) {
		wsjson.Write(ctx, c, map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": "{ user(id: 1) { name } }"}})
	}

	leave := holdTurn(t, turns, "127.0.0.1")
	query("1")
	waitFor(t, "the operation waits for its turn", func() bool { return turns.users("127.0.0.1") == 2 })
	leave()
	_, got, err := c.Read(ctx)
	if want := `{"id":"1","type":"next","payload":{"data":{"user":{"name":"Alice Johnson"}}}}`; err != nil || string(got) != want {
		t.Fatalf("once the turn came: %s, %v; want %s", got, err, want)
	}
	c.Read(ctx) // complete

	leave = holdTurn(t, turns, "127.0.0.1")
	waited := make(chan int)
	go func() {
		status, _ := get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+a.httpAddr+"/api/users/1")
		waited <- status
	}()
	waitFor(t, "the HTTP request takes the waiting place", func() bool { return turns.users("127.0.0.1") == 2 })
	query("2")
	_, got, err = c.Read(ctx)
	if err != nil || !strings.Contains(string(got), `"type":"error"`) || !strings.Contains(string(got), `"code":"TOO_MANY_REQUESTS"`) {
		t.Fatalf("past the waiting place: %s, %v", got, err)
	}
	leave()
	if status := <-waited; status != http.StatusOK {
		t.Fatalf("the waiting request got %d", status)
	}
}

// TestFairShareLongHead: past longHeadBytes of a request's head, each read of the
// rest takes a turn in the client's fair share, so a client sending long heads in
// a loop cannot make net/http work for it outside its share. With the client's
// one turn held, the read past the limit waits for it; once it is given back the
// head is read to its end, and the turn a read took is given back at the next.
func TestFairShareLongHead(t *testing.T) {
	turns := newFairShare(1, 4)
	server, client := net.Pipe()
	defer client.Close()
	fc := &framingConn{Conn: server, turns: turns, client: "pipe"}
	leave := holdTurn(t, turns, "pipe")
	head := "GET /healthz?pad=" + strings.Repeat("a", 3*longHeadBytes) + " HTTP/1.1\r\nHost: quartet\r\n\r\n"
	go io.WriteString(client, head)
	var got atomic.Int64
	done := make(chan error)
	go func() {
		buf := make([]byte, 4096) // net/http's bufio.Reader reads this much at a time
		for got.Load() < int64(len(head)) {
			n, err := fc.Read(buf)
			got.Add(int64(n))
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitFor(t, "a read past the limit waits for the turn", func() bool { return turns.users("pipe") == 2 })
	if n := got.Load(); n > longHeadBytes+4096 {
		t.Fatalf("%d bytes of the head were read while the client's turn was held", n)
	}
	leave()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := turns.running("pipe"); n != 1 {
		t.Fatalf("the read of the head's end holds %d turns, want 1 until the next read", n)
	}
	server.SetReadDeadline(time.Now()) // the next read, which has nothing to read
	fc.Read(make([]byte, 1))
	if n := turns.users("pipe"); n != 0 {
		t.Fatalf("%d turns left after the next read", n)
	}
	if fc.framing.headBytes != 0 {
		t.Fatalf("the head's count was not reset at its end: %d", fc.framing.headBytes)
	}
}

// TestFairShareLongHeadRefused: a head past net/http's limit is answered 431 and
// the connection half-closed, then closed half a second later; the turn its last
// read took is given back at the half-close, by the time the client sees the end,
// so that the client's next request does not wait out that half second.
func TestFairShareLongHeadRefused(t *testing.T) {
	a := startOneTurnApp(t, 4)
	conn := sendRaw(t, a.httpAddr, "GET /healthz?pad="+strings.Repeat("a", 80_000)+" HTTP/1.1\r\nHost: quartet\r\n\r\n")
	answer, err := io.ReadAll(conn) // to the half-close
	if err != nil || !strings.HasPrefix(string(answer), "HTTP/1.1 431 ") {
		t.Fatalf("got %q, %v; want 431", answer, err)
	}
	if n := a.server.turns.users("127.0.0.1"); n != 0 {
		t.Fatalf("%d turns held after the refused head's half-close", n)
	}
}
