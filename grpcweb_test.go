package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"quartet/internal/testkit"
	"quartet/userpb"
)

// grpcWebCall is one gRPC-Web request: frames of msgs (or raw, sent as it is),
// base64-encoded for a text content type, one chunk per message.
type grpcWebCall struct {
	name, method, contentType string
	msgs                      []proto.Message
	raw                       []byte
	header                    []string // name, value, ...
}

func grpcWebFrame(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(b))), b...)
}

func (c grpcWebCall) body() []byte {
	if c.raw != nil {
		return c.raw
	}
	var body []byte
	for _, m := range c.msgs {
		if strings.Contains(c.contentType, "text") {
			body = base64.StdEncoding.AppendEncode(body, grpcWebFrame(m))
		} else {
			body = append(body, grpcWebFrame(m)...)
		}
	}
	return body
}

// answerMessage is the message type each method answers with.
var answerMessage = map[string]func() proto.Message{
	"GetUser":       func() proto.Message { return &userpb.UserResponse{} },
	"GetAllUsers":   func() proto.Message { return &userpb.UserResponse{} },
	"CreateUsers":   func() proto.Message { return &userpb.CreateUsersResponse{} },
	"ChatWithUsers": func() proto.Message { return &userpb.ChatMessage{} },
}

// do sends c and renders the answer as the golden files hold it: the HTTP status and
// content type, each message as compact JSON, and the status and where it came.
func (c grpcWebCall) do(t *testing.T, client *http.Client, base string, wantProto int) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+c.method, bytes.NewReader(c.body()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", c.contentType)
	for i := 0; i < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != wantProto {
		t.Fatalf("%s: answered over %s", c.name, resp.Proto)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "== %s\nPOST %s %s\nHTTP %d %s\n", c.name, c.method, c.contentType, resp.StatusCode, resp.Header.Get("Content-Type"))
	if s := resp.Header.Get("Grpc-Status"); s != "" {
		fmt.Fprintf(&out, "trailers-only: grpc-status: %s, grpc-message: %s\n", s, resp.Header.Get("Grpc-Message"))
	}
	if strings.Contains(c.contentType, "text") {
		body = decodePaddedChunks(t, body)
	}
	for len(body) > 0 {
		if len(body) < 5 || len(body)-5 < int(binary.BigEndian.Uint32(body[1:])) {
			t.Fatalf("%s: frame cut short: % x", c.name, body)
		}
		n := 5 + int(binary.BigEndian.Uint32(body[1:]))
		payload := body[5:n]
		switch _, method, _ := strings.Cut(c.method[1:], "/"); {
		case body[0] == 0x80:
			fmt.Fprintf(&out, "trailer frame: %q\n", payload)
		case body[0] == 0 && answerMessage[method] != nil:
			m := answerMessage[method]()
			if err := proto.Unmarshal(payload, m); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			j, _ := protojson.Marshal(m)
			var compact bytes.Buffer
			json.Compact(&compact, j) // protojson's spacing varies on purpose
			fmt.Fprintf(&out, "message %s\n", compact.Bytes())
		default:
			fmt.Fprintf(&out, "frame %#x % x\n", body[0], payload)
		}
		body = body[n:]
	}
	return out.String()
}

// decodePaddedChunks decodes base64 made of padded chunks, as gRPC-Web text answers are.
func decodePaddedChunks(t *testing.T, text []byte) []byte {
	t.Helper()
	var out []byte
	for len(text) > 0 {
		end := len(text)
		if i := bytes.IndexByte(text, '='); i >= 0 {
			end = min(end, i/4*4+4)
		}
		var err error
		if out, err = base64.StdEncoding.AppendDecode(out, text[:end]); err != nil {
			t.Fatalf("answer %q: %v", text, err)
		}
		text = text[end:]
	}
	return out
}

