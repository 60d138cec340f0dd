// Package grpcweb serves gRPC-Web, the gRPC of browsers, through a gRPC server's own
// http.Handler (grpc-go's (*grpc.Server).ServeHTTP): each call is handed on as gRPC
// over HTTP/2, so it takes the server's path, interceptors and limits included, and
// the answer's HTTP trailers become gRPC-Web's trailer frame. Envoy's grpc_web filter
// and improbable-eng/grpc-web's wrapper translate the same way.
package grpcweb

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"quartet/internal/contentcoding"
)

// contentTypes maps each gRPC-Web content type to the gRPC one of the call handed
// on, and says whether its bodies are base64 both ways.
var contentTypes = map[string]struct {
	grpc string
	text bool
}{
	"application/grpc-web":            {"application/grpc", false},
	"application/grpc-web+proto":      {"application/grpc+proto", false},
	"application/grpc-web-text":       {"application/grpc", true},
	"application/grpc-web-text+proto": {"application/grpc+proto", true},
}

// IsRequest reports whether r is a gRPC-Web call: a POST of a gRPC-Web content type,
// its parameters well-formed. Every request of the HTTP server asks, so the others
// are told apart without parsing.
func IsRequest(r *http.Request) bool {
	const prefix = "application/grpc-web"
	ct := r.Header.Get("Content-Type")
	if r.Method != http.MethodPost || len(ct) < len(prefix) || !strings.EqualFold(ct[:len(prefix)], prefix) {
		return false
	}
	t, _, _ := mime.ParseMediaType(ct)
	_, ok := contentTypes[t]
	return ok
}

// Limits bound the request bodies of gRPC-Web calls, which are read whole before
// the call starts: grpc-go's ServeHTTP would read a body as fast as it comes, with
// no flow-control window to stop the client, and hold a 16 KiB buffer for every
// read however few bytes it brought.
type Limits struct {
	CallBytes int64                      // one call's body, decoded
	CallTime  time.Duration              // a call's time from its request's arrival, the body's reading included
	Bodies    Budget                     // what the bodies of calls under way claim, by client
	ClientOf  func(*http.Request) string // the client a call counts as
}

// Budget is an amount clients claim parts of and release (internal/admission
// keeps it); a refusal's message becomes the call's ResourceExhausted status.
type Budget interface {
	Claim(client string, n int64) error
	Release(client string, n int64)
}

// Handler serves gRPC-Web calls with grpcServer, which serves gRPC over HTTP/2 as
// (*grpc.Server).ServeHTTP does.
func Handler(grpcServer http.Handler, limits Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
		ct = strings.TrimSpace(strings.ToLower(ct)) // as mime.ParseMediaType reads it: IsRequest parsed it whole
		kind, ok := contentTypes[ct]
		if !ok || r.Method != http.MethodPost {
			http.Error(w, "a gRPC-Web call is a POST of application/grpc-web[-text][+proto]", http.StatusUnsupportedMediaType)
			return
		}
		var src io.Reader = r.Body
		if kind.text {
			src = &textReader{src: r.Body}
		}
		client := limits.ClientOf(r)
		body, claimed, f := readBody(src, limits.CallBytes, func(n int64) error { return limits.Bodies.Claim(client, n) })
		defer limits.Bodies.Release(client, claimed)
		left := limits.CallTime - time.Since(start)
		if f == nil && left <= 0 {
			f = &failure{codes.DeadlineExceeded, "gRPC-Web: the call's time ran out while its body was read"}
		} else if f == nil && contentcoding.Encoded(r.Header) { // as native gRPC answers a grpc-encoding it lacks
			f = &failure{codes.Unimplemented, "gRPC-Web: a request body's Content-Encoding is not decoded; grpc-encoding compresses messages"}
		}
		out := &responseWriter{w: w, header: http.Header{}, contentType: ct, text: kind.text}
		if f == nil {
			in := r.Clone(r.Context())
			in.ProtoMajor, in.ProtoMinor, in.Proto = 2, 0, "HTTP/2.0"
			in.Header.Set("Content-Type", kind.grpc)
			in.Header.Set("Grpc-Timeout", callTimeout(in.Header.Get("Grpc-Timeout"), left))
			in.ContentLength, in.Body = int64(len(body)), io.NopCloser(bytes.NewReader(body))
			grpcServer.ServeHTTP(out, in)
		}
		out.finish(f)
	})
}

// callTimeout is the grpc-timeout of a call with left to run (a deadline of its context
// would end it without its status): the client's, if no later or malformed, else left.
func callTimeout(client string, left time.Duration) string {
	if client != "" {
		n, err := strconv.ParseUint(client[:len(client)-1], 10, 64)
		unit := timeoutUnits[client[len(client)-1]]
		if unit == 0 || err != nil || len(client) > 9 || n <= uint64(left/unit) {
			return client
		}
	}
	return strconv.FormatInt(max(left.Milliseconds(), 1), 10) + "m"
}

var timeoutUnits = map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': 1}

// failure is a status the translation answers with itself.
type failure struct {
	code    codes.Code
	message string
}

