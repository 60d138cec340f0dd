package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"quartet/internal/clientaddr"
)

// A request with both Content-Length and Transfer-Encoding is answered 400 and its
// connection closed (RFC 9112 section 6.1): a proxy in front that read the other
// header would see other requests on the same connection than this server does,
// which is how requests are smuggled past it. net/http honours Transfer-Encoding and
// deletes Content-Length before a handler runs, so the check cannot be made on the
// *http.Request. Instead a framing tracker reads along with the server, on every
// HTTP connection: it follows each request's header block and then the body that
// Content-Length or the chunked coding delimits, as net/http does, to the next header
// block. An HTTP/1.0 (or older) request with Transfer-Encoding is faulty too (same
// section).
//
// The tracker has to agree with net/http only on what net/http accepts: whatever
// net/http refuses, it answers with an error and closes the connection itself. So
// the tracker is lenient where net/http is strict (a bare LF for CRLF, say), and when
// it meets something net/http refuses (an invalid Content-Length, an unsupported
// coding) it stops looking. FuzzFramingAgreesWithNetHTTP holds the two together.

// framingState is where in a request the tracker is.
type framingState int

const (
	inHeader    framingState = iota // the request line and header fields
	inBody                          // a Content-Length body
	inChunkSize                     // a chunk-size line
	inChunkData                     // a chunk's data
	inChunkEnd                      // the CRLF after a chunk's data
	inTrailer                       // the trailer fields after the last chunk
	stopped                         // not following any more
)

// maxFramingLine bounds a line the tracker keeps: net/http refuses a header block
// larger than the server's MaxHeaderBytes (httpMaxHeaderBytes) plus 4096 bytes of
// slack, and a longer line cannot be part of a request it accepts.
const maxFramingLine = httpMaxHeaderBytes + 4096

// framing follows the requests on one connection. Its methods are called by one
// reader at a time (net/http never reads a connection concurrently); faulty may be
// read by any goroutine.
type framing struct {
	state     framingState
	line      *[]byte // the current line so far, when it spans reads; lent by spanningLines
	remaining uint64  // bytes left of a body or chunk

	// The header block being read.
	sawRequestLine bool
	beforeHTTP11   bool     // HTTP/1.0 or older
	contentLength  []string // values, one per field line
	transferCoding []string
	lastField      *[]string // the list the last field line went to, for continuation lines
	// spacedLength and spacedCoding: a Content-Length or Transfer-Encoding name with white space before
	// its colon. net/http files it under another name and frames the body without it,
	// but a proxy in front may not, so it still conflicts with the other.
	spacedLength, spacedCoding bool

	faulty atomic.Bool // a request with both Content-Length and Transfer-Encoding was seen

	headBytes int  // of the header block being read
	longHead  bool // bytes fed since it was cleared were of a header block past longHeadBytes
}

// feed follows the bytes p, the next ones read from the connection.
func (f *framing) feed(p []byte) {
	for len(p) > 0 && f.state != stopped {
		switch f.state {
		case inBody, inChunkData:
			n := uint64(len(p))
			if n > f.remaining {
				n = f.remaining
			}
			p, f.remaining = p[n:], f.remaining-n
			switch {
			case f.remaining > 0:
			case f.state == inBody:
				f.state = inHeader
			default:
				f.state = inChunkEnd
			}
		default:
			i := bytes.IndexByte(p, '\n')
			if f.state == inHeader {
				f.countHead(i, len(p))
			}
			if i < 0 {
				if f.line == nil {
					f.line = spanningLines.Get().(*[]byte)
				}
				if len(*f.line)+len(p) > maxFramingLine {
					f.state = stopped // net/http refuses a line this long
					f.releaseLine()
					return
				}
				*f.line = append(*f.line, p...)
				return
			}
			line := p[:i]
			if f.line != nil {
				*f.line = append(*f.line, line...)
				line = *f.line
			}
			p = p[i+1:]
			f.endLine(bytes.TrimSuffix(line, []byte("\r")))
			f.releaseLine()
		}
	}
}