// grpcWebTransports runs check against a new service for each of HTTP/1.1 (the
// service's own listener) and HTTP/2 (its handler behind a TLS test server).
func grpcWebTransports(t *testing.T, cfg config, check func(t *testing.T, client *http.Client, base string, httpMajor int)) {
	t.Run("HTTP/1.1", func(t *testing.T) {
		a, _ := startApp(t, cfg)
		check(t, &http.Client{}, "http://"+a.httpAddr, 1)
	})
	t.Run("HTTP/2", func(t *testing.T) {
		a, _ := startApp(t, cfg)
		ts := httptest.NewUnstartedServer(a.http.Handler)
		ts.EnableHTTP2 = true
		ts.StartTLS()
		defer ts.Close()
		check(t, ts.Client(), ts.URL, 2)
	})
}

const (
	webGetUser     = "/user.UserService/GetUser"
	webGetAllUsers = "/user.UserService/GetAllUsers"
	webCreateUsers = "/user.UserService/CreateUsers"
)

// TestGRPCWeb calls the service with raw gRPC-Web frames in every content type,
// unary, streaming both ways, and with every kind of bad input, over HTTP/1.1 and
// HTTP/2; each answer is HTTP 200 with its status in a trailer frame or, with no
// message, in the headers (testdata/grpcweb/open.txt).
func TestGRPCWeb(t *testing.T) {
	user := func(id int32) proto.Message { return &userpb.GetUserRequest{Id: id} }
	newUser := func(name, email string) proto.Message { return &userpb.CreateUserRequest{Name: name, Email: email} }
	chat := func(text string) proto.Message { return &userpb.ChatMessage{UserName: "Ann", Message: text} }
	req1 := grpcWebFrame(user(1))
	text1 := base64.StdEncoding.EncodeToString(req1)
	calls := []grpcWebCall{
		{name: "unary", method: webGetUser, contentType: "application/grpc-web+proto", msgs: []proto.Message{user(1)}},
		{name: "unary, no subtype", method: webGetUser, contentType: "application/grpc-web", msgs: []proto.Message{user(2)}},
		{name: "unary, text", method: webGetUser, contentType: "application/grpc-web-text+proto", msgs: []proto.Message{user(3)}},
		{name: "unary, text, no subtype", method: webGetUser, contentType: "application/grpc-web-text", msgs: []proto.Message{user(4)}},
		{name: "unary, text in two padded chunks", method: webGetUser, contentType: "application/grpc-web-text",
			raw: []byte(base64.StdEncoding.EncodeToString(req1[:5]) + base64.StdEncoding.EncodeToString(req1[5:]))},
		{name: "not found: trailers-only", method: webGetUser, contentType: "application/grpc-web+proto", msgs: []proto.Message{user(99)}},
		{name: "not found, text: trailers-only", method: webGetUser, contentType: "application/grpc-web-text+proto", msgs: []proto.Message{user(99)}},
		{name: "invalid id", method: webGetUser, contentType: "application/grpc-web", msgs: []proto.Message{user(0)}},
		{name: "server streaming", method: webGetAllUsers, contentType: "application/grpc-web+proto", msgs: []proto.Message{&userpb.Empty{}}},
		{name: "server streaming, text", method: webGetAllUsers, contentType: "application/grpc-web-text+proto", msgs: []proto.Message{&userpb.Empty{}}},
		{name: "client streaming: the whole stream in the body", method: webCreateUsers, contentType: "application/grpc-web+proto",
			msgs: []proto.Message{newUser("Web One", "web1@example.com"), newUser("Web Two", "web2@example.com")}},
		{name: "client streaming, one invalid: none stored", method: webCreateUsers, contentType: "application/grpc-web-text",
			msgs: []proto.Message{newUser("Web Three", "web3@example.com"), newUser("", "nobody")}},
		{name: "bidirectional streaming: the whole stream in the body", method: "/user.UserService/ChatWithUsers", contentType: "application/grpc-web-text+proto",
			msgs: []proto.Message{chat("hello"), chat("again")}},
		{name: "unknown method", method: "/user.UserService/Nope", contentType: "application/grpc-web+proto", msgs: []proto.Message{user(1)}},
		{name: "unknown service", method: "/user.Nothing/GetUser", contentType: "application/grpc-web+proto", msgs: []proto.Message{user(1)}},
		{name: "the health service", method: "/grpc.health.v1.Health/Check", contentType: "application/grpc-web+proto", msgs: []proto.Message{&userpb.Empty{}}},
		{name: "length prefix past the body", method: webGetUser, contentType: "application/grpc-web+proto", raw: req1[:len(req1)-1]},
		{name: "no message", method: webGetUser, contentType: "application/grpc-web+proto", raw: []byte{}},
		{name: "message over the gRPC limit", method: webGetUser, contentType: "application/grpc-web+proto",
			raw: binary.BigEndian.AppendUint32([]byte{0}, uint32(defaultGRPCLimits().maxMessageBytes+1))},
		{name: "body over the limit", method: webCreateUsers, contentType: "application/grpc-web+proto",
			raw: bytes.Repeat(grpcWebFrame(newUser("Bulk", "bulk@example.com")), int(defaultGRPCLimits().streamWindowBytes)/20)},
		{name: "bad base64", method: webGetUser, contentType: "application/grpc-web-text", raw: []byte(text1[:8] + "*" + text1[9:])},
		{name: "base64 cut short", method: webGetUser, contentType: "application/grpc-web-text", raw: []byte(text1[:len(text1)-1])},
		{name: "malformed grpc-timeout", method: webGetUser, contentType: "application/grpc-web", msgs: []proto.Message{user(1)}, header: []string{"Grpc-Timeout", "soon"}},
		{name: "after the streams: two users more", method: webGetAllUsers, contentType: "application/grpc-web", msgs: []proto.Message{&userpb.Empty{}}},
	}
	cfg := testConfig()
	cfg.corsOrigins = "https://app.example"
	grpcWebTransports(t, cfg, func(t *testing.T, client *http.Client, base string, httpMajor int) {
		var got strings.Builder
		for _, c := range calls {
			got.WriteString(c.do(t, client, base, httpMajor))
		}
		testkit.CheckGolden(t, filepath.Join("testdata", "grpcweb", "open.txt"), []byte(got.String()))
	})
}

