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

// GzipMinBytes is the smallest answer worth compressing: below it gzip's 18 bytes
// of framing and its CPU outweigh what a packet saves.
const GzipMinBytes = 1 << 10

// varyAcceptEncoding is shared, never modified: its length is its capacity, so
// Header().Add copies it rather than writing into it.
var varyAcceptEncoding = []string{"Accept-Encoding"}

// gzipWriters recycles gzip writers, about 200 KB of state each at BestSpeed.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
	return zw
}}

// acceptsGzip reports whether Accept-Encoding's lines allow gzip (RFC 9110 section
// 12.5.3): gzip or x-gzip, or else "*", with a q-value above 0 and not below
// identity's, if named. No header, or an empty one, means identity only.
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

// parseCoding splits an Accept-Encoding item, "coding" or "coding;q=0.5"; ok is
// false for an empty or malformed one, which is ignored rather than guessed at.
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

// Gzip negotiates the encoding of r's answer and returns the writer that encodes
// it, nil when it goes as it is; the caller ends the writer with Close or Abandon.
// Unless the answer cannot be encoded (HEAD, a protocol upgrade) it adds
// Accept-Encoding to Vary, small answers too, so a cache keys on it.
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

// GzipWriter gzip-encodes an answer once it is known to be large enough, holding
// back the status and up to GzipMinBytes until then (a Content-Length decides at
// once). The ETag is kept: weakened, If-Match would fail for a client that read
// the gzip form; with no range requests served, one validator does not mislead.
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
	if code == http.StatusNoContent || code == http.StatusNotModified { // no body (RFC 9110 sections 15.3.5, 15.4.5)
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
	if !g.decided {
		if len(g.held)+len(p) < GzipMinBytes {
			g.held = append(g.held, p...)
			return len(p), nil
		}
		g.decide(true)
	}
	return g.body().Write(p)
}

func (g *GzipWriter) body() io.Writer {
	if g.zw != nil {
		return g.zw
	}
	return g.w
}

// decide sends the status, with the gzip headers if large and the answer
// compresses, then the body held back.
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
		g.body().Write(g.held) // an error comes back on the next write or from Close
		g.held = nil
	}
}

// Flush sends what is held back, as it is if not yet decided, and what the
// compressor holds, so a streamed answer streams encoded.
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

// Hijack hands the connection over; nothing held back is sent, nor more by Close.
func (g *GzipWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if g.decided {
		return nil, nil, errors.New("hijack after the answer started")
	}
	g.hijack = true
	return http.NewResponseController(g.w).Hijack()
}

// Close ends the answer: it sends what is held back as it is, or finishes the gzip
// stream. An error means the client got a truncated stream (the log line says so).
func (g *GzipWriter) Close() error {
	switch {
	case g.hijack:
	case !g.decided && g.status == 0 && len(g.held) == 0:
		// Nothing written: net/http sends its 200 with no body itself.
	case !g.decided:
		g.decide(false)
	case g.zw != nil:
		err := g.zw.Close()
		g.Abandon()
		return err
	}
	return nil
}

// Abandon drops the answer after a panic, without writing, and recycles the
// compressor.
func (g *GzipWriter) Abandon() {
	g.held = nil
	if g.zw != nil {
		g.zw.Reset(io.Discard) // drop the reference to the response writer
		gzipWriters.Put(g.zw)
		g.zw = nil
	}
}

// compressibleType reports whether gzip shrinks a Content-Type: text, JSON, XML, a
// GraphQL schema.
func compressibleType(ct string) bool {
	mediaType, _, _ := strings.Cut(ct, ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	return strings.HasPrefix(mediaType, "text/") || strings.HasSuffix(mediaType, "json") ||
		strings.HasSuffix(mediaType, "xml") || mediaType == "application/graphql"
}

// Unwrap lets http.ResponseController reach the writer underneath (for deadlines).
func (g *GzipWriter) Unwrap() http.ResponseWriter { return g.w }
