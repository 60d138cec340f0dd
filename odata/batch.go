package odata

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"quartet/internal/contentcoding"
	"quartet/internal/jsonkeys"
	"quartet/internal/jsonscan"
	"quartet/internal/reqbody"
)

// Batch serves POST {Root}$batch, in the JSON batch format of OData 4.01 (JSON
// Format, section 19) or the multipart/mixed one of OData 4.0. The service is
// read-only: only GET requests are served, any other is answered 405 in its own
// response. Each request goes through Handler as if it had been sent alone, with
// the batch's headers (its credentials among them) under its own.
type Batch struct {
	Handler http.Handler // serves each request: the server's routes
	Root    string       // the service root ("/api/"), which relative URLs start from
	// Serves reports whether path is a resource of the service, the only paths
	// a batch may address.
	Serves func(path string) bool
	Limits Limits // MaxBatchRequests, MaxBatchBytes, MaxBatchAnswerBytes
}

// batchRequest is one request of a JSON batch; the fields for writes are ignored.
// It is not run when a request it depends on (an earlier one) was answered 4xx or 5xx.
type batchRequest struct {
	ID        string            `json:"id"`
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	DependsOn []string          `json:"dependsOn"`
}

type batchResponse struct {
	ID      string            `json:"id"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// ServeHTTP answers a request to $batch.
func (bt *Batch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowOnly(w, r, "$batch", http.MethodPost) {
		return
	}
	limits := bt.Limits.orDefault()
	if contentcoding.Encoded(r.Header) {
		w.Header().Set("Accept-Encoding", "identity")
		write(w, errorResponse(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "a batch must not be content-encoded (Content-Encoding)"))
		return
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
	case "multipart/mixed":
		bt.serveMultipart(w, r, params["boundary"], limits)
		return
	default:
		write(w, errorResponse(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "a batch must be sent as application/json or multipart/mixed"))
		return
	}
	body, ok := readBatch(w, r, limits)
	if !ok {
		return
	}
	var batch struct {
		Requests []batchRequest `json:"requests"`
	}
	// Checked as every request body of the service is: too deep, an unpaired
	// surrogate escape or a repeated key is refused before decoding.
	if err := jsonkeys.Check(body); jsonkeys.Refused(err) {
		write(w, errorResponse(http.StatusBadRequest, "BadRequest", "the batch is refused: "+err.Error()))
		return
	}
	if err := json.Unmarshal(body, &batch); err != nil {
		write(w, errorResponse(http.StatusBadRequest, "BadRequest", "the batch is not valid JSON: "+jsonscan.Describe(err).Error()))
		return
	}
	if msg := checkBatch(batch.Requests, limits.MaxBatchRequests); msg != "" {
		write(w, errorResponse(http.StatusBadRequest, "BadRequest", msg))
		return
	}
	out := struct {
		Responses []batchResponse `json:"responses"`
	}{Responses: make([]batchResponse, len(batch.Requests))}
	room := limits.MaxBatchAnswerBytes
	claim := answerClaim(w)
	failed := map[string]bool{} // by id: answered 4xx or 5xx
	for i, req := range batch.Requests {
		answer := bt.serve(r, req, room, failed)
		failed[req.ID] = answer.status >= 400
		room -= answer.body.Len()
		if refused(w, claim, limits.MaxBatchAnswerBytes-room) {
			return
		}
		out.Responses[i] = answer.response(req.ID)
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err) // only strings, numbers and valid raw JSON: a defect
	}
	write(w, Response{http.StatusOK, "application/json", b})
}

// readBatch reads the body of r within MaxBatchBytes; if it cannot, it answers r.
func readBatch(w http.ResponseWriter, r *http.Request, limits Limits) ([]byte, bool) {
	body, err := reqbody.Read(w, r, int64(limits.MaxBatchBytes))
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		write(w, errorResponse(http.StatusRequestEntityTooLarge, "PayloadTooLarge", "a batch may have at most "+strconv.Itoa(limits.MaxBatchBytes)+" bytes"))
		return nil, false
	}
	return body, err == nil // an error is the client gone: no one to answer
}

// checkBatch returns why the requests cannot be served as a batch, or "".
func checkBatch(reqs []batchRequest, max int) string {
	if len(reqs) == 0 {
		return `a batch needs "requests", a non-empty array`
	}
	if len(reqs) > max {
		return "a batch may hold at most " + strconv.Itoa(max) + " requests"
	}
	ids := map[string]bool{}
	for _, req := range reqs {
		switch {
		case req.ID == "":
			return `every request of a batch needs an "id"`
		case ids[req.ID]:
			return "request id " + strconv.Quote(req.ID) + " is used twice"
		case req.URL == "":
			return "request " + strconv.Quote(req.ID) + ` has no "url"`
		}
		for _, dep := range req.DependsOn {
			if !ids[dep] {
				return "request " + strconv.Quote(req.ID) + " depends on " + strconv.Quote(dep) + ", which is no earlier request of the batch"
			}
		}
		ids[req.ID] = true
	}
	return ""
}

// serve answers one request of the batch sent as r, in at most room bytes of body,
// unless a request it depends on failed (by id, in failed).
func (bt *Batch) serve(r *http.Request, req batchRequest, room int, failed map[string]bool) *partRecorder {
	fail := failedPart
	if j := slices.IndexFunc(req.DependsOn, func(id string) bool { return failed[id] }); j >= 0 {
		return fail(http.StatusFailedDependency, "FailedDependency", "request "+strconv.Quote(req.DependsOn[j])+", which this one depends on, failed")
	}
	if !strings.EqualFold(req.Method, http.MethodGet) {
		p := fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "method "+req.Method+" is not allowed in a batch: the service is read-only; allowed: GET")
		p.header.Set("Allow", http.MethodGet)
		return p
	}
	// Clients leave spaces unescaped, which url.Parse and the query parser refuse.
	u, err := url.Parse(strings.ReplaceAll(req.URL, " ", "%20"))
	if err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "invalid url "+strconv.Quote(req.URL))
	}
	path := u.Path
	if !u.IsAbs() && !strings.HasPrefix(path, "/") {
		path = bt.Root + path
	}
	// A path with dot segments would be redirected by the mux, perhaps outside
	// the service: it is no resource of the service as sent.
	clean := pathpkg.Clean(path) == strings.TrimSuffix(path, "/")
	if !clean || u.IsAbs() && u.Host != r.Host || bt.Serves != nil && !bt.Serves(path) || path == bt.Root+"$batch" {
		return fail(http.StatusNotFound, "NotFound", "no resource of this service at "+strconv.Quote(req.URL))
	}
	target := (&url.URL{Path: path, RawQuery: u.RawQuery}).RequestURI()
	sub, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target, nil)
	if err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "invalid url "+strconv.Quote(req.URL))
	}
	sub.Host, sub.RemoteAddr, sub.TLS, sub.RequestURI = r.Host, r.RemoteAddr, r.TLS, target
	sub.Header = r.Header.Clone()
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"} {
		sub.Header.Del(h) // they describe the batch's body, not this request's
	}
	for k, v := range req.Headers {
		sub.Header.Set(k, v)
	}
	rec := &partRecorder{header: http.Header{}, room: room}
	switch {
	case !rec.run(bt.Handler, sub):
		return fail(http.StatusInternalServerError, "InternalError", "the answer failed while it was being written")
	case rec.full:
		return fail(http.StatusBadRequest, "BadRequest", "the answers of a batch may have at most "+strconv.Itoa(bt.Limits.orDefault().MaxBatchAnswerBytes)+" bytes; ask for less ($top, $select) or send this request alone")
	}
	rec.status = cmp.Or(rec.status, http.StatusOK) // nothing written: 200, as net/http answers
	return rec
}

// failedPart answers a request of a batch that is not served.
func failedPart(status int, code, msg string) *partRecorder {
	e := errorResponse(status, code, msg)
	p := &partRecorder{header: http.Header{"Content-Type": {e.ContentType}, "Odata-Version": {"4.0"}}, status: status}
	p.body.Write(e.Body)
	return p
}

// partRecorder is the http.ResponseWriter of one request of a batch, holding at
// most room bytes of body; past them it refuses to write and is full.
type partRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	room   int
	full   bool
}

// answerClaim finds the ClaimAnswer of w or of a ResponseWriter it wraps: the
// budget a batch's answers, built whole before they are sent, claim as they grow.
// Without one, nothing is claimed.
func answerClaim(w http.ResponseWriter) func(int64) error {
	for {
		if c, ok := w.(interface{ ClaimAnswer(int64) error }); ok {
			return c.ClaimAnswer
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return func(int64) error { return nil }
		}
		w = u.Unwrap()
	}
}

// refused claims what a batch's answers hold once used bytes of them are built
// (they are copied once into the whole answer), and answers 429 when the claim
// is refused.
func refused(w http.ResponseWriter, claim func(int64) error, used int) bool {
	err := claim(2 * int64(used))
	if err == nil {
		return false
	}
	w.Header().Set("Retry-After", "1")
	write(w, errorResponse(http.StatusTooManyRequests, "TooManyRequests", err.Error()))
	return true
}

// errAnswerTooLarge ends the writes of a request whose answer passes the batch's room.
var errAnswerTooLarge = errors.New("odata: the batch's answers exceed MaxBatchAnswerBytes")

func (p *partRecorder) Header() http.Header { return p.header }

func (p *partRecorder) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *partRecorder) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	if p.full || p.body.Len()+len(b) > p.room {
		p.full = true
		return 0, errAnswerTooLarge
	}
	return p.body.Write(b)
}

// run serves req into p; it reports false if the handler gave up half-way
// (http.ErrAbortHandler, which would otherwise cut the batch's connection).
func (p *partRecorder) run(h http.Handler, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			ok = false
		}
	}()
	h.ServeHTTP(p, req)
	return true
}

// response is what was recorded, as JSON batches answer it: headers by lower-case
// name, a JSON body as JSON, other text as a string, anything else in base64url.
func (p *partRecorder) response(id string) batchResponse {
	resp := batchResponse{ID: id, Status: p.status, Headers: map[string]string{}}
	for k, v := range p.header {
		if k != "Content-Length" && len(v) > 0 {
			resp.Headers[strings.ToLower(k)] = v[0]
		}
	}
	b := p.body.Bytes()
	mt, _, _ := mime.ParseMediaType(p.header.Get("Content-Type"))
	switch {
	case len(b) == 0:
	case (mt == "application/json" || strings.HasSuffix(mt, "+json")) && json.Valid(b):
		resp.Body = b
	case strings.HasPrefix(mt, "text/") && utf8.Valid(b):
		resp.Body, _ = json.Marshal(string(b))
	default:
		resp.Body, _ = json.Marshal(base64.RawURLEncoding.EncodeToString(b))
	}
	return resp
}