// TestGRPCWebAuth: the gRPC server's authentication holds for gRPC-Web calls, and
// its call log names the caller (testdata/grpcweb/auth.txt).
func TestGRPCWebAuth(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	grpcWebTransports(t, cfg, func(t *testing.T, client *http.Client, base string, httpMajor int) {
		bearer := func(scope string) []string { return []string{"Authorization", "Bearer " + testToken(t, scope)} }
		one := []proto.Message{&userpb.GetUserRequest{Id: 1}}
		users := []proto.Message{&userpb.CreateUserRequest{Name: "Web", Email: "web@example.com"}}
		var got strings.Builder
		for _, c := range []grpcWebCall{
			{name: "no token", method: webGetUser, contentType: "application/grpc-web+proto", msgs: one},
			{name: "a bad token", method: webGetUser, contentType: "application/grpc-web+proto", msgs: one, header: []string{"Authorization", "Bearer x.y.z"}},
			{name: "a token", method: webGetUser, contentType: "application/grpc-web+proto", msgs: one, header: bearer("")},
			{name: "a write without the write scope", method: webCreateUsers, contentType: "application/grpc-web-text", msgs: users, header: bearer("")},
			{name: "a write with it", method: webCreateUsers, contentType: "application/grpc-web-text", msgs: users, header: bearer("write")},
		} {
			got.WriteString(c.do(t, client, base, httpMajor))
		}
		testkit.CheckGolden(t, filepath.Join("testdata", "grpcweb", "auth.txt"), []byte(got.String()))
	})
}

