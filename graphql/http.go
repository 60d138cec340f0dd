package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"quartet/internal/jsonkeys"
	"quartet/internal/reqbody"
)

const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"

	// maxRequestBytes is the default bound on a POST body or a GET's query string.
	maxRequestBytes = 1 << 20
)

// Handler serves the GraphQL over HTTP specification: POST with an
// application/json body {"query", "operationName", "variables", "extensions"},
// and GET (and HEAD) with the same as URL parameters, for queries only. Answers
// are application/json, status 200 for every well-formed request, unless the
// Accept header prefers application/graphql-response+json, whose status tells
// request errors (400) from executed operations (200). An operation whose
// @defer or @stream holds parts back is answered in parts, as multipart/mixed
// (multipart.go), or refused with 406 when Accept allows no multipart answer.
type Handler struct {
	Schema *Schema

	ContextFunc func(r *http.Request) context.Context // the context an operation runs in; default r.Context()
	HTMLPage    http.Handler                          // serves a GET without a GraphQL request that prefers text/html
	WebSocket   http.Handler                          // serves WebSocket upgrades (subscriptions)
	// Streams, when set, serves GraphQL over SSE (Accept: text/event-stream;
	// PUT and DELETE for its single connection mode) and Apollo's multipart
	// subscriptions (Accept: multipart/mixed;subscriptionSpec=1.0).
	Streams  *Streams
	MaxBytes int64 // bounds the request document; 0 means 1 MiB

	// PersistedQueries keeps the automatic persisted queries; when nil, a
	// request naming a hash is answered PERSISTED_QUERY_NOT_SUPPORTED.
	PersistedQueries *PersistedQueries
	// PersistedOnly runs only the operations pinned in PersistedQueries.
	PersistedOnly bool
	// MaxBatch is how many operations a POST body may carry as a JSON array
	// (Apollo's BatchHttpLink). 0 refuses arrays, so that one request costs one
	// operation, as per-request limits in front of the service count.
	MaxBatch int
}

// NewHandler returns a Handler for s with default settings.
func NewHandler(s *Schema) *Handler {
	return &Handler{Schema: s, PersistedQueries: newPersistedQueries(defaultPersistedQueryBytes)}
}

type httpParams struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.WebSocket != nil && isWebSocketUpgrade(r) {
		h.WebSocket.ServeHTTP(w, r)
		return
	}
	accept := acceptRanges(r.Header.Get("Accept"))
	if h.Streams != nil && h.Streams.serve(w, r, h, accept) {
		return
	}
	media, html := negotiate(accept)
	multipart := multipartFormat(accept)
	if isGet(r) && h.HTMLPage != nil && html && !isGraphQLGet(r) {
		h.HTMLPage.ServeHTTP(w, r)
		return
	}
	if !isGet(r) && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeHTTPError(w, mediaJSON, http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed; use GET or POST.")
		return
	}
	if media == "" && multipart != noIncremental {
		media = mediaJSON // for what is answered in one piece
	}
	if media == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotAcceptable)
		io.WriteString(w, "Not Acceptable: this endpoint answers application/graphql-response+json or application/json.\n")
		return
	}
	params, batch, status, msg := h.readParams(w, r)
	if status != 0 {
		writeHTTPError(w, media, status, msg)
		return
	}
	ctx := h.requestContext(w, r)
	if batch != nil {
		h.serveBatch(ctx, w, media, batch)
		return
	}
	resp, inc, status, fixed := h.serve(ctx, r.Method, &params, multipart)
	if inc != nil {
		writeMultipart(w, multipart, inc)
		return
	}
	if fixed {
		if resp.Errors[0].Code() == codePersistedQueryNotFound {
			// Not cached on the way: the same GET is to succeed once the client
			// has sent the query (Apollo's servers say the same).
			w.Header().Set("Cache-Control", "private, no-cache, must-revalidate")
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
	} else if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "POST")
	} else if media == mediaJSON {
		status = http.StatusOK
	}
	writeResponse(w, media, status, resp)
}

