package grpcweb

import (
	"quartet/internal/admission"

	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// testLimits leave room for one call's largest body, not two.
var testLimits = limits(1<<10, 1100)

// limits are Limits of callBytes a call and total bytes in all.
func limits(callBytes, total int64) Limits {
	return Limits{CallBytes: callBytes, Bodies: admission.NewBudget("request body bytes", 0, total, nil),
		CallTime: time.Minute,
		ClientOf: func(r *http.Request) string { return admission.Of(r.RemoteAddr) }}
}

// healthServer is a gRPC server with grpc-go's health service: Check is unary,
// Watch streams and never ends by itself.
func healthServer(t testing.TB) *grpc.Server {
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64))
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	t.Cleanup(srv.Stop)
	return srv
}

// gzipped is b gzip-compressed.
func gzipped(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// frame is one length-prefixed gRPC-Web frame.
func frame(flag byte, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{flag}, uint32(len(payload))), payload...)
}

func checkRequest(service string) []byte {
	b, _ := proto.Marshal(&healthpb.HealthCheckRequest{Service: service})
	return frame(0, b)
}

// answer is what a test sees of a gRPC-Web answer: the HTTP status, the status
// carried by headers (trailers-only) or the trailer frame, and the data frames.
type answer struct {
	httpStatus  int
	contentType string
	status      string // "grpc-status: N\r\n[grpc-message: ...\r\n]", from wherever it came
	trailersIn  string // "headers" or "frame"
	messages    [][]byte
}