// TestGRPCWebSharesGRPC: a gRPC-Web call goes through the gRPC server's interceptors
// (the work queue, authentication, the call log, the metrics) and takes no HTTP slot
// besides: with one work slot a client, and another client beside it, a call that
// held one while waiting for another would wait for itself until its deadline.
func TestGRPCWebSharesGRPC(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	cfg.admission.WorkSlots, cfg.admission.ClientSlots = 2, 1
	a, logs := startApp(t, cfg)
	base := "http://" + a.httpAddr
	before := scrape(t, base)
	other, err := a.door.Queue.Acquire(t.Context(), "another client")
	if err != nil {
		t.Fatal(err)
	}
	call := grpcWebCall{name: "one slot", method: webGetUser, contentType: "application/grpc-web+proto",
		msgs:   []proto.Message{&userpb.GetUserRequest{Id: 1}},
		header: []string{"Authorization", "Bearer " + testToken(t, ""), "Grpc-Timeout", "10S", "Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	if got := call.do(t, &http.Client{}, base, 1); !strings.Contains(got, `trailer frame: "grpc-status: 0\r\n"`) {
		t.Fatalf("answer:\n%s", got)
	}
	other()
	after := scrape(t, base)
	for _, m := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"surface", "grpc", "route", webGetUser, "code", "OK"}, 1},
		{[]string{"surface", "grpc-web", "route", routeGRPCWeb, "code", "200"}, 1},
	} {
		if got := testkit.FindSample(after, "quartet_requests_total", m.labels...) - testkit.FindSample(before, "quartet_requests_total", m.labels...); got != m.want {
			t.Errorf("quartet_requests_total%q moved by %v, want %v", m.labels, got, m.want)
		}
	}
	want := "msg=grpc method=" + webGetUser + " code=OK"
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, want) {
			if !strings.Contains(line, "sub=alice") || !strings.Contains(line, "trace_id=0af7651916cd43dd8448eb211c80319c") {
				t.Errorf("the call log names no caller or trace: %s", line)
			}
			return
		}
	}
	t.Errorf("no %q in the log:\n%s", want, logs)
}

// TestGRPCWebCORS: with -cors-origins, a listed origin's preflight allows the
// headers gRPC-Web clients send and its answers expose the status; another origin
// gets no CORS headers.
func TestGRPCWebCORS(t *testing.T) {
	cfg := testConfig()
	cfg.corsOrigins = "https://app.example"
	a, _ := startApp(t, cfg)
	send := func(method, origin string, header ...string) *http.Response {
		var body io.Reader
		if method == http.MethodPost {
			body = bytes.NewReader(grpcWebFrame(&userpb.GetUserRequest{Id: 99}))
		}
		req, _ := http.NewRequest(method, "http://"+a.httpAddr+webGetUser, body)
		req.Header.Set("Origin", origin)
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	asked := "content-type,x-grpc-web,x-user-agent,grpc-timeout,authorization"
	preflight := send(http.MethodOptions, "https://app.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", asked)
	allowed := strings.ToLower(preflight.Header.Get("Access-Control-Allow-Headers"))
	for h := range strings.SplitSeq(asked, ",") {
		if !strings.Contains(allowed, h) {
			t.Errorf("preflight: %s not in Access-Control-Allow-Headers %q", h, allowed)
		}
	}
	answer := send(http.MethodPost, "https://app.example", "Content-Type", "application/grpc-web+proto", "X-Grpc-Web", "1")
	exposed := strings.ToLower(answer.Header.Get("Access-Control-Expose-Headers"))
	if answer.Header.Get("Grpc-Status") != "5" || answer.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(exposed, "grpc-status") || !strings.Contains(exposed, "grpc-message") {
		t.Errorf("answer to a listed origin: %v", answer.Header)
	}
	for _, resp := range []*http.Response{
		send(http.MethodOptions, "https://other.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", asked),
		send(http.MethodPost, "https://other.example", "Content-Type", "application/grpc-web+proto"),
	} {
		for k := range resp.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s from another origin: %s: %s", resp.Request.Method, k, resp.Header.Get(k))
			}
		}
	}
}