// countHead counts the header block's bytes in p, of length n, up to its first
// line end at i (-1 for none).
func (f *framing) countHead(i, n int) {
	if i >= 0 {
		n = i + 1
	}
	f.headBytes += n
	if f.headBytes > longHeadBytes {
		f.longHead = true
	}
}

// spanningLines lends buffers to the lines that span reads. A client sending long
// lines (a 50 KB URL) in a loop would otherwise cost a new buffer of up to
// maxFramingLine per line, collector work that every other client waits for.
var spanningLines = sync.Pool{New: func() any { return new([]byte) }}

// releaseLine gives the current line's buffer back.
func (f *framing) releaseLine() {
	if f.line != nil {
		*f.line = (*f.line)[:0]
		spanningLines.Put(f.line)
		f.line = nil
	}
}

// endLine takes one complete line, without its line end.
func (f *framing) endLine(line []byte) {
	switch f.state {
	case inHeader:
		f.headerLine(line)
	case inChunkSize:
		line = bytes.TrimRight(line, " \t")
		line, _, _ = bytes.Cut(line, []byte(";")) // a chunk extension, ignored as net/http does
		n, err := strconv.ParseUint(string(line), 16, 64)
		switch {
		case err != nil || len(line) > 16:
			f.state = stopped // net/http refuses it
		case n == 0:
			f.state = inTrailer
		default:
			f.state, f.remaining = inChunkData, n
		}
	case inChunkEnd:
		f.state = inChunkSize
		if len(line) > 0 {
			f.state = stopped // net/http wants CRLF right after the data
		}
	case inTrailer:
		if len(line) == 0 {
			f.state = inHeader
		}
	}
}

// headerLine takes one line of a header block.
func (f *framing) headerLine(line []byte) {
	switch {
	case !f.sawRequestLine:
		if len(line) == 0 {
			return // net/http skips a few blank lines after a POST; more, it refuses
		}
		f.sawRequestLine = true
		// net/http ignores Transfer-Encoding before HTTP/1.1; versions are HTTP/D.D.
		proto := line[bytes.LastIndexByte(line, ' ')+1:]
		f.beforeHTTP11 = len(proto) == 8 && bytes.HasPrefix(proto, []byte("HTTP/")) && (proto[5] < '1' || proto[5] == '1' && proto[7] == '0')
	case len(line) == 0:
		f.endHeader()
	case line[0] == ' ' || line[0] == '\t':
		// An obsolete line folding (RFC 9112 section 5.2), which net/http joins to the
		// field before with one space.
		if f.lastField != nil && len(*f.lastField) > 0 {
			last := &(*f.lastField)[len(*f.lastField)-1]
			*last = strings.Trim(*last+" "+string(line), " \t")
		}
	default:
		rawName, value, _ := bytes.Cut(line, []byte(":"))
		name := bytes.TrimRight(rawName, " \t")
		spaced := len(name) != len(rawName)
		value = bytes.Trim(value, " \t")
		f.lastField = nil
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")) && spaced:
			f.spacedLength = true
		case bytes.EqualFold(name, []byte("Transfer-Encoding")) && spaced:
			f.spacedCoding = true
		case bytes.EqualFold(name, []byte("Content-Length")):
			f.contentLength = append(f.contentLength, string(value))
			f.lastField = &f.contentLength
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			f.transferCoding = append(f.transferCoding, string(value))
			f.lastField = &f.transferCoding
		}
	}
}

// endHeader decides, at the blank line ending a header block, how the body is
// framed, as net/http's fixLength and parseTransferEncoding do.
func (f *framing) endHeader() {
	cl, te, old := f.contentLength, f.transferCoding, f.beforeHTTP11
	anyLength, anyCoding := len(cl) > 0 || f.spacedLength, len(te) > 0 || f.spacedCoding
	f.sawRequestLine, f.beforeHTTP11, f.contentLength, f.transferCoding, f.lastField = false, false, nil, nil, nil
	f.spacedLength, f.spacedCoding = false, false
	f.headBytes = 0
	switch {
	case anyCoding && anyLength, len(te) > 0 && old:
		f.faulty.Store(true)
		f.state = stopped // the connection is closed after the answer
	case len(te) > 0:
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			f.state = stopped // net/http answers 501 and closes
			return
		}
		f.state = inChunkSize
	case len(cl) > 0:
		n, err := strconv.ParseUint(cl[0], 10, 63)
		for _, v := range cl[1:] {
			if v != cl[0] {
				err = strconv.ErrSyntax // net/http refuses differing values
			}
		}
		switch {
		case err != nil:
			f.state = stopped
		case n > 0:
			f.state, f.remaining = inBody, n
		}
	}
}

