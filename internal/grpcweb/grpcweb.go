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
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
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

// mediaType is r's content type, lower case, without parameters.
func mediaType(r *http.Request) string {
	t, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return t
}

// IsRequest reports whether r is a gRPC-Web call: a POST of a gRPC-Web content type.
// Every request of the HTTP server asks, so the others are told apart without parsing.
func IsRequest(r *http.Request) bool {
	const prefix = "application/grpc-web"
	if ct := r.Header.Get("Content-Type"); r.Method != http.MethodPost || len(ct) < len(prefix) || !strings.EqualFold(ct[:len(prefix)], prefix) {
		return false
	}
	_, ok := contentTypes[mediaType(r)]
	return ok
}

// Handler serves gRPC-Web calls with grpcServer, which serves gRPC over HTTP/2 as
// (*grpc.Server).ServeHTTP does. A call's request body may hold maxBodyBytes
// (decoded): the gRPC server reads a handed-on body as fast as it comes, with no
// flow-control window to stop the client, so this bounds what a call holds unread.
func Handler(grpcServer http.Handler, maxBodyBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := mediaType(r)
		kind, ok := contentTypes[ct]
		if !ok || r.Method != http.MethodPost {
			http.Error(w, "a gRPC-Web call is a POST of application/grpc-web[-text][+proto]", http.StatusUnsupportedMediaType)
			return
		}
		// A bidirectional call answers while the client may still be sending: over
		// HTTP/1.1 net/http would otherwise drop the rest of the body at the first answer.
		http.NewResponseController(w).EnableFullDuplex()
		body := &requestBody{closer: r.Body, src: r.Body, left: maxBodyBytes, limit: maxBodyBytes}
		if kind.text {
			body.src = &textReader{src: r.Body}
		}
		in := r.Clone(r.Context())
		in.ProtoMajor, in.ProtoMinor, in.Proto = 2, 0, "HTTP/2.0"
		in.Header.Set("Content-Type", kind.grpc)
		in.Header.Del("Content-Length")
		in.ContentLength, in.Body = -1, body
		out := &responseWriter{w: w, header: http.Header{}, contentType: ct, text: kind.text}
		grpcServer.ServeHTTP(out, in)
		// A body grpc-go refused unread is closed here, not after the handler: in full
		// duplex, net/http's close then reads it while it waits for the next request.
		r.Body.Close()
		out.finish(body.failure)
	})
}

// failure is a status the translation itself found, which stands instead of the
// one the gRPC server answered with once its read of the body failed: grpc-go turns
// any such error into Unavailable, and so its own log and count say.
type failure struct {
	code    codes.Code
	message string
}

// requestBody is the body handed on: decoded, bounded, and remembering why it
// failed. The gRPC server reads it in a goroutine of its own and waits for that
// goroutine before ServeHTTP returns, so failure is set before finish reads it.
type requestBody struct {
	src         io.Reader
	closer      io.Closer
	left, limit int64
	failure     *failure
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p[:min(int64(len(p)), b.left+1)])
	b.left -= int64(n)
	switch {
	case b.left < 0:
		b.failure = &failure{codes.ResourceExhausted, fmt.Sprintf("gRPC-Web: the request body is larger than %d bytes", b.limit)}
		return 0, errTooLarge
	case err == errBase64:
		b.failure = &failure{codes.InvalidArgument, errBase64.Error()}
	}
	return n, err
}

var errTooLarge = errors.New("gRPC-Web request body too large")

func (b *requestBody) Close() error { return b.closer.Close() }

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
			rw.httpError = append(rw.httpError, ": "...)
			rw.httpError = append(rw.httpError, bytes.TrimSpace(p[:min(len(p), 512)])...)
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

// Flush sends what was written, each flush of a text answer as its own padded
// base64, as the gRPC-Web protocol allows; before the headers went out it does
// nothing, which keeps an answer with no message trailers-only.
func (rw *responseWriter) Flush() {
	if !rw.sent || rw.httpError != nil {
		return
	}
	if len(rw.pending) > 0 {
		rw.w.Write(base64.StdEncoding.AppendEncode(nil, rw.pending))
		rw.pending = rw.pending[:0]
	}
	http.NewResponseController(rw.w).Flush()
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

// finish ends the answer with its status: in the headers when none went out yet,
// else in a trailer frame. f (nil: none) replaces a failed call's status.
func (rw *responseWriter) finish(f *failure) {
	trailers := rw.header
	if rw.httpError != nil {
		trailers = http.Header{}
		f = &failure{codes.Internal, string(rw.httpError)}
	}
	if trailers.Get("Grpc-Status") == "" {
		// grpc-go writes nothing once stopped.
		trailers.Set("Grpc-Status", fmt.Sprint(int(codes.Unavailable)))
		trailers.Set("Grpc-Message", "the gRPC server is not serving")
	}
	if f != nil && trailers.Get("Grpc-Status") != "0" {
		trailers.Set("Grpc-Status", fmt.Sprint(int(f.code)))
		trailers.Set("Grpc-Message", f.message)
		trailers.Del("Grpc-Status-Details-Bin")
	}
	if !rw.sent {
		rw.header = trailers
		rw.sendHeaders()
		return
	}
	rw.Flush()
	rw.pending = trailerFrame(trailers)
	if !rw.text {
		rw.w.Write(rw.pending)
		rw.pending = nil
	}
	rw.Flush()
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