// TestGRPCWebClients runs e2e/grpcweb/grpcweb.test.mjs: Connect-ES's gRPC-Web
// transport and Google's grpc-web runtime against the service with authentication
// on, every answer compared with REST's. The clients learn the messages from
// userpb's FileDescriptorProto, passed in QUARTET_USERPB_DESCRIPTOR. It needs Node
// and `npm ci` in e2e/grpcweb/; without them it skips, except under CI, where it fails.
func TestGRPCWebClients(t *testing.T) {
	testkit.RequireNode(t, filepath.Join("e2e", "grpcweb"), filepath.Join("@connectrpc", "connect-node"), filepath.Join("@bufbuild", "protobuf"), "grpc-web", "xhr2")
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	a, _ := startApp(t, cfg)
	descriptor, err := proto.Marshal(protodesc.ToFileDescriptorProto(userpb.File_user_proto))
	if err != nil {
		t.Fatal(err)
	}
	runNode(t, []string{"QUARTET_URL=http://" + a.httpAddr, "QUARTET_TOKEN=" + testToken(t, "write"),
		"QUARTET_USERPB_DESCRIPTOR=" + base64.StdEncoding.EncodeToString(descriptor)},
		filepath.Join("e2e", "grpcweb", "grpcweb.test.mjs"))
}

// BenchmarkGetUser is GetUser's cost natively and over gRPC-Web (binary, HTTP/1.1
// keep-alive), against one service from one address with 32 concurrent clients, as
// the load harness's (over gRPC-Web a connection each, natively one channel).
func BenchmarkGetUser(b *testing.B) {
	cfg := testConfig()
	a, err := start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.shutdown() })
	b.Run("gRPC", func(b *testing.B) {
		conn, err := grpc.NewClient(a.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		c := userpb.NewUserServiceClient(conn)
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.GetUser(context.Background(), &userpb.GetUserRequest{Id: 1}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("gRPC-Web", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
		body := grpcWebFrame(&userpb.GetUserRequest{Id: 1})
		url := "http://" + a.httpAddr + webGetUser
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := client.Post(url, "application/grpc-web+proto", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.HasSuffix(answer, []byte("grpc-status: 0\r\n")) {
					b.Errorf("answer % x", answer)
					return
				}
			}
		})
	})
}

// TestGRPCWebStreamsAsItGoes: GetAllUsers' first user arrives while the stream still
// runs (the next pauses an hour), in both encodings. Were frames held back, the
// first would come only with the end of the call, which its grpc-timeout brings, and
// the trailer frame with it.
func TestGRPCWebStreamsAsItGoes(t *testing.T) {
	cfg := testConfig()
	cfg.streamDelay = time.Hour
	a, _ := startApp(t, cfg)
	for _, contentType := range []string{"application/grpc-web+proto", "application/grpc-web-text+proto"} {
		text := strings.Contains(contentType, "text")
		call := grpcWebCall{contentType: contentType, msgs: []proto.Message{&userpb.Empty{}}}
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.httpAddr+webGetAllUsers, bytes.NewReader(call.body()))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Grpc-Timeout", "20S")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 5+57) // the frame of user 1, Alice Johnson
		if text {
			first = make([]byte, base64.StdEncoding.EncodedLen(len(first)))
		}
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatal(err)
		}
		if text {
			first = decodePaddedChunks(t, first)
		}
		var u userpb.UserResponse
		if err := proto.Unmarshal(first[5:], &u); err != nil || u.GetId() != 1 {
			t.Errorf("%s: first frame % x: %v, %v", contentType, first, &u, err)
		}
		cancel()
		if rest, err := io.ReadAll(resp.Body); err == nil {
			t.Errorf("%s: the whole answer had come with the first user: %q", contentType, rest)
		}
		resp.Body.Close()
	}
}

