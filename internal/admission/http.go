package admission

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
)

// bodyChunk is the largest piece of a body read at once: what a client holds
// beyond what it sent, and no copying as a buffer doubles.
const bodyChunk = 64 << 10

// Enter admits the HTTP request r of client: it reads r's body ahead, waits for
// a slot, and returns the writer for the handler, which gives the slot back at the
// answer's first byte and counts the answer's bytes while they wait for the
// reader; call its Done once the request is done. The error is a *Refused, which
// the caller answers, or the context's, when the client is gone. refuse answers r
// when its answer is refused for want of budget, in the surface's format.
func (d *Door) Enter(w http.ResponseWriter, r *http.Request, client string, refuse func(http.ResponseWriter, *http.Request, *Refused)) (*AnswerWriter, error) {
	var held int64
	release, lone := d.Queue.TryLone(client)
	if !lone { // it may wait: its body first, so that a slow sender holds no slot
		var err error
		if held, err = d.readAhead(r, client); err == nil {
			release, err = d.Slot(r.Context(), client)
		}
		if err != nil {
			d.Bodies.Release(client, held)
			return nil, err
		}
	}
	return &AnswerWriter{ResponseWriter: w, d: d, client: client, leave: release, held: held, r: r, refuse: refuse}, nil
}

// Done gives back what the request held: its slot, if no byte gave it back, and
// the bytes of its body and answer; a status held for the first byte goes out.
func (w *AnswerWriter) Done() {
	w.giveSlotBack()
	if !w.refused {
		w.sendStatus() // an answer without a body
	}
	w.d.Answers.Release(w.client, w.claimed)
	w.d.Bodies.Release(w.client, w.held)
}

// readAhead reads r's body, one byte past the limit at most (for the handler's
// 413), within client's budget; a body declared longer is left to the handler.
func (d *Door) readAhead(r *http.Request, client string) (held int64, err error) {
	if d.Queue == nil || r.Body == nil || r.Body == http.NoBody || r.ContentLength > d.maxBody {
		return 0, nil // without a queue, nothing waits: the handler reads
	}
	limit := d.maxBody + 1
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
		if err := d.Bodies.Claim(client, n); err != nil {
			return held, err
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

// AnswerWriter is what a handler writes its answer to. It gives the request's
// slot back at the first byte, flush or hijack: the work is done by then, and a
// slow reader must not hold a slot. It counts what a Write hands the connection,
// past AnswerGrace, against the answers budget until the request is done; a
// status is held until the first byte, so that an answer refused for want of
// budget is answered as a refusal instead.
type AnswerWriter struct {
	http.ResponseWriter
	d       *Door
	client  string
	held    int64  // body bytes read ahead
	leave   func() // gives the slot back; nil once given back
	r       *http.Request
	refuse  func(http.ResponseWriter, *http.Request, *Refused)
	status  int   // a status not sent yet; -1 once the answer has begun
	claimed int64 // of answers
	refused bool
}

func (w *AnswerWriter) giveSlotBack() {
	if w.leave != nil {
		w.leave()
		w.leave = nil
	}
}

// ClaimAnswer counts n bytes of answer as rendered and not yet read, unless the
// budget is spent: a handler that renders its answer before writing it claims
// as it renders.
func (w *AnswerWriter) ClaimAnswer(n int64) error {
	if n <= w.claimed {
		return nil
	}
	if err := w.d.Answers.Claim(w.client, n-w.claimed); err != nil {
		return err
	}
	w.claimed = n
	return nil
}

func (w *AnswerWriter) WriteHeader(code int) {
	w.giveSlotBack()
	switch {
	case w.refused || w.status > 0:
	case code >= 200 && w.status == 0:
		w.status = code // sent with the first byte
	default:
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *AnswerWriter) Write(b []byte) (int, error) {
	w.giveSlotBack()
	if w.refused {
		return 0, errAnswerRefused
	}
	if len(b) > AnswerGrace {
		if err := w.ClaimAnswer(int64(len(b))); err != nil {
			if w.status != -1 { // nothing is out yet
				w.refused = true
				w.status = 0
				for _, name := range answerHeaders {
					w.Header().Del(name) // the refusal's own, or none; CORS's stay
				}
				w.refuse(w.ResponseWriter, w.r, err.(*Refused))
				return 0, errAnswerRefused
			}
			return 0, err // part of the answer is out: the connection is cut
		}
	}
	w.sendStatus()
	return w.ResponseWriter.Write(b)
}

func (w *AnswerWriter) sendStatus() {
	if w.status > 0 {
		w.ResponseWriter.WriteHeader(w.status)
	}
	w.status = -1
}

// answerHeaders are the headers of an answer that its refusal replaces.
var answerHeaders = []string{"Content-Type", "Content-Length", "Etag", "Last-Modified", "Location", "Cache-Control"}

var errAnswerRefused = errors.New("answer refused: too many answer bytes wait for this client's reading")

func (w *AnswerWriter) Flush() {
	w.giveSlotBack()
	w.sendStatus()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack gives the slot back: each WebSocket message takes its own (Work).
func (w *AnswerWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.giveSlotBack()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *AnswerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