// requestContext is the context an operation of r answered in w runs in.
func (h *Handler) requestContext(w http.ResponseWriter, r *http.Request) context.Context {
	ctx := h.baseContext(r)
	if c, ok := w.(AnswerClaimer); ok {
		ctx = WithAnswerClaim(ctx, c)
	}
	return ctx
}

// baseContext is the context an operation of r runs in, wherever it is answered.
func (h *Handler) baseContext(r *http.Request) context.Context {
	if h.ContextFunc != nil {
		return h.ContextFunc(r)
	}
	return r.Context()
}

// serve answers one operation's parameters, with the status
// application/graphql-response+json calls for. fixed reports a status that holds
// for either media type: bad request parameters, a refused @defer or @stream, and
// persisted-query answers (as Apollo's servers and link have them). With an
// incremental format, an operation that holds parts back answers inc.
func (h *Handler) serve(ctx context.Context, method string, params *httpParams, f incrementalFormat) (resp *Response, inc *Incremental, status int, fixed bool) {
	req, p, op, errs, status, fixed := h.operation(method, params, false)
	if errs != nil {
		return &Response{Errors: errs}, nil, status, fixed
	}
	if f != noIncremental {
		inc = h.Schema.executeIncremental(ctx, p, op, req.Variables)
		resp = inc.Initial
		if len(inc.Pending) == 0 {
			inc = nil // nothing held back: one plain answer, as graphql-js gives then
		}
	} else {
		e, r := h.Schema.startOperation(ctx, p, op, req.Variables, nil)
		switch {
		case r != nil:
			resp = r
		case usesIncremental(h.Schema, p.fragments, op, e.vars):
			msg := "@defer and @stream are answered in parts: send Accept: multipart/mixed;deferSpec=20220824 or multipart/mixed;incrementalSpec=v0.2."
			return &Response{Errors: []*Error{newError(codeBadUserInput, msg)}}, nil, http.StatusNotAcceptable, true
		default:
			resp = e.run(h.Schema.rootType(op.Operation), nil)
		}
	}
	if resp.Data == nil {
		if resp.Errors[0].Code() == codeTooManyRequests { // refused its answer's bytes
			return resp, nil, http.StatusTooManyRequests, true
		}
		return resp, inc, http.StatusBadRequest, false
	}
	return resp, inc, http.StatusOK, false
}

// operation reads the operation params asks for, or the errors that refuse it,
// with their status; fixed as serve reports it. A subscription is refused
// unless streamed.
func (h *Handler) operation(method string, params *httpParams, streamed bool) (req Request, p *preparedDocument, op *OperationDefinition, errs ErrorList, status int, fixed bool) {
	req, pq, status, msg := requestFromParams(params)
	if status != 0 {
		return req, nil, nil, ErrorList{newError(codeBadUserInput, msg)}, status, true
	}
	sent := req.Query != ""
	if e, status := h.resolvePersisted(&req, pq); e != nil {
		return req, nil, nil, ErrorList{e}, status, true
	}
	if p = h.Schema.prepare(req.Query); p.errs != nil {
		return req, nil, nil, p.errs, http.StatusBadRequest, false
	}
	op, errResp := selectOperation(p.doc, req.OperationName)
	switch {
	case errResp != nil:
		return req, nil, nil, errResp.Errors, http.StatusBadRequest, false
	case op.Operation == Mutation && method != http.MethodPost:
		return req, nil, nil, ErrorList{newError(codeBadUserInput, "Mutations can only be sent with POST.", op.Pos)}, http.StatusMethodNotAllowed, false
	case op.Operation == Subscription && !streamed:
		return req, nil, nil, ErrorList{newError(codeBadUserInput, "Subscriptions are served over WebSocket, over SSE (Accept: text/event-stream) and over multipart/mixed;subscriptionSpec=1.0.", op.Pos)}, http.StatusBadRequest, false
	}
	if pq != nil && sent && !h.PersistedOnly {
		h.PersistedQueries.put(pq.hash, req.Query) // sent with the hash it matches, and valid
	}
	return req, p, op, nil, 0, false
}