// TestGRPCWebCallTime: a gRPC-Web call has webCallTime from its request's arrival,
// a client's longer grpc-timeout cut to it, and then ends with DeadlineExceeded in
// its own trailer frame: a stream that pauses (GetAllUsers) or waits for shutdown
// (the health service's Watch) as much as one that sends. A CreateUsers call whose
// body outlasts the call's time is refused so, before it runs, and stores nothing.
func TestGRPCWebCallTime(t *testing.T) {
	cfg := grpcConfig(func(l *grpcLimits) { l.webCallTime = 300 * time.Millisecond })
	cfg.streamDelay = time.Hour
	a, _ := startApp(t, cfg)
	base := "http://" + a.httpAddr
	client := &http.Client{Timeout: 20 * time.Second} // far past the call's time: an answer that never ends fails
	const deadline = `trailer frame: "grpc-message: context deadline exceeded\r\ngrpc-status: 4\r\n"`
	for _, c := range []grpcWebCall{
		{name: "a paused stream", method: webGetAllUsers, contentType: "application/grpc-web+proto", msgs: []proto.Message{&userpb.Empty{}}},
		{name: "a paused stream, a longer timeout of its own", method: webGetAllUsers, contentType: "application/grpc-web-text", msgs: []proto.Message{&userpb.Empty{}}, header: []string{"Grpc-Timeout", "99999999H"}},
		{name: "a stream waiting for shutdown", method: "/grpc.health.v1.Health/Watch", contentType: "application/grpc-web", msgs: []proto.Message{&healthpb.HealthCheckRequest{}}},
	} {
		// One message (a user, or SERVING), then the status.
		if got := c.do(t, client, base, 1); !strings.HasSuffix(got, deadline+"\n") || strings.Count(got, "\nmessage {\"id\":1,")+strings.Count(got, "\nframe 0x0 08 01\n") != 1 {
			t.Errorf("%s:\n%s", c.name, got)
		}
	}
	body, sending := io.Pipe()
	go func() {
		users := grpcWebFrame(&userpb.CreateUserRequest{Name: "Late", Email: "late@example.com"})
		sending.Write(users)
		time.Sleep(3 * cfg.grpcLimits.webCallTime) // the body outlasts the call's time
		sending.Write(users)
		sending.Close()
	}()
	resp, err := client.Post(base+webCreateUsers, "application/grpc-web+proto", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Grpc-Status") != "4" || len(a.store.Users()) != 6 {
		t.Errorf("a CreateUsers body past the call's time: %v; %d users, want the demo's 6", resp.Header, len(a.store.Users()))
	}
}

// TestGRPCWebClientsLeaveMidStream: clients that leave GetAllUsers after its first
// user, in both encodings, leave no goroutine behind: their calls end with them.
func TestGRPCWebClientsLeaveMidStream(t *testing.T) {
	cfg := testConfig()
	cfg.streamDelay = time.Hour
	a, _ := startApp(t, cfg)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	before := runtime.NumGoroutine()
	const calls = 20
	for i := range calls {
		contentType := []string{"application/grpc-web+proto", "application/grpc-web-text"}[i%2]
		ctx, cancel := context.WithCancel(t.Context())
		call := grpcWebCall{contentType: contentType, msgs: []proto.Message{&userpb.Empty{}}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.httpAddr+webGetAllUsers, bytes.NewReader(call.body()))
		req.Header.Set("Content-Type", contentType)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 5)); err != nil { // the first user has come
			t.Fatal(err)
		}
		cancel()
		resp.Body.Close()
	}
	testkit.Eventually(t, func() error {
		if n := runtime.NumGoroutine(); n > before+calls/4 { // room for the runtime's own, not for one a call
			return fmt.Errorf("%d goroutines, %d before %d calls whose clients left", n, before, calls)
		}
		return nil
	})
}
