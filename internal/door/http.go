package door

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"

	"quartet/internal/clientaddr"
)

// bodyChunk is the largest piece of a body read at once: what a client holds
// beyond what it sent, and no copying as a buffer doubles.
const bodyChunk = 64 << 10

// Enter admits the HTTP request r: it reads r's body ahead, waits for a slot, and
// returns the writer for the handler, which gives the slot back at the answer's
// first byte, and the function to call once the request is done. The error is a
// *Busy, which the caller answers, or the context's, when the client is gone.
func (d *Door) Enter(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func(), error) {
	client := clientaddr.Of(r.RemoteAddr)
	held, err := d.readAhead(r, client)
	if err == nil {
		var release func()
		if release, err = d.enter(r.Context(), client); err == nil {
			return &slotWriter{ResponseWriter: w, leave: release}, func() {
				release()
				d.bodies.Give(client, held)
			}, nil
		}
	}
	d.bodies.Give(client, held)
	return nil, nil, err
}

// readAhead reads r's body, one byte past the limit at most (for the handler's
// 413), within client's budget; a body declared longer is left to the handler.
func (d *Door) readAhead(r *http.Request, client string) (held int64, err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > d.o.MaxBodyBytes {
		return 0, nil
	}
	limit := d.o.MaxBodyBytes + 1
	if r.ContentLength >= 0 {
		limit = r.ContentLength + 1 // the extra byte finds the end
	}
	var chunks [][]byte
	var readErr error
	for read := int64(0); read < limit && readErr == nil; {
		n := min(limit-read, bodyChunk)
		if r.ContentLength < 0 {
			n = min(n, max(512, read)) // unknown length: grow as it comes
		}
		if ok, perClient := d.bodies.Take(client, n); !ok {
			if perClient {
				return held, &Busy{client, fmt.Sprintf("too many request bodies waiting from %s: at most %d bytes; try again shortly", client, d.o.ClientBodyBytes)}
			}
			return held, &Busy{client, "too many request bodies waiting; try again shortly"}
		}
		held += n
		chunk := make([]byte, n)
		m, err := readFull(r.Body, chunk)
		chunks, read, readErr = append(chunks, chunk[:m]), read+int64(m), err
	}
	more := readErr == nil // stopped at the limit: the handler reads on in the original body
	if readErr == io.EOF {
		readErr = nil
	}
	r.Body = newBody(chunks, readErr, r.Body, more)
	return held, nil
}

// readFull is io.ReadFull without its io.ErrUnexpectedEOF: net/http's body
// returns that itself for a client gone before its declared length.
func readFull(r io.Reader, p []byte) (n int, err error) {
	for n < len(p) && err == nil {
		var m int
		m, err = r.Read(p[n:])
		n += m
	}
	return n, err
}

// body is a request body read ahead: Bytes takes it without a copy; Read serves
// it, then the rest of the original body if any, then the read's error, if any.
type body struct {
	io.Reader
	io.Closer
	chunks [][]byte
	err    error
	more   bool // the read ahead stopped at the limit: the original body may hold more
}

func newBody(chunks [][]byte, err error, original io.ReadCloser, more bool) *body {
	b := &body{Closer: original, chunks: chunks, err: err, more: more}
	if len(chunks) == 1 && !more { // most bodies: one reader, nothing more to allocate
		b.Reader = bytes.NewReader(chunks[0])
		return b
	}
	readers := make([]io.Reader, 0, len(chunks)+1)
	for _, chunk := range chunks {
		readers = append(readers, bytes.NewReader(chunk))
	}
	if more {
		readers = append(readers, original)
	}
	b.Reader = io.MultiReader(readers...)
	return b
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF && b.err != nil {
		err = b.err
	}
	return n, err
}

// Bytes returns the body read ahead, copied only when it spans chunks, and its
// read's error; whole is false when the body may be longer. Handlers find it by
// an interface with this method.
func (b *body) Bytes() (data []byte, whole bool, err error) {
	if len(b.chunks) == 1 {
		return b.chunks[0], !b.more, b.err
	}
	return bytes.Join(b.chunks, nil), !b.more, b.err
}

// slotWriter gives the request's slot back on the first write, flush or hijack:
// the work is done by then, and a slow reader must not hold a slot.
type slotWriter struct {
	http.ResponseWriter
	leave func()
}

func (w *slotWriter) WriteHeader(code int) {
	w.leave()
	w.ResponseWriter.WriteHeader(code)
}

func (w *slotWriter) Write(b []byte) (int, error) {
	w.leave()
	return w.ResponseWriter.Write(b)
}

func (w *slotWriter) Flush() {
	w.leave()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack gives the slot back: each WebSocket operation takes its own (Work).
func (w *slotWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.leave()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *slotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