// serveBatch answers each operation of a batch as if sent alone, in a JSON
// array, status 200. The array is bounded as one answer is: past
// Limits.MaxResponseBytes, the operations left answer RESPONSE_TOO_LARGE.
func (h *Handler) serveBatch(ctx context.Context, w http.ResponseWriter, media string, batch []json.RawMessage) {
	bp := buffers.Get().(*[]byte)
	buf := append((*bp)[:0], '[')
	maxBytes := h.Schema.Limits.MaxResponseBytes
	for i, raw := range batch {
		if i > 0 {
			buf = append(buf, ',')
		}
		var resp *Response
		var params httpParams
		if maxBytes > 0 && len(buf) > maxBytes {
			resp = &Response{Errors: []*Error{newError(CodeResponseTooLarge, "Operation "+strconv.Itoa(i)+" of the batch did not run: the answers before it passed "+strconv.Itoa(maxBytes)+" bytes.")}}
		} else if err := jsonkeys.Unmarshal(raw, &params); err != nil {
			resp = &Response{Errors: []*Error{newError(codeBadUserInput, "Operation "+strconv.Itoa(i)+" of the batch is not a JSON object with GraphQL request parameters: "+paramsFault(err)+".")}}
		} else {
			resp, _, _, _ = h.serve(ctx, http.MethodPost, &params, noIncremental)
		}
		buf = resp.appendJSON(buf)
		resp.release()
	}
	writeBuffer(w, media, http.StatusOK, bp, append(buf, ']', '\n'))
}

// readParams reads the GraphQL request parameters of r: from the URL of a GET,
// from the body of a POST, where a JSON array is a batch, returned undecoded.
// A non-zero status refuses the request.
func (h *Handler) readParams(w http.ResponseWriter, r *http.Request) (params httpParams, batch []json.RawMessage, status int, msg string) {
	limit := positiveOr(h.MaxBytes, maxRequestBytes)
	if isGet(r) {
		if int64(len(r.URL.RawQuery)) > limit {
			return params, nil, http.StatusRequestEntityTooLarge, "The request is larger than " + strconv.FormatInt(limit, 10) + " bytes."
		}
		if msg := readQueryString(r.URL.RawQuery, &params); msg != "" {
			return params, nil, http.StatusBadRequest, msg
		}
		return params, nil, 0, ""
	}
	switch err := reqbody.CheckJSON(r.Header, mediaJSON); err {
	case reqbody.ErrEncoded:
		w.Header().Set("Accept-Encoding", "identity")
		return params, nil, http.StatusUnsupportedMediaType, "The request body must not be content-encoded (Content-Encoding)."
	case reqbody.ErrMediaType:
		return params, nil, http.StatusUnsupportedMediaType, "The request body must be application/json."
	case reqbody.ErrCharset:
		return params, nil, http.StatusUnsupportedMediaType, "The request body must be encoded in UTF-8."
	}
	body, err := reqbody.Read(w, r, limit)
	if err != nil {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			return params, nil, http.StatusRequestEntityTooLarge, "The request body is larger than " + strconv.FormatInt(limit, 10) + " bytes."
		}
		return params, nil, http.StatusBadRequest, "The request body could not be read."
	}
	if trimmed := bytes.TrimLeft(body, " \t\n\r"); len(trimmed) > 0 && trimmed[0] == '[' {
		// Each element's keys are checked as it is decoded; the depth, here.
		if err := jsonkeys.CheckDepth(body); err != nil {
			return params, nil, http.StatusBadRequest, "The request body is not a JSON array of operations: " + err.Error() + "."
		}
		if err := json.Unmarshal(body, &batch); err != nil {
			return params, nil, http.StatusBadRequest, "The request body is not a JSON array of operations: " + paramsFault(err) + "."
		}
		switch n := len(batch); {
		case h.MaxBatch <= 0:
			return params, nil, http.StatusBadRequest, "Batched requests (a JSON array of operations) are not accepted by this server; send one operation per request."
		case n == 0:
			return params, nil, http.StatusBadRequest, "The batch is an empty array; it must hold at least one operation."
		case n > h.MaxBatch:
			return params, nil, http.StatusBadRequest, "The batch holds " + strconv.Itoa(n) + " operations; at most " + strconv.Itoa(h.MaxBatch) + " are accepted in one request."
		}
		return params, batch, 0, ""
	}
	// jsonkeys refuses repeated keys, which a proxy in front may read otherwise,
	// nesting past jsonkeys.MaxDepth and unpaired surrogate escapes.
	if err := jsonkeys.Unmarshal(body, &params); err != nil {
		return params, nil, http.StatusBadRequest, "The request body is not a JSON object with GraphQL request parameters: " + paramsFault(err) + "."
	}
	return params, nil, 0, ""
}

