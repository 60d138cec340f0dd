package contentcoding

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// GzipMinBytes is the smallest answer worth compressing: below it the gzip header
// and trailer (18 bytes) and the CPU cost outweigh what a single packet saves.
const GzipMinBytes = 1 << 10

// varyAcceptEncoding is the Vary value of every answer whose encoding depends on the
// request's Accept-Encoding; shared (no allocation per answer), never modified. Its
// length equals its capacity, so Header().Add copies it rather than writing into it.
var varyAcceptEncoding = []string{"Accept-Encoding"}

// gzipWriters recycles gzip writers: each holds about 200 KB of compressor state at
// gzip.BestSpeed, far too much to allocate per answer. The pool is bounded by the
// number of answers being compressed at once, that is by the server's connection cap.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
	return zw
}}

// acceptsGzip reports whether an Accept-Encoding header (all its lines) lets the
// answer be gzip-encoded (RFC 9110 section 12.5.3): gzip or x-gzip, or else "*",
// with a q-value above 0, and not below the q-value the client gives identity by
// name. No header, or an empty one, means identity only.
func acceptsGzip(lines []string) bool {
	gzipQ, starQ, identityQ := -1.0, -1.0, -1.0 // -1: not named
	for _, line := range lines {
		for item := range strings.SplitSeq(line, ",") {
			coding, q, ok := parseCoding(item)
			if !ok {
				continue
			}
			switch {
			case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				gzipQ = max(gzipQ, q)
			case coding == "*":
				starQ = q
			case strings.EqualFold(coding, "identity"):
				identityQ = q
			}
		}
	}
	if gzipQ < 0 {
		gzipQ = starQ // "*" stands for every coding not named
	}
	return gzipQ > 0 && gzipQ >= identityQ
}

// parseCoding splits one Accept-Encoding item, "coding" or "coding;q=0.5", into the
// coding and its q-value (1 when absent). ok is false for an empty or malformed item,
// which is then ignored rather than guessed at.
func parseCoding(item string) (coding string, q float64, ok bool) {
	coding, params, _ := strings.Cut(item, ";")
	coding = strings.TrimSpace(coding)
	if coding == "" {
		return "", 0, false
	}
	q = 1
	for param := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || v < 0 || v > 1 {
			return "", 0, false
		}
		q = v
	}
	return coding, q, true
}

// Gzip negotiates the encoding of r's answer, to be written to w. Unless the answer
// cannot be encoded at all, it adds Accept-Encoding to w's Vary: every answer that
// could have been encoded says so, small ones too, so that a cache does not hand
// this URL's gzip form to a client that did not ask for it. It returns the writer
// that gzip-encodes the answer when the client accepts gzip, nil when the answer
// goes as it is. The caller ends a writer it got with Close, or Abandon.
//
// An answer to HEAD (no body to encode) or to a protocol upgrade (its connection is
// hijacked, and then carries WebSocket frames, compressed if at all by the
// WebSocket extension) cannot be encoded.
func Gzip(w http.ResponseWriter, r *http.Request) *GzipWriter {
	if r.Method == http.MethodHead || r.Header.Get("Upgrade") != "" {
		return nil
	}
	h := w.Header()
	if len(h["Vary"]) == 0 {
		h["Vary"] = varyAcceptEncoding
	} else {
		h["Vary"] = append(h["Vary"], "Accept-Encoding")
	}
	if !acceptsGzip(r.Header["Accept-Encoding"]) {
		return nil
	}
	return &GzipWriter{w: w}
}

// GzipWriter gzip-encodes an answer once it is known to be large enough. Until then
// it holds back the status and up to GzipMinBytes of the body: an answer that ends
// (or flushes) smaller is sent as it is. A Content-Length set by the handler decides
// at once. An answer already encoded, or of a type that does not compress (not text,
// JSON or XML), passes through untouched.
//
// The ETag, if any, is kept as it is: weakening it for the gzip form would make
// If-Match (a strong comparison) fail for a client that read the entity compressed.
// No range requests are served, the case where one validator for both forms misleads.
type GzipWriter struct {
	w       http.ResponseWriter
	status  int          // held back until decided; 0: WriteHeader not called yet
	held    []byte       // body bytes held back until decided
	zw      *gzip.Writer // non-nil once compressing
	decided bool         // the status is sent; zw says how the body goes
	hijack  bool         // the connection was taken over; nothing more is written
}

func (g *GzipWriter) Header() http.Header { return g.w.Header() }