// readAnswer parses a gRPC-Web answer strictly: frames whole, the trailer frame last.
func readAnswer(t testing.TB, resp *http.Response, text bool) answer {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if text {
		if body, err = decodeChunks(nil, body); err != nil {
			t.Fatalf("answer is not padded base64: %v", err)
		}
	}
	a := answer{httpStatus: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	if s := resp.Header.Get("Grpc-Status"); s != "" {
		a.status, a.trailersIn = "grpc-status: "+s+"\r\n", "headers"
		if m := resp.Header.Get("Grpc-Message"); m != "" {
			a.status += "grpc-message: " + m + "\r\n"
		}
	}
	for len(body) > 0 {
		if len(body) < 5 || len(body)-5 < int(binary.BigEndian.Uint32(body[1:])) {
			t.Fatalf("frame cut short: % x", body)
		}
		n := 5 + int(binary.BigEndian.Uint32(body[1:]))
		if a.status != "" {
			t.Fatalf("a frame after the trailers: % x", body)
		}
		switch body[0] {
		case 0:
			a.messages = append(a.messages, body[5:n])
		case 0x80:
			a.status, a.trailersIn = string(body[5:n]), "frame"
		default:
			t.Fatalf("frame flag %#x", body[0])
		}
		body = body[n:]
	}
	return a
}

func post(t *testing.T, url, contentType string, body []byte, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHandler(t *testing.T) {
	srv := healthServer(t)
	ts := httptest.NewServer(Handler(srv, testLimits))
	defer ts.Close()
	serving, _ := proto.Marshal(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
	check := "/grpc.health.v1.Health/Check"
	b64 := func(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }
	req := checkRequest("up")
	for _, c := range []struct {
		name, path, contentType string
		body                    []byte
		header                  []string
		status, trailersIn      string
		messages                int
	}{
		{"binary", check, "application/grpc-web+proto", req, nil, "grpc-status: 0\r\n", "frame", 1},
		{"binary, no subtype", check, "application/grpc-web", req, nil, "grpc-status: 0\r\n", "frame", 1},
		{"text", check, "application/grpc-web-text+proto", b64(req), nil, "grpc-status: 0\r\n", "frame", 1},
		{"text, no subtype", check, "application/grpc-web-text", b64(req), nil, "grpc-status: 0\r\n", "frame", 1},
		{"text in padded chunks", check, "application/grpc-web-text", append(b64(req[:4]), b64(req[4:])...), nil, "grpc-status: 0\r\n", "frame", 1},
		{"content type parameters and case", check, "Application/GRPC-Web+Proto; charset=binary", req, nil, "grpc-status: 0\r\n", "frame", 1},
		{"error: trailers-only", check, "application/grpc-web+proto", checkRequest("down"), nil, "grpc-status: 5\r\ngrpc-message: unknown service\r\n", "headers", 0},
		{"text error: trailers-only", check, "application/grpc-web-text+proto", b64(checkRequest("down")), nil, "grpc-status: 5\r\ngrpc-message: unknown service\r\n", "headers", 0},
		{"streaming, ended by its deadline (the first message long sent)", "/grpc.health.v1.Health/Watch", "application/grpc-web+proto", req, []string{"Grpc-Timeout", "1S"}, "grpc-message: Stream has ended.\r\ngrpc-status: 1\r\n", "frame", 1},
		{"text streaming", "/grpc.health.v1.Health/Watch", "application/grpc-web-text+proto", b64(req), []string{"Grpc-Timeout", "1S"}, "grpc-message: Stream has ended.\r\ngrpc-status: 1\r\n", "frame", 1},
		{"unknown method", "/grpc.health.v1.Health/Nope", "application/grpc-web+proto", req, nil, "grpc-status: 12\r\ngrpc-message: unknown method Nope for service grpc.health.v1.Health\r\n", "headers", 0},
		{"unknown service", "/no.Such/Thing", "application/grpc-web+proto", req, nil, "grpc-status: 12\r\ngrpc-message: unknown service no.Such\r\n", "headers", 0},
		{"length prefix past the body", check, "application/grpc-web+proto", req[:len(req)-1], nil, "grpc-status: 13\r\ngrpc-message: unexpected EOF\r\n", "headers", 0},
		{"no message", check, "application/grpc-web+proto", nil, nil, "grpc-status: 13\r\ngrpc-message: cardinality violation: received no request message from non-client-streaming RPC\r\n", "headers", 0},
		{"message over the server's limit", check, "application/grpc-web+proto", checkRequest(strings.Repeat("x", 100)), nil, "grpc-status: 8\r\ngrpc-message: grpc: received message larger than max (102 vs. 64)\r\n", "headers", 0},
		{"body over the limit", check, "application/grpc-web+proto", bytes.Repeat(req, int(testLimits.CallBytes)/len(req)+1), nil, "grpc-status: 8\r\ngrpc-message: gRPC-Web: the request body is larger than 1024 bytes\r\n", "headers", 0},
		{"bad base64", check, "application/grpc-web-text", []byte("AAAA*AAA"), nil, "grpc-status: 3\r\ngrpc-message: gRPC-Web: the request body is not valid base64\r\n", "headers", 0},
		{"base64 cut short", check, "application/grpc-web-text", b64(req)[:9], nil, "grpc-status: 3\r\ngrpc-message: gRPC-Web: the request body is not valid base64\r\n", "headers", 0},
		{"a message percent-encoded", check, "application/grpc-web", req, []string{"Grpc-Timeout", "5%"}, "grpc-status: 13\r\ngrpc-message: Bad Request: malformed grpc-timeout: transport: timeout unit is not recognized: \"5%25\"\r\n", "headers", 0},
		{"a content-coded body", check, "application/grpc-web", gzipped(req), []string{"Content-Encoding", "gzip"}, "grpc-status: 12\r\ngrpc-message: gRPC-Web: a request body's Content-Encoding is not decoded; grpc-encoding compresses messages\r\n", "headers", 0},
		{"malformed grpc-timeout", check, "application/grpc-web", req, []string{"Grpc-Timeout", "soon"}, "grpc-status: 13\r\ngrpc-message: Bad Request: malformed grpc-timeout: strconv.ParseUint: parsing \"soo\": invalid syntax\r\n", "headers", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Contains(strings.ToLower(c.contentType), "text")
			resp := post(t, ts.URL+c.path, c.contentType, c.body, c.header...)
			a := readAnswer(t, resp, text)
			wantType, _, _ := strings.Cut(strings.ToLower(c.contentType), ";")
			if a.httpStatus != http.StatusOK || a.contentType != wantType {
				t.Errorf("HTTP %d %q, want 200 %q", a.httpStatus, a.contentType, wantType)
			}
			if a.status != c.status || a.trailersIn != c.trailersIn {
				t.Errorf("status in %s %q, want in %s %q", a.trailersIn, a.status, c.trailersIn, c.status)
			}
			if len(a.messages) != c.messages {
				t.Fatalf("%d messages, want %d", len(a.messages), c.messages)
			}
			for _, m := range a.messages {
				if !bytes.Equal(m, serving) {
					t.Errorf("message % x, want SERVING (% x)", m, serving)
				}
			}
		})
	}
}

// TestStoppedServer: grpc-go's ServeHTTP writes nothing once stopped; the client
// still gets a status.
func TestStoppedServer(t *testing.T) {
	srv := healthServer(t)
	srv.Stop()
	ts := httptest.NewServer(Handler(srv, testLimits))
	defer ts.Close()
	a := readAnswer(t, post(t, ts.URL+"/grpc.health.v1.Health/Check", "application/grpc-web", checkRequest("up")), false)
	if want := "grpc-status: 14\r\ngrpc-message: the gRPC server is not serving\r\n"; a.status != want || a.httpStatus != 200 {
		t.Errorf("HTTP %d, %q; want 200, %q", a.httpStatus, a.status, want)
	}
}

// TestBodyBudget: a body that would take the calls' bodies past TotalBytes is
// refused, and what a call held is given back when it ends.
func TestBodyBudget(t *testing.T) {
	ts := httptest.NewServer(Handler(healthServer(t), limits(4096, 1000)))
	defer ts.Close()
	check := ts.URL + "/grpc.health.v1.Health/Check"
	for range 3 {
		a := readAnswer(t, post(t, check, "application/grpc-web", checkRequest(strings.Repeat("x", 600))), false)
		if want := "grpc-status: 8\r\ngrpc-message: gRPC-Web: too many request body bytes over all clients: at most 1000 at once; try again shortly\r\n"; a.status != want {
			t.Errorf("a 600-byte body: %q, want %q", a.status, want)
		}
		a = readAnswer(t, post(t, check, "application/grpc-web", checkRequest("up")), false)
		if want := "grpc-status: 0\r\n"; a.status != want {
			t.Errorf("a small body after it: %q, want %q", a.status, want)
		}
	}
}

func TestIsRequest(t *testing.T) {
	for _, c := range []struct {
		method, contentType string
		want                bool
	}{
		{"POST", "application/grpc-web", true},
		{"POST", "application/grpc-web-text+proto", true},
		{"POST", "APPLICATION/GRPC-WEB+PROTO", true},
		{"GET", "application/grpc-web", false},
		{"POST", "application/grpc-web+json", false},
		{"POST", "application/grpc", false},
		{"POST", "application/json", false},
		{"POST", "", false},
	} {
		r := httptest.NewRequest(c.method, "/user.UserService/GetUser", nil)
		r.Header.Set("Content-Type", c.contentType)
		if got := IsRequest(r); got != c.want {
			t.Errorf("%s %q: %v, want %v", c.method, c.contentType, got, c.want)
		}
	}
}

// chunkedReader hands out its data a few random bytes at a time, as a network may.
type chunkedReader struct {
	data []byte
	rnd  *rand.Rand
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rnd.IntN(7))], r.data)
	r.data = r.data[n:]
	return n, nil
}

