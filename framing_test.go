package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFramingConflict sends requests framed by both Content-Length and
// Transfer-Encoding (issue 15.14) on a raw connection: each is answered 400 and the
// connection closed, nothing is stored, and the request smuggled behind it is never
// answered.
func TestFramingConflict(t *testing.T) {
	a, _ := startApp(t, testConfig())
	before := len(a.store.Users())
	const user = `{"name":"Zoe","email":"zoe@example.com"}`
	chunked := "28\r\n" + user + "\r\n0\r\n\r\n"
	smuggled := "GET /api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	post := "POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	tests := []struct{ name, req string }{
		{"CL then TE", post + "Content-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
		{"TE then CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 45\r\n\r\n" + chunked},
		{"lower case names", post + "content-length: 45\r\ntransfer-encoding: chunked\r\n\r\n" + chunked},
		{"CL.TE smuggling", post + "Content-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"folded TE", post + "Content-Length: 45\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" + chunked},
		{"CL zero", post + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
		{"HTTP/1.0 with TE", "POST /api/users HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n" + user},
		{"after a good request", "GET /api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n" + post + "Content-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
	}
	for _, tt := range tests {
		statuses, closed := exchange(t, a.httpAddr, tt.req)
		if len(statuses) == 0 || statuses[len(statuses)-1] != http.StatusBadRequest || !closed {
			t.Errorf("%s: statuses %v, closed %v; want the last 400 and the connection closed", tt.name, statuses, closed)
		}
		if len(statuses) > 2 {
			t.Errorf("%s: %d answers: the smuggled request was served", tt.name, len(statuses))
		}
	}
	if n := len(a.store.Users()); n != before {
		t.Errorf("%d users stored by refused requests", n-before)
	}

	// Well-framed requests, chunked ones included, share one connection as before.
	good := post + "Content-Length: 40\r\n\r\n" + user +
		post + "Transfer-Encoding: chunked\r\n\r\n" + strings.Replace(chunked, "0\r\n\r\n", "0\r\nX-Trailer: 1\r\n\r\n", 1) +
		post + "Transfer-Encoding: chunked\r\n\r\n14;ext=1\r\n" + user[:20] + "\r\n14\r\n" + `{"name":"Yan","email":"yan@example.com"}`[20:] + "\r\n0\r\n\r\n" +
		"GET /api/users HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /api/users/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	statuses, _ := exchange(t, a.httpAddr, good)
	if want := []int{201, 201, 201, 200, 200}; !equalInts(statuses, want) {
		t.Errorf("well-framed requests: statuses %v, want %v", statuses, want)
	}
}

// exchange writes req on a new connection and reads the answers until the server
// closes it (closed) or stops answering.
func exchange(t *testing.T, addr, req string) (statuses []int, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for range 10 {
		// A guard against a hang, not a timing assertion: a server that keeps the
		// connection open is found out by the read timing out.
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			return statuses, !(errors.As(err, &ne) && ne.Timeout())
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	return statuses, false
}

func equalInts(a, b []int) bool {
	return len(a) == len(b) && string(intsBytes(a)) == string(intsBytes(b))
}

func intsBytes(a []int) []byte {
	var b []byte
	for _, v := range a {
		b = append(b, byte(v>>8), byte(v))
	}
	return b
}

// framingSeeds are request streams, pipelined, for FuzzFramingAgreesWithNetHTTP.
var framingSeeds = []string{
	"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nX: y\r\n z\r\nTransfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\n0\r\n\r\n",
	"POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	"POST / HTTP/1.1\nHost: x\nContent-Length: 1\n\naGET / HTTP/1.1\n\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
}

// FuzzFramingAgreesWithNetHTTP holds the framing tracker to net/http's own parser:
// wherever net/http reads a request and its body without error, the tracker, fed the
// same bytes, is at the start of the next header block, unless it found the request
// faulty (both Content-Length and Transfer-Encoding, which the server answers 400
// and then closes).
func FuzzFramingAgreesWithNetHTTP(f *testing.F) {
	for _, seed := range framingSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &countingReader{r: bytes.NewReader(data)}
		br := bufio.NewReader(src)
		var tr framing
		fed := 0
		for range 100 {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
			consumed := src.n - br.Buffered()
			// Fed in two parts, to cross a read boundary.
			mid := fed + (consumed-fed)/2
			tr.feed(data[fed:mid])
			tr.feed(data[mid:consumed])
			fed = consumed
			if tr.faulty.Load() {
				return
			}
			if tr.state != inHeader || tr.line != nil || tr.sawRequestLine {
				t.Fatalf("after %d bytes net/http is at a request boundary, the tracker in state %d (line %q)", consumed, tr.state, tr.line)
			}
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestFramingTracker checks the tracker's verdicts on header blocks alone.
func TestFramingTracker(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		faulty bool
		state  framingState
	}{
		{"no body", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, inHeader},
		{"CL body pending", "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", false, inBody},
		{"chunked pending", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", false, inChunkData},
		{"both", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", true, stopped},
		{"both, second request", "GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", true, stopped},
		{"HTTP/1.0 TE", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", true, stopped},
		{"TE identity refused by net/http", "POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", false, stopped},
		{"two CL values", "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false, stopped},
		{"CL in a body is data", "POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\nX: y\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n", false, inBody},
		{"line too long", "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", maxFramingLine), false, stopped},
		// net/http files a name with a space before its colon under another name and
		// frames the body without it; a proxy may not, so with the other it conflicts.
		{"spaced CL alone", "POST / HTTP/1.1\r\nContent-Length :\r\n\r\nGET / HTTP/1.1\r\n\r\n", false, inHeader},
		{"spaced CL and TE", "POST / HTTP/1.1\r\nContent-Length : 5\r\nTransfer-Encoding: chunked\r\n\r\n", true, stopped},
		{"CL and spaced TE", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n", true, stopped},
	}
	for _, tt := range tests {
		var f framing
		for i := range len(tt.stream) { // a byte at a time: every read boundary
			f.feed([]byte{tt.stream[i]})
		}
		if f.faulty.Load() != tt.faulty || f.state != tt.state {
			t.Errorf("%s: faulty %v, state %d; want %v, %d", tt.name, f.faulty.Load(), f.state, tt.faulty, tt.state)
		}
	}
}

// TestHijackStopsFraming: once a handler takes a connection over (a WebSocket), its
// bytes are not HTTP requests any more, and the tracker stops reading them.
func TestHijackStopsFraming(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hijacked := make(chan bool, 1)
	srv := &http.Server{ConnContext: withFramingConn, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := (&statusRecorder{ResponseWriter: w}).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fc, ok := c.(*framingConn)
		hijacked <- ok && fc.framing.state == stopped
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})}
	go srv.Serve(newHTTPListener(ln, 10, discardLogger(), nil))
	defer srv.Close()
	statuses, _ := exchange(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if len(statuses) != 1 || !<-hijacked {
		t.Errorf("statuses %v; the tracker did not stop on hijack", statuses)
	}
}

// BenchmarkFramingLongLine follows requests whose 54 KB request line (the hostile
// check's $orderby attack) arrives in net/http's 4 KiB reads.
func BenchmarkFramingLongLine(b *testing.B) {
	req := []byte("GET /api/products?$orderby=" + strings.Repeat("isActive,", 6000) + " HTTP/1.1\r\nHost: x\r\n\r\n")
	var f framing
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		for p := req; len(p) > 0; {
			n := min(len(p), 4096)
			f.feed(p[:n])
			p = p[n:]
		}
	}
}