// readBody reads src to its end, within limit bytes and what claim grants, claiming
// memory before it takes it; claimed is what it took, also on failure.
func readBody(src io.Reader, limit int64, claim func(n int64) error) (body []byte, claimed int64, f *failure) {
	for {
		if len(body) == cap(body) {
			grow := min(max(int64(cap(body)), 512), limit+1-int64(cap(body)))
			if err := claim(grow); err != nil {
				return nil, claimed, &failure{codes.ResourceExhausted, "gRPC-Web: " + err.Error()}
			}
			claimed += grow
			body = append(make([]byte, 0, int64(cap(body))+grow), body...) // no more than claimed, as slices.Grow might
		}
		n, err := src.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		switch {
		case int64(len(body)) > limit:
			return nil, claimed, &failure{codes.ResourceExhausted, fmt.Sprintf("gRPC-Web: the request body is larger than %d bytes", limit)}
		case err == io.EOF:
			return body, claimed, nil
		case err == errBase64:
			return nil, claimed, &failure{codes.InvalidArgument, err.Error()}
		case err != nil:
			return nil, claimed, &failure{codes.Canceled, "gRPC-Web: the request body could not be read"}
		}
	}
}

// responseWriter is what the gRPC server answers to. Headers wait for the first
// message, so that an answer without one is trailers-only (its status in the
// headers); what the server sets in Header after them is its trailers.
type responseWriter struct {
	w           http.ResponseWriter
	header      http.Header
	contentType string // the request's, which the answer mirrors
	text        bool
	sent        bool   // the headers went out
	pending     []byte // text: what was written since the last flush, encoded on the next
	httpError   []byte // the gRPC server refused the call as plain HTTP, with this text
}

func (rw *responseWriter) Header() http.Header { return rw.header }

// WriteHeader sends the headers now for 200, which the gRPC server writes only for
// headers sent on their own; any other status is grpc-go refusing the request as
// HTTP (a malformed grpc-timeout, say), which finish answers as a gRPC status.
func (rw *responseWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		rw.httpError = []byte(http.StatusText(code))
		return
	}
	rw.sendHeaders()
}

func (rw *responseWriter) Write(p []byte) (int, error) {
	if rw.httpError != nil {
		if len(rw.httpError) < 512 {
			rw.httpError = append(append(rw.httpError, ": "...), bytes.TrimSpace(p[:min(len(p), 512)])...)
		}
		return len(p), nil
	}
	rw.sendHeaders()
	if rw.text {
		rw.pending = append(rw.pending, p...)
		return len(p), nil
	}
	return rw.w.Write(p)
}

// Flush sends what was written; before the headers went out it does nothing, which
// keeps an answer with no message trailers-only.
func (rw *responseWriter) Flush() {
	if rw.sent && rw.httpError == nil {
		rw.writePending()
		http.NewResponseController(rw.w).Flush()
	}
}

// writePending writes a text answer's bytes since the last flush, each flush as its
// own padded base64, as the gRPC-Web protocol allows.
func (rw *responseWriter) writePending() {
	if len(rw.pending) > 0 {
		rw.w.Write(base64.StdEncoding.AppendEncode(nil, rw.pending))
		rw.pending = rw.pending[:0]
	}
}

// sendHeaders sends the headers set so far, once; the gRPC server's announcement
// of HTTP trailers is left out, since gRPC-Web sends them in the body.
func (rw *responseWriter) sendHeaders() {
	if rw.sent {
		return
	}
	rw.sent = true
	h := rw.w.Header()
	for k, v := range rw.header {
		if k != "Trailer" && k != "Content-Length" {
			h[k] = v
		}
	}
	h.Set("Content-Type", rw.contentType)
	rw.w.WriteHeader(http.StatusOK)
	rw.header = http.Header{}
}

// finish ends the answer with its status, f's when the call never reached the
// gRPC server: in the headers when none went out yet, else in a trailer frame.
func (rw *responseWriter) finish(f *failure) {
	trailers := rw.header
	switch {
	case f != nil:
	case rw.httpError != nil:
		f = &failure{codes.Internal, string(rw.httpError)}
	case trailers.Get("Grpc-Status") == "":
		// grpc-go writes nothing once stopped, and drains a call by ending it.
		f = &failure{codes.Unavailable, "the gRPC server is not serving"}
	}
	if f != nil {
		trailers = http.Header{"Grpc-Status": {strconv.Itoa(int(f.code))}, "Grpc-Message": {percentEncode(f.message)}}
	}
	if !rw.sent {
		rw.header = trailers
		rw.sendHeaders()
		return
	}
	// Not flushed: net/http sends it with the end of the answer.
	rw.writePending()
	if frame := trailerFrame(trailers); rw.text {
		rw.pending = frame
		rw.writePending()
	} else {
		rw.w.Write(frame)
	}
}

// percentEncode encodes a grpc-message value as gRPC does: a byte outside printable
// ASCII, and "%", as %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := range len(s) {
		if c := s[i]; c < ' ' || c > '~' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// trailerFrame is trailers as gRPC-Web's last frame: flag 0x80, the length, then
// "name: value" lines in lower case, in name order.
func trailerFrame(trailers http.Header) []byte {
	var block []byte
	keys := make([]string, 0, len(trailers))
	for k := range trailers {
		keys = append(keys, strings.ToLower(strings.TrimPrefix(k, http.TrailerPrefix)))
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		for _, v := range append(trailers.Values(k), trailers.Values(http.TrailerPrefix+k)...) {
			block = fmt.Appendf(block, "%s: %s\r\n", k, v)
		}
	}
	frame := binary.BigEndian.AppendUint32([]byte{0x80}, uint32(len(block)))
	return append(frame, block...)
}