// FuzzTextReader: data cut into chunks, each base64-encoded with padding, reads back
// as data whatever the reads' sizes; any other input reads without a panic, and
// what it reads is what the padded chunks it is made of decode to.
func FuzzTextReader(f *testing.F) {
	for _, s := range []string{"", "a", "ab", "abc", "abcd", "\x00\x00\x00\x00\x05hello", "QQ==QUI=QUJD", "QQ=", "Q===", "A=AA", "QQ==\nQUJD", "****"} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		rnd := rand.New(rand.NewPCG(seed, 0))
		var encoded []byte
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rnd.IntN(5))
			encoded = base64.StdEncoding.AppendEncode(encoded, rest[:n])
			rest = rest[n:]
		}
		got, err := io.ReadAll(&textReader{src: &chunkedReader{encoded, rnd}})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%q read back as %q, %v; want %q", encoded, got, err, data)
		}
		got, err = io.ReadAll(&textReader{src: &chunkedReader{data, rnd}})
		want, wantErr := decodeChunks(nil, data)
		if len(data)%4 != 0 {
			wantErr = errBase64
		}
		if (err == nil) != (wantErr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%q read as %q, %v; want %q, %v", data, got, err, want, wantErr)
		}
	})
}

// FuzzHandler: any body, in any of the content types, gets HTTP 200, whole frames
// and a status.
func FuzzHandler(f *testing.F) {
	req := checkRequest("up")
	for _, s := range [][]byte{req, req[:3], frame(0x80, nil), append(req, req...), []byte(base64.StdEncoding.EncodeToString(req)), []byte("AAAAAAA=")} {
		f.Add(s, uint8(0))
	}
	srv := healthServer(f)
	h := Handler(srv, testLimits)
	types := []string{"application/grpc-web", "application/grpc-web+proto", "application/grpc-web-text", "application/grpc-web-text+proto"}
	f.Fuzz(func(t *testing.T, body []byte, kind uint8) {
		r := httptest.NewRequest(http.MethodPost, "/grpc.health.v1.Health/Check", bytes.NewReader(body))
		r.Header.Set("Content-Type", types[int(kind)%len(types)])
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		a := readAnswer(t, w.Result(), strings.Contains(r.Header.Get("Content-Type"), "text"))
		if a.httpStatus != http.StatusOK || !strings.HasPrefix(a.status, "grpc-status: ") && !strings.Contains(a.status, "\r\ngrpc-status: ") {
			t.Fatalf("%q: HTTP %d, status %q", body, a.httpStatus, a.status)
		}
	})
}

