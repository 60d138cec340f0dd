package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"quartet/userpb"
)

// TestHostileQuick runs the hostile check's quick mode against the real service.
// CI has no time for the full check; this proves that every attack kind runs,
// sends all its requests and gets them answered, and that the report prints. The
// verdict itself is not asserted: it is about the service, not the harness.
func TestHostileQuick(t *testing.T) {
	bin := buildQuartet(t)
	cfg, err := parseHostileFlags([]string{"-quick", "-bin", bin, "-work", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rep, err := hostileCheck(context.Background(), cfg, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	attacks := (&hostile{cfg: cfg}).attacks()
	if len(rep.kinds) != len(attacks) {
		t.Fatalf("%d kinds ran, want %d", len(rep.kinds), len(attacks))
	}
	for i, k := range rep.kinds {
		want := cfg.requests
		switch {
		case strings.HasPrefix(k.name, "gRPC"):
			want = cfg.grpcStreams
		case strings.HasPrefix(k.name, "WebSocket"):
			want = cfg.sizes.wsSockets
		}
		if k.name != attacks[i].name || k.sent != want || !k.held() {
			t.Errorf("%s: sent %d of %d, held %v: %s%s", k.name, k.sent, want, k.held(), k.summary(), k.failNote())
		}
	}
	if len(rep.baseline.lat) == 0 || len(rep.control.lat) == 0 || len(rep.during.lat) == 0 || rep.baselineRSS == 0 || rep.finalRSS == 0 {
		t.Errorf("no legitimate calls or no RSS measured: baseline %d calls, control %d, during %d calls, RSS %d then %d",
			len(rep.baseline.lat), len(rep.control.lat), len(rep.during.lat), rep.baselineRSS, rep.finalRSS)
	}
	var out bytes.Buffer
	rep.print(&out)
	for _, a := range attacks {
		if !strings.Contains(out.String(), a.name) {
			t.Errorf("the report has no row for %q:\n%s", a.name, out.String())
		}
	}
	if !strings.Contains(out.String(), "reference: beside a busy loop per CPU") {
		t.Errorf("the report does not give the control's figure:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "verdict: ") {
		t.Errorf("the report has no verdict:\n%s", out.String())
	}
}

// TestHostileDocumentSizes checks the full-size attacks have the sizes the check
// states, and that the OData ones fit the service's 64 KiB header limit: a request
// refused for its header would measure net/http, not OData.
func TestHostileDocumentSizes(t *testing.T) {
	s := fullSizes
	for _, c := range []struct {
		name     string
		got      int
		min, max int
	}{
		{"overlap document", len(overlapDoc(s.overlapFields)), 4 << 10, 6 << 10},
		{"nested aliases document", len(nestedAliasesDoc(s.nestedAliases)), 2 << 10, 4 << 10},
		{"45 operations document", len(manyOperationsDoc(s.operations, s.opFields)), 250 << 10, 290 << 10},
		{"directives document", len(directivesDoc(s.directives)), 95 << 10, 105 << 10},
		{"distinct document", len(bigDoc(999, s.docBytes)), 16<<10 - 30, 16<<10 + 24},
		{"$orderby path", len(orderbyPath(s.orderbyKeys)), 50 << 10, 60 << 10},
		{"$filter path", len(filterPath(s.filterTerms)), 45 << 10, 60 << 10},
	} {
		if c.got < c.min || c.got > c.max {
			t.Errorf("%s: %d bytes, want %d to %d", c.name, c.got, c.min, c.max)
		}
	}
	if n := strings.Count(overlapDoc(300), "user(id:"); n != 300 {
		t.Errorf("overlap document: %d fields", n)
	}
	if n := strings.Count(manyOperationsDoc(45, 1990), "query O"); n != 45 {
		t.Errorf("operations document: %d operations", n)
	}
	if n := strings.Count(variablesDoc(3000), "$v"); n != 3000 {
		t.Errorf("variables document: %d variables", n)
	}
	if n := strings.Count(bigDoc(1, s.docBytes), "createdAt"); n >= 2000 {
		t.Errorf("distinct document: %d fields, over the service's 2,000", n)
	}
	if bigDoc(1, 1000) == bigDoc(2, 1000) {
		t.Error("distinct documents for different requests are the same")
	}
	doc := manyOperationsDoc(2, 3) + "\"é"
	for _, op := range []string{"O0", ""} {
		post := markedPOST(doc, op)
		for _, k := range []int{7, 12} {
			var body map[string]string
			req := post(k)
			if err := json.Unmarshal(req.body, &body); err != nil || body["operationName"] != op || body["query"] != doc+"\n#"+strconv.Itoa(k) {
				t.Errorf("GraphQL request body %s: %v", req.body, err)
			}
		}
	}
	q, err := url.ParseQuery(strings.TrimPrefix(markedGET(doc)(7).path, "/graphql?"))
	if err != nil || q.Get("query") != doc+"\n#7" {
		t.Errorf("GraphQL GET query %q: %v", q.Get("query"), err)
	}
}

func TestTallyOutcomes(t *testing.T) {
	var k tally
	ctx := context.Background()
	k.answered("400", time.Millisecond, 10)
	k.answered("200 COST_LIMIT_EXCEEDED", 2*time.Millisecond, 20)
	k.answered("400", 3*time.Millisecond, 30)
	k.failed(ctx, context.DeadlineExceeded)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	k.failed(stopped, context.Canceled)
	k.sorted()
	if got, want := k.outcomeList(), "400 x2, 200 COST_LIMIT_EXCEEDED x1, stopped x1, timeout x1"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if k.failures != 1 || k.firstErr != context.DeadlineExceeded {
		t.Errorf("failures %d (%v), want 1: a request stopped with its kind is not its own failure", k.failures, k.firstErr)
	}
	if nearestRank(k.bytes, 50) != 20 || nearestRank(k.bytes, 100) != 30 {
		t.Errorf("answer sizes %v", k.bytes)
	}
}

// TestWebSocketRefusalsCounted checks that the WebSocket kind tells each way of
// refusing apart: a refused upgrade, a close code after connection_init, and an
// error message for one subscription on a socket that stays open.
func TestWebSocketRefusalsCounted(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := conns.Add(1)
		if n == 1 {
			http.Error(w, "too many sockets", http.StatusTooManyRequests)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			return
		}
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil { // connection_init
			return
		}
		if n == 2 {
			c.Close(4429, "too many sockets")
			return
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_ack"}`))
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if bytes.Contains(b, []byte(`"id":"3"`)) {
				c.Write(ctx, websocket.MessageText, []byte(`{"id":"3","type":"error","payload":[{"message":"too many subscriptions"}]}`))
			}
		}
	}))
	defer srv.Close()
	k := attackWebSockets(context.Background(), &net.Dialer{}, strings.TrimPrefix(srv.URL, "http://"), 3, 3, 200*time.Millisecond, 5*time.Second)
	want := "closed 4429 at init x1, open, some subscriptions refused x1, upgrade 429 x1"
	if got := k.outcomeList(); got != want || k.sent != 3 || !k.held() {
		t.Errorf("outcomes %q, sent %d, held %v (%v); want %q", got, k.sent, k.held(), k.firstErr, want)
	}
	if !strings.Contains(k.detail, "subscriptions sent 3, refused by error message 1") {
		t.Errorf("detail %q", k.detail)
	}
}

// refusingUsers is a CreateUsers that refuses a stream's user number max+1 with
// ResourceExhausted, as a bounded service does.
type refusingUsers struct {
	userpb.UnimplementedUserServiceServer
	max int
}

func (s *refusingUsers) CreateUsers(st grpc.ClientStreamingServer[userpb.CreateUserRequest, userpb.CreateUsersResponse]) error {
	for n := 1; ; n++ {
		if _, err := st.Recv(); err != nil {
			return err
		}
		if n > s.max {
			return status.Error(codes.ResourceExhausted, "too many users on one stream")
		}
	}
}

// TestCreateUsersRefusalCounted checks that a stream the service refuses counts
// as answered with its status code, and one it lets through as held open.
func TestCreateUsersRefusalCounted(t *testing.T) {
	for _, c := range []struct {
		max  int
		want string
	}{{max: 10, want: "ResourceExhausted x2"}, {max: 1 << 30, want: "held open x2"}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		userpb.RegisterUserServiceServer(srv, &refusingUsers{max: c.max})
		go srv.Serve(ln)
		k := attackCreateUsers(context.Background(), &net.Dialer{}, ln.Addr().String(), 2, 2, 1000, 300*time.Millisecond, 5*time.Second)
		srv.Stop()
		if got := k.outcomeList(); got != c.want || k.sent != 2 || !k.held() {
			t.Errorf("max %d: outcomes %q, sent %d, held %v (%v); want %q", c.max, got, k.sent, k.held(), k.firstErr, c.want)
		}
	}
}

// TestAttackHTTPOutcomes checks that the HTTP attackers count each answer by its
// status and error code, with its size, that a request the service leaves
// unanswered past the timeout is a failure, and that the kind gives up once as
// many requests as there are attackers have failed.
func TestAttackHTTPOutcomes(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("k") {
		case "hang":
			<-release
		case "0":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"BadRequest","message":"x"}}`)
		default:
			io.WriteString(w, `{"data":null}`)
		}
	}))
	defer srv.Close()
	defer close(release)
	addr := strings.TrimPrefix(srv.URL, "http://")
	k := attackHTTP(context.Background(), &net.Dialer{}, addr, 3, 2, 5*time.Second, func(k int) hostileRequest {
		return hostileRequest{method: "GET", path: "/?k=" + strconv.Itoa(k)}
	})
	if got, want := k.outcomeList(), "200 x2, 400 BadRequest x1"; got != want || !k.held() || nearestRank(k.bytes, 100) != 45 {
		t.Errorf("outcomes %q (held %v, sizes %v), want %q", got, k.held(), k.bytes, want)
	}
	k = attackHTTP(context.Background(), &net.Dialer{}, addr, 10, 2, 200*time.Millisecond, func(int) hostileRequest {
		return hostileRequest{method: "GET", path: "/?k=hang"}
	})
	// A third request may be on its way when the second fails; it is stopped.
	if got := k.outcomeList(); k.outcomes["timeout"] != 2 || k.failures != 2 || !k.gaveUp || k.sent > 3 {
		t.Errorf("outcomes %q, gave up %v, sent %d; want two timeouts and the kind given up", got, k.gaveUp, k.sent)
	}
}

// TestGuardKillsPastCeiling checks the guard that protects the machine: a process
// over the RSS ceiling is killed and the kind's context cancelled.
func TestGuardKillsPastCeiling(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	p := &proc{name: "sleep", cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reason, peak := startGuard(ctx, p, 1, cancel).wait()
	select {
	case <-p.exited:
	default:
		t.Fatal("the process is still running")
	}
	if !strings.Contains(reason, "ceiling") || peak <= 1 || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("reason %q, peak %d, context %v", reason, peak, ctx.Err())
	}
}