// requestFromParams makes the GraphQL request of params, with the persisted
// query its extensions name, if any. A non-zero status refuses the request.
func requestFromParams(params *httpParams) (Request, *persistedQuery, int, string) {
	pq, msg := readPersistedQuery(params.Extensions)
	if msg != "" {
		return Request{}, nil, http.StatusBadRequest, msg
	}
	req := Request{Query: params.Query, OperationName: params.OperationName}
	if req.Query == "" && pq == nil { // with a persisted query, the hash may stand for it
		return Request{}, nil, http.StatusBadRequest, "The request has no query."
	}
	if len(params.Variables) > 0 && string(params.Variables) != "null" {
		d := json.NewDecoder(bytes.NewReader(params.Variables))
		d.UseNumber()
		err := d.Decode(&req.Variables)
		if err == nil {
			_, err = d.Token() // what follows the object: only the end will do
		}
		if err != io.EOF || req.Variables == nil {
			return Request{}, nil, http.StatusBadRequest, "The variables parameter must be a JSON object."
		}
	}
	return req, pq, 0, ""
}

// readQueryString reads a GET's GraphQL parameters into p, or returns why they
// are refused. A malformed or ambiguous query string (a bad escape, a ";", a
// parameter given twice) is refused, since a proxy in front may read it otherwise.
func readQueryString(raw string, p *httpParams) string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "The query string is malformed: " + err.Error() + "."
	}
	for _, name := range [...]string{"query", "operationName", "variables", "extensions"} {
		if len(q[name]) > 1 {
			return "The query string gives the " + name + " parameter more than once."
		}
	}
	p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
	for _, jp := range [...]struct {
		name string
		dst  *json.RawMessage
	}{{"variables", &p.Variables}, {"extensions", &p.Extensions}} {
		v := q.Get(jp.name)
		if v == "" {
			continue
		}
		// As an array's element: jsonkeys folds letter case in the outermost
		// object only, and the depth is then that of a POST body.
		err := jsonkeys.Check([]byte("[" + v + "]"))
		if dup, ok := errors.AsType[*jsonkeys.Error](err); ok {
			return "The " + jp.name + " parameter repeats the key " + strconv.Quote(dup.Key) + "."
		}
		if _, ok := errors.AsType[*jsonkeys.DepthError](err); ok {
			return "The " + jp.name + " parameter nests arrays and objects deeper than " + strconv.Itoa(jsonkeys.MaxDepth) + " levels."
		}
		if lone, ok := errors.AsType[*jsonkeys.SurrogateError](err); ok {
			return "The " + jp.name + " parameter holds the unpaired surrogate escape " + lone.Escape + ", which names no character."
		}
		*jp.dst = json.RawMessage(v)
	}
	return ""
}

// contentTypeJSON is the Content-Type of application/json answers; never modified.
var contentTypeJSON = []string{mediaJSON + "; charset=utf-8"}

// buffers holds the byte buffers of requests and responses between requests,
// up to maxPooledBody: a rare large one should not pin its memory.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledBody = 64 << 10

// putBuffer gives buf, grown from the pooled *bp, back to the pool.
func putBuffer(bp *[]byte, buf []byte) {
	if cap(buf) <= maxPooledBody {
		*bp = buf
		buffers.Put(bp)
	}
}

// paramsFault says what is wrong with a POST body that did not decode, naming
// no Go type as encoding/json's message for a value of the wrong type does.
func paramsFault(err error) string {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err.Error()
	}
	if te.Field == "" { // the body itself
		return "the body is a JSON " + te.Value
	}
	return te.Field + " must be a string, not a JSON " + te.Value // query and operationName
}