// framingConn is an HTTP connection whose reads the framing tracker follows.
//
// It also takes turns in the fair share (fairshare.go) for a long header block:
// net/http reads a request's head before any handler, so a client sending heads of
// tens of kilobytes (a 50 KB URL) in a loop would make the service work for it
// outside its turns. Past longHeadBytes of a head, each read holds a turn of the
// client from when its bytes have arrived until the next read begins, the time
// net/http spends on them; the wait for bytes holds none. An ordinary head is
// never held up. The turn of a head's last read is given back by the next read on
// the connection, which the request's own turn (ServeHTTP) does not wait long for:
// the read of its body (readAhead), or, for a request without one, the background
// read net/http starts as it calls the handler; or else at the half-close or close
// of a connection net/http refuses.
type framingConn struct {
	net.Conn
	framing framing

	turns    *fairShare // nil: no fair share
	client   string     // set at the first long head
	turn     heldTurn   // the last read's; ended at the close
	tookTurn bool       // the last read took a turn (Read's own; spares other reads the lock)
}

// longHeadBytes is how much of a header block is read before the rest takes
// turns: many times an ordinary request's head, an eighth of the longest.
const longHeadBytes = 8 << 10

// newHTTPListener is the HTTP server's listener: at most maxConns connections, each a
// framingConn taking turns in turns (nil: none).
func newHTTPListener(ln net.Listener, maxConns int, log *slog.Logger, turns *fairShare) *limitListener {
	l := newLimitListener(ln, "HTTP", maxConns, log)
	l.wrap = func(c *limitedConn) net.Conn { return &framingConn{Conn: c, turns: turns} }
	return l
}

func (c *framingConn) Read(p []byte) (int, error) {
	if c.tookTurn { // net/http is done with what the last read brought
		c.turn.giveBack()
		c.tookTurn = false
	}
	n, err := c.Conn.Read(p)
	c.framing.feed(p[:n])
	if c.framing.longHead && c.turns != nil {
		c.framing.longHead = false
		if c.client == "" {
			c.client = clientaddr.Of(c.RemoteAddr().String())
		}
		// Past the client's waiting places there is no turn to wait for; the
		// request is refused once it reaches the fair share in ServeHTTP.
		if leave, err := c.turns.take(context.Background(), c.client); err == nil {
			c.turn.hold(leave)
			c.tookTurn = true
		}
	}
	return n, err
}

// Close gives back the turn of a connection closed after a read (a head net/http
// refused, say), and any a read still under way takes, and closes it.
func (c *framingConn) Close() error {
	c.turn.end()
	return c.Conn.Close()
}

// stopFraming ends the tracking when the connection stops carrying HTTP/1.1 requests
// (a WebSocket, once hijacked). Only the connection's one reader may call it.
func (c *framingConn) stopFraming() {
	c.framing.state = stopped
	c.framing.releaseLine()
}

// CloseWrite passes net/http's half-close on (see limitedConn.CloseWrite). It gives
// back the turn of the last read first: net/http half-closes after refusing a head
// (431), then waits half a second before closing, and the client's other requests
// must not wait with it.
func (c *framingConn) CloseWrite() error {
	c.turn.giveBack()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type framingConnKey struct{}

// withFramingConn is the HTTP server's ConnContext: it makes a connection's
// framingConn known to the requests on it.
func withFramingConn(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingConnKey{}, fc)
	}
	return ctx
}

// faultyFraming reports whether r's connection carried a request framed by both
// Content-Length and Transfer-Encoding (false where connections are not tracked, as
// under httptest).
func faultyFraming(r *http.Request) bool {
	fc, ok := r.Context().Value(framingConnKey{}).(*framingConn)
	return ok && fc.framing.faulty.Load()
}