func (g *GzipWriter) WriteHeader(code int) {
	if g.decided || g.status != 0 {
		return // as net/http: a second status is ignored
	}
	if code < http.StatusOK { // informational: goes out now, the final one comes later
		g.w.WriteHeader(code)
		return
	}
	g.status = code
	if !bodyAllowed(code) {
		g.decide(false)
		return
	}
	if cl := g.w.Header().Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		g.decide(err == nil && n >= GzipMinBytes)
	}
}

func (g *GzipWriter) Write(p []byte) (int, error) {
	if g.status == 0 {
		g.WriteHeader(http.StatusOK)
	}
	if g.decided {
		if g.zw != nil {
			return g.zw.Write(p)
		}
		return g.w.Write(p)
	}
	if len(g.held)+len(p) < GzipMinBytes {
		g.held = append(g.held, p...) // at most GzipMinBytes: bounded
		return len(p), nil
	}
	g.decide(true)
	if g.zw != nil {
		return g.zw.Write(p)
	}
	return g.w.Write(p)
}

// decide sends the status, with the gzip headers if large is true and the answer is
// of a kind that compresses, then whatever body was held back.
func (g *GzipWriter) decide(large bool) {
	g.decided = true
	h := g.w.Header()
	if large && h.Get("Content-Encoding") == "" && compressibleType(h.Get("Content-Type")) {
		h.Del("Content-Length") // the handler's count is of the bytes before encoding
		h.Set("Content-Encoding", "gzip")
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(g.w)
		g.zw = zw
	}
	g.w.WriteHeader(g.status)
	if len(g.held) > 0 {
		if g.zw != nil {
			g.zw.Write(g.held) // an error comes back on the next write or from Close
		} else {
			g.w.Write(g.held)
		}
		g.held = nil
	}
}

// Flush sends what is held back and, when compressing, everything the compressor
// holds, so a handler that streams (and flushes) a long answer streams it encoded.
// An answer flushed before it reaches GzipMinBytes is sent as it is.
func (g *GzipWriter) Flush() {
	if g.hijack {
		return
	}
	if !g.decided {
		if g.status == 0 {
			g.status = http.StatusOK
		}
		g.decide(false)
	}
	if g.zw != nil {
		g.zw.Flush()
	}
	http.NewResponseController(g.w).Flush()
}

// Hijack hands the connection over: nothing held back is sent, and Close writes
// nothing more. Gzip never wraps an upgrade; this keeps a handler that hijacks
// anyway working.
func (g *GzipWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if g.decided {
		return nil, nil, errors.New("hijack after the answer started")
	}
	g.hijack = true
	return http.NewResponseController(g.w).Hijack()
}

// Close ends the answer: it sends what is held back as it is (an answer that ended
// smaller than GzipMinBytes), or finishes the gzip stream and recycles the writer. An
// error means the client got a truncated gzip stream (a write failed, often because
// the client left): the request's log line says so.
func (g *GzipWriter) Close() error {
	switch {
	case g.hijack:
	case !g.decided && g.status == 0 && len(g.held) == 0:
		// Nothing written: net/http sends its 200 with no body itself.
	case !g.decided:
		g.decide(false)
	case g.zw != nil:
		err := g.zw.Close()
		g.zw.Reset(io.Discard) // drop the reference to the response writer
		gzipWriters.Put(g.zw)
		g.zw = nil
		return err
	}
	return nil
}

// Abandon drops the answer after a panic, without writing: the caller answers the
// request itself if nothing has been sent yet.
func (g *GzipWriter) Abandon() {
	g.held = nil
	if g.zw != nil {
		g.zw.Reset(io.Discard)
		gzipWriters.Put(g.zw)
		g.zw = nil
	}
}

// bodyAllowed reports whether an answer with this status may have a body (RFC 9110
// sections 15.3.5 and 15.4.5).
func bodyAllowed(code int) bool {
	return code != http.StatusNoContent && code != http.StatusNotModified
}

// compressibleType reports whether a Content-Type is one that gzip shrinks: text,
// JSON and XML (problem+json and XML documents of any kind among them), and a
// GraphQL schema's text.
func compressibleType(ct string) bool {
	mediaType, _, _ := strings.Cut(ct, ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	return strings.HasPrefix(mediaType, "text/") || strings.HasSuffix(mediaType, "json") ||
		strings.HasSuffix(mediaType, "xml") || mediaType == "application/graphql"
}

// Unwrap lets http.ResponseController reach the writer underneath (for deadlines).
func (g *GzipWriter) Unwrap() http.ResponseWriter { return g.w }