func writeResponse(w http.ResponseWriter, media string, status int, resp *Response) {
	bp := buffers.Get().(*[]byte)
	if len(resp.Data) <= maxPooledBody || resp.raw != nil {
		writeBuffer(w, media, status, bp, append(resp.appendJSON((*bp)[:0]), '\n'))
		resp.release()
		return
	}
	// A large answer is written where the execution rendered it, inside its
	// envelope, rather than copied: a reader that is slow holds it once.
	head := resp.appendHead((*bp)[:0])
	writeHeader(w, media, status, len(head)+len(resp.Data)+2)
	if _, err := w.Write(head); err == nil {
		if _, err := w.Write(resp.Data); err == nil {
			io.WriteString(w, "}\n")
		}
	}
	putBuffer(bp, head)
	resp.release()
}

// writeBuffer sends buf, grown from the pooled *bp, and gives it back.
func writeBuffer(w http.ResponseWriter, media string, status int, bp *[]byte, buf []byte) {
	writeHeader(w, media, status, len(buf))
	w.Write(buf) // copied or sent before it returns: the buffer is free again
	putBuffer(bp, buf)
}

func writeHeader(w http.ResponseWriter, media string, status, length int) {
	h := w.Header()
	if media == mediaJSON { // a shared value saves an allocation on every response
		h["Content-Type"] = contentTypeJSON
	} else {
		h.Set("Content-Type", media+"; charset=utf-8")
	}
	h["Content-Length"] = []string{strconv.Itoa(length)}
	w.WriteHeader(status)
}

// writeHTTPError answers a request refused before any operation ran, with
// BAD_USER_INPUT whatever the status: the fault is the client's.
func writeHTTPError(w http.ResponseWriter, media string, status int, msg string) {
	writeResponse(w, media, status, &Response{Errors: []*Error{newError(codeBadUserInput, msg)}})
}

// WriteError answers as application/json a GraphQL request refused in front of
// the Handler (a rate limit, say), with err's message and extensions.
func WriteError(w http.ResponseWriter, status int, err error) {
	writeResponse(w, mediaJSON, status, &Response{Errors: []*Error{fromResolverError(err)}})
}

// isGraphQLGet reports whether a GET carries a query or a persisted one's hash.
func isGraphQLGet(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("query") || q.Has("extensions")
}

// isGet reports a GET or a HEAD, answered as GET is (RFC 9110 section 9.3.2):
// the operation runs, since the status and headers depend on it.
func isGet(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}

func isWebSocketUpgrade(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return true
			}
		}
	}
	return false
}

type acceptRange struct {
	media  string            // lower case, without parameters
	params map[string]string // by lower-case name
	q      float64           // 1 unless q says otherwise
}

// anyMedia is the ranges of a request without Accept, which accepts every type (RFC 9110).
var anyMedia = []acceptRange{{media: "*/*", q: 1}}

// acceptRanges reads the media ranges of an Accept header that parse, in order:
// once for a request, for each of the answers it may get.
func acceptRanges(accept string) []acceptRange {
	if strings.TrimSpace(accept) == "" {
		return anyMedia
	}
	var ranges []acceptRange
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if f, err := strconv.ParseFloat(params["q"], 64); err == nil {
			q = f
		}
		ranges = append(ranges, acceptRange{mt, params, q})
	}
	return ranges
}

// negotiate reads the ranges of an Accept header: the supported media type of
// highest quality, the first among equals ("" if none), and whether text/html
// comes ahead of the JSON types, as browsers loading a page ask.
func negotiate(accept []acceptRange) (media string, html bool) {
	bestQ, htmlQ, jsonQ := 0.0, -1.0, -1.0
	for _, r := range accept {
		mt, q := r.media, r.q
		switch mt {
		case "text/html":
			htmlQ = max(htmlQ, q)
			continue
		case mediaJSON, mediaGraphQLResponse:
			jsonQ = max(jsonQ, q)
		case "application/*", "*/*":
			mt = mediaJSON
		default:
			continue
		}
		if q > bestQ {
			media, bestQ = mt, q
		}
	}
	return media, htmlQ > 0 && htmlQ >= jsonQ
}