// TestReadBody: a body is read whole within its limit and the budget, and the memory
// it holds was claimed first, never much more than it needs.
func TestReadBody(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n, limit, total int64
		refused         bool
	}{
		{0, 1024, 1 << 20, false},
		{7, 1024, 1 << 20, false},
		{1024, 1024, 1 << 20, false},
		{1025, 1024, 1 << 20, true},
		{5000, 1 << 20, 1 << 20, false},
		{600, 4096, 1000, true},
		{1 << 20, 1 << 20, 1 << 20, true}, // a byte past the limit finds the end, and is over the budget
	} {
		data := bytes.Repeat([]byte{7}, int(c.n))
		held := admission.NewBudget("bytes", 0, c.total, nil)
		body, claimed, f := readBody(&chunkedReader{data, rnd}, c.limit, func(n int64) error { return held.Claim("c", n) })
		if (f != nil) != c.refused || f == nil && !bytes.Equal(body, data) {
			t.Errorf("%d bytes, limit %d, budget %d: %d bytes, %+v", c.n, c.limit, c.total, len(body), f)
		}
		if claimed != held.Held() || claimed < int64(cap(body)) || claimed > max(2*c.n, 512)+1 {
			t.Errorf("%d bytes: claimed %d (budget at %d) for a buffer of %d", c.n, claimed, held.Held(), cap(body))
		}
	}
}

// TestCallTime: a call runs for at most CallTime from its request's arrival, the
// client's grpc-timeout kept when it is sooner, and a stream that sends nothing
// more (Watch) ends then with a status in its trailer frame; a call whose body
// took all its time is not run.
func TestCallTime(t *testing.T) {
	l := testLimits
	l.CallTime = 300 * time.Millisecond
	ts := httptest.NewServer(Handler(healthServer(t), l))
	defer ts.Close()
	watch := ts.URL + "/grpc.health.v1.Health/Watch"
	for _, header := range [][]string{nil, {"Grpc-Timeout", "99999999H"}, {"Grpc-Timeout", "100m"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // far past the call's time
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, watch, bytes.NewReader(checkRequest("up")))
		req.Header.Set("Content-Type", "application/grpc-web")
		if header != nil {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// grpc-go's Watch ends so when its context is done.
		if a := readAnswer(t, resp, false); a.status != "grpc-message: Stream has ended.\r\ngrpc-status: 1\r\n" || a.trailersIn != "frame" || len(a.messages) != 1 {
			t.Errorf("Watch with %q: %+v", header, a)
		}
		resp.Body.Close()
		cancel()
	}
	body, sending := io.Pipe()
	go func() {
		req := checkRequest("up")
		sending.Write(req[:3])
		time.Sleep(time.Second) // past the call's time
		sending.Write(req[3:])
		sending.Close()
	}()
	resp, err := http.Post(ts.URL+"/grpc.health.v1.Health/Check", "application/grpc-web", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if a := readAnswer(t, resp, false); a.status != "grpc-status: 4\r\ngrpc-message: gRPC-Web: the call's time ran out while its body was read\r\n" || a.trailersIn != "headers" {
		t.Errorf("a body that took the call's time: %+v", a)
	}
}

func TestCallTimeout(t *testing.T) {
	for _, c := range []struct {
		client string
		left   time.Duration
		want   string
	}{
		{"", 55 * time.Second, "55000m"},
		{"", time.Microsecond, "1m"},
		{"1S", 55 * time.Second, "1S"},
		{"55S", 55 * time.Second, "55S"},
		{"56S", 55 * time.Second, "55000m"},
		{"99999999H", 55 * time.Second, "55000m"}, // more than a Duration holds
		{"54999999u", 55 * time.Second, "54999999u"},
		{"soon", 55 * time.Second, "soon"}, // malformed: left for grpc-go to refuse
		{"5", 55 * time.Second, "5"},
		{"S", 55 * time.Second, "S"},
		{"-1S", 55 * time.Second, "-1S"},
		{"123456789n", 55 * time.Second, "123456789n"}, // nine digits: malformed
	} {
		if got := callTimeout(c.client, c.left); got != c.want {
			t.Errorf("callTimeout(%q, %v) = %q, want %q", c.client, c.left, got, c.want)
		}
	}
}

// FuzzCallTimeout: whatever a client sends as its grpc-timeout, the call's is the
// client's own or, when that one is well-formed and asks for more, left in whole
// milliseconds.
func FuzzCallTimeout(f *testing.F) {
	for _, s := range []string{"", "1S", "55S", "56S", "99999999H", "54999999u", "soon", "5", "S", "-1S", "+1S", "123456789n", "0n", "00000001M"} {
		f.Add(s, int64(55*time.Second))
	}
	f.Fuzz(func(t *testing.T, client string, leftNs int64) {
		left := time.Duration(max(leftNs, 1))
		got := callTimeout(client, left)
		if got == client {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(got, "m"), 10, 64)
		if err != nil || !strings.HasSuffix(got, "m") || n != max(left.Milliseconds(), 1) {
			t.Fatalf("callTimeout(%q, %v) = %q, neither the client's nor left", client, left, got)
		}
		if client != "" && (len(client) < 2 || len(client) > 9 || strings.IndexByte("HMSmun", client[len(client)-1]) < 0 || strings.Trim(client[:len(client)-1], "0123456789") != "") {
			t.Fatalf("callTimeout(%q, %v) = %q: a malformed timeout replaced", client, left, got)
		}
	})
}
