package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"quartet/compare"
	"quartet/graphql"
	"quartet/internal/accesslog"
	"quartet/internal/admission"
	"quartet/internal/contentcoding"
	"quartet/internal/cors"
	"quartet/internal/grpcweb"
	"quartet/internal/jsonkeys"
	"quartet/internal/jsonscan"
	"quartet/internal/metrics"
	"quartet/internal/reqbody"
)

// maxBodyBytes bounds every request body (docs/rest.md: larger is 413): the door's.
const maxBodyBytes = admission.MaxBodyBytes

// Server is the HTTP side of quartet: REST, GraphQL and OData on one ServeMux, all over
// the one store.
type Server struct {
	store      *Store
	log        *slog.Logger
	opts       serverOptions
	mux        *http.ServeMux
	websockets *graphql.WebSocketHandler // the live sockets, which http.Server.Shutdown does not see
	metrics    *metrics.Set
	requests   *metrics.Table   // the HTTP requests' counts, in metrics
	odata      http.HandlerFunc // the paths isODataPath claims that no pattern matched
	graphql    *graphql.Handler
	methods    map[string][]string                                          // per path pattern, the methods it answers: for 405's Allow
	restAccess map[string]access                                            // per REST route pattern, what its caller needs
	openAPIDoc []byte                                                       // GET /openapi.json
	refuse     func(http.ResponseWriter, *http.Request, *admission.Refused) // answers a request whose answer the door refused; made once, not per request
}

// serverOptions are the HTTP side's settings; a zero number takes graphql.DefaultLimits.
type serverOptions struct {
	auth            *authenticator // nil: authentication off
	graphqlMaxDepth int
	graphqlMaxCost  int
	graphqlMaxBytes int               // answer size
	graphqlBatchMax int               // operations in one POST array; 0: arrays refused
	persistedOnly   bool              // GraphQL over HTTP runs pinned persisted queries only
	origins         cors.Policy       // the pages of other origins allowed in
	metrics         *metrics.Set      // shared with gRPC; nil: the server keeps its own
	pprof           bool              // serve /debug/pprof/ (-pprof)
	door            *admission.Door   // the entrance, shared with gRPC; nil: one without a queue
	proxies         admission.Proxies // trusted to name their clients (-trusted-proxies)
	warning         string            // shown by /healthz for as long as the service runs
	publicURL       string            // -public-url, no trailing slash; "": unknown
	grpcAddr        string            // where the gRPC server listens, for the query editor; "": unknown
	grpcWeb         http.Handler      // gRPC-Web calls (internal/grpcweb); nil: not served
}

// NewServer returns a Server with every route added.
func NewServer(store *Store, log *slog.Logger, opts serverOptions) *Server {
	s := &Server{store: store, log: log, opts: opts, mux: http.NewServeMux(), methods: map[string][]string{}, restAccess: map[string]access{},
		metrics: opts.metrics}
	s.refuse = func(w http.ResponseWriter, r *http.Request, refused *admission.Refused) { // the mux has matched r by then
		s.refuseBusy(w, r, httpSurface(httpRoute(r.Pattern, r)), refused)
	}
	if s.metrics == nil {
		s.metrics = newMetrics()
	}
	if s.opts.door == nil { // no queue: a server of its own, in tests
		l := admission.Defaults()
		l.WorkSlots = 0
		s.opts.door = admission.NewDoor(l, opts.proxies, log)
	}
	s.requests = s.metrics.Table("http", httpSurface, nil)
	s.addRoutes()
	s.openAPIDoc = s.openAPIDocument()
	return s
}

// addRoutes is the one place every HTTP route of the service is listed.
func (s *Server) addRoutes() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /openapi.json", s.openAPI)

	read := s.opts.auth.readAccess()
	s.restRoute("GET /api/users", read, s.listUsers)
	s.restRoute("POST /api/users", accessWrite, s.createUser)
	s.restRoute("GET /api/users/{id}", read, s.getUser)
	s.restRoute("PUT /api/users/{id}", accessWrite, s.updateUser)
	s.restRoute("PATCH /api/users/{id}", accessWrite, s.patchUser)
	s.restRoute("DELETE /api/users/{id}", accessWrite, s.deleteUser)
	s.restRoute("GET /api/users/{userId}/orders", read, s.listUserOrders)
	s.restRoute("POST /api/users/{userId}/orders", accessWrite, s.createUserOrder)
	s.restRoute("GET /api/users/{userId}/orders/{id}", read, s.getUserOrder)

	s.addODataRoutes(newODataService(s.store, s.store.clock, s.opts.publicURL))

	schema := newGraphQLSchema(s.store, s.opts.auth, s.log, cmp.Or(s.opts.graphqlMaxDepth, graphql.DefaultLimits.MaxDepth))
	schema.Limits.MaxCost = cmp.Or(s.opts.graphqlMaxCost, graphql.DefaultLimits.MaxCost)
	schema.Limits.MaxResponseBytes = cmp.Or(s.opts.graphqlMaxBytes, graphql.DefaultLimits.MaxResponseBytes)
	graphqlHandler, ws := newGraphQLHandler(schema, s.opts.auth, s.opts.origins, s.opts.persistedOnly, s.opts.door, s.opts.grpcAddr, s.log)
	s.websockets = ws
	graphqlHandler.MaxBatch = s.opts.graphqlBatchMax
	s.graphql = graphqlHandler
	s.handle("GET /graphql", graphqlHandler.ServeHTTP)
	s.handle("POST /graphql", graphqlHandler.ServeHTTP)
	s.handle("PUT /graphql", graphqlHandler.ServeHTTP)    // an SSE stream's reservation
	s.handle("DELETE /graphql", graphqlHandler.ServeHTTP) // an operation on a reserved stream
	s.handle("GET /graphql/schema.graphql", s.graphQLSchema)

	pages := compare.Options{GRPCAddress: s.opts.grpcAddr}
	s.handle("GET /{$}", compare.Index(pages).ServeHTTP)
	s.handle("GET /compare", compare.Handler(pages).ServeHTTP)

	s.handle("GET /metrics", s.metrics.Handler(serviceGauges(s.store, s.opts.door)))
	if s.opts.pprof {
		s.addProfiling()
	}

	s.addFallbacks()
}

// addProfiling serves net/http/pprof under /debug/pprof/. Profiles show the program's
// internals and cost the service while they run, so they are served only where -pprof
// says, only to this machine, and never the command line, which may hold -jwt-secret.
func (s *Server) addProfiling() {
	s.handle("GET /debug/pprof/", loopbackOnly(pprof.Index))
	s.handle("GET /debug/pprof/cmdline", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "the command line is not served: it may hold secrets", nil)
	})
	s.handle("GET /debug/pprof/profile", loopbackOnly(pprof.Profile))
	s.handle("GET /debug/pprof/symbol", loopbackOnly(pprof.Symbol))
	s.handle("POST /debug/pprof/symbol", loopbackOnly(pprof.Symbol))
	s.handle("GET /debug/pprof/trace", loopbackOnly(pprof.Trace))
}

// loopbackOnly serves h to a request from this machine that names it in its Host
// header: the Host check stops DNS rebinding, as a web page can make a browser send
// requests to 127.0.0.1, but only under its own host name.
func loopbackOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		hostIP, _ := netip.ParseAddr(host)           // the zero Addr is no loopback
		peer, _ := netip.ParseAddrPort(r.RemoteAddr) // nor is the zero AddrPort's
		local := strings.EqualFold(host, "localhost") || hostIP.IsLoopback()
		if !local || !peer.Addr().Unmap().IsLoopback() {
			writeProblem(w, http.StatusForbidden, "profiling answers only on this machine, at localhost, 127.0.0.1 or [::1]", nil)
			return
		}
		h(w, r)
	}
}

// handle registers h for pattern ("METHOD /path") and remembers the method for the
// path's 405 answer.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	s.methods[path] = append(s.methods[path], method)
	s.mux.HandleFunc(pattern, h)
}

// addFallbacks answers as problem+json what ServeMux would answer in plain text: 405
// with Allow for a known path and another method (from a mux keyed by path alone, so
// it never conflicts with the real routes), 404 for an unknown path. OData paths go
// to the OData service instead, which answers them as OData clients read them.
func (s *Server) addFallbacks() {
	byPath := http.NewServeMux()
	for path, methods := range s.methods {
		byPath.Handle(path, methodNotAllowed(methods...))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.odata != nil && isODataPath(r.URL.Path) {
			s.odata(w, r)
		} else if _, pattern := byPath.Handler(r); pattern != "" {
			byPath.ServeHTTP(w, r)
		} else {
			writeProblem(w, http.StatusNotFound, fmt.Sprintf("no resource at %s", r.URL.Path), nil)
		}
	})
}

// methodNotAllowed answers a path's other methods: OPTIONS with 204, the rest with 405,
// both naming the allowed methods.
func methodNotAllowed(methods ...string) http.Handler {
	allow := slices.Clone(methods)
	if slices.Contains(allow, http.MethodGet) {
		allow = append(allow, http.MethodHead)
	}
	allow = append(allow, http.MethodOptions)
	slices.Sort(allow)
	allowHeader := strings.Join(allow, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowHeader)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allowHeader), nil)
	})
}

// ServeHTTP passes r down the chain docs/design.md draws, outermost step first.
// Each step is a method of exchange; a deferred one runs when the inner ones are done.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := s.begin(w, s.clientAddress(r))
	defer x.count() // deferred first, so it runs last: after a 500 for a panic, and for an aborted answer too
	x.compress()
	x.identify()
	defer x.logLine()
	x.closeIfFramingUnclear()
	if x.grpcWeb() {
		return
	}
	if !x.admit() {
		return
	}
	defer x.leave()
	s.mux.ServeHTTP(x.out, x.r)
}

// exchange is one HTTP request on its way down ServeHTTP's chain: what a step
// leaves for the steps after it.
type exchange struct {
	s       *Server
	r       *http.Request
	rec     statusRecorder            // under every writer: the status and size, for the log and metrics
	out     http.ResponseWriter       // what the next step writes to
	gz      *contentcoding.GzipWriter // nil: the answer is not compressed
	who     *caller                   // nil: no identity to log
	start   time.Time
	took    time.Duration           // set by the log line, unless the answer was aborted
	pattern string                  // of a request the door turned away, or routeGRPCWeb: the mux sets r.Pattern for the rest
	answer  *admission.AnswerWriter // gives back what the door gave
}

// clientAddress makes r come from the client a trusted proxy names: for the queue,
// the caps, the logs and every handler from here on.
func (s *Server) clientAddress(r *http.Request) *http.Request {
	if !s.opts.proxies.Any() {
		return r
	}
	if addr := s.opts.proxies.RemoteAddr(r.RemoteAddr, r.Header.Values); addr != r.RemoteAddr {
		r = r.WithContext(r.Context()) // a copy: a handler must not change the request it was given
		r.RemoteAddr = addr
	}
	return r
}

// begin starts the clock and the recorder, and counts the request as in flight.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) *exchange {
	x := &exchange{s: s, r: r, rec: statusRecorder{ResponseWriter: w}, start: time.Now()}
	x.out = &x.rec
	s.requests.Start()
	return x
}

// count records the request in the metrics, under its route.
func (x *exchange) count() {
	if x.took == 0 {
		x.took = time.Since(x.start)
	}
	x.s.requests.Done(httpRoute(cmp.Or(x.r.Pattern, x.pattern), x.r), x.rec.statusOrOK(), x.took)
}

// compress gzips the answer when the client accepts it.
func (x *exchange) compress() {
	if x.gz = contentcoding.Gzip(&x.rec, x.r); x.gz != nil {
		x.out = x.gz
	}
}

// identify gives the request a caller to log, when authentication is on.
func (x *exchange) identify() {
	if x.s.opts.auth != nil {
		var ctx context.Context
		ctx, x.who = withCaller(x.r.Context())
		x.r = x.r.WithContext(ctx)
	}
}

// logLine answers a panic with a 500, ends the compression and writes the log line.
func (x *exchange) logLine() {
	r := x.r
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		x.s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
		if x.gz != nil {
			x.gz.Abandon()
			x.gz = nil
		}
		if x.rec.status == 0 {
			writeProblem(&x.rec, http.StatusInternalServerError, "internal server error", nil)
		}
	}
	var extra []slog.Attr
	if x.gz != nil {
		if err := x.gz.Close(); err != nil {
			extra = append(extra, slog.String("error", "gzip answer cut short: "+err.Error()))
		}
	}
	extra = append(extra, subjectAttrs(x.who)...)
	end := time.Now()
	x.took = end.Sub(x.start)
	// The handler itself, with typed attributes: no boxing, and no caller's
	// program counter, which Logger looks up although no source is printed.
	if h := x.s.log.Handler(); h.Enabled(r.Context(), slog.LevelInfo) {
		line := slog.NewRecord(end, slog.LevelInfo, "http", 0)
		line.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", x.rec.statusOrOK()), slog.Int64("bytes", x.rec.bytes),
			slog.Duration("duration", x.took), slog.String("remote", r.RemoteAddr))
		line.AddAttrs(extra...)
		line.AddAttrs(accesslog.TraceAttrs(r.Header["Traceparent"])...)
		h.Handle(r.Context(), line)
	}
}

// closeIfFramingUnclear ends the connection after this answer when a proxy in front
// may disagree on where the next request starts (RFC 9112 section 6.1): it may have
// read the Content-Length net/http drops, or an HTTP/1.0 request's Transfer-Encoding.
func (x *exchange) closeIfFramingUnclear() {
	if len(x.r.TransferEncoding) > 0 || !x.r.ProtoAtLeast(1, 1) {
		x.rec.Header().Set("Connection", "close")
	}
}

// grpcWeb serves a gRPC-Web call, uncompressed, and reports whether r was one. It is
// past the door: the gRPC server's interceptors give the call its slots.
func (x *exchange) grpcWeb() bool {
	if x.s.opts.grpcWeb == nil || !grpcweb.IsRequest(x.r) {
		return false
	}
	x.pattern = routeGRPCWeb
	x.s.opts.grpcWeb.ServeHTTP(&x.rec, x.r)
	return true
}

// admit takes r through the door, or answers its refusal in its surface's format
// and reports false. A profile or trace under /debug/pprof/ waits for seconds
// without computing, and would hold a slot all along: it passes by.
func (x *exchange) admit() bool {
	s, r := x.s, x.r
	if s.opts.pprof && strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
		return true
	}
	in, err := s.opts.door.Enter(x.out, r, admission.Of(r.RemoteAddr), s.refuse)
	if err != nil {
		_, x.pattern = s.mux.Handler(r)
		if refused, ok := err.(*admission.Refused); ok {
			s.refuseBusy(&x.rec, r, httpSurface(httpRoute(x.pattern, r)), refused)
		} else {
			x.rec.status = statusClientClosed // gone while it waited: nothing is answered
		}
		return false
	}
	x.out, x.answer = in, in
	return true
}

func (x *exchange) leave() {
	if x.answer != nil {
		x.answer.Done()
	}
}

// statusClientClosed is what the log and the metrics record for a request whose
// client left before it was answered (nginx's 499): not a success, not a refusal.
const statusClientClosed = 499

// exhausted is the domain's form of a refusal at the door.
func exhausted(refused *admission.Refused) *Error {
	return &Error{Kind: KindExhausted, Message: refused.Error()}
}

// refuseBusy answers a request the door refused with its surface's error writer.
func (s *Server) refuseBusy(w http.ResponseWriter, r *http.Request, surface string, refused *admission.Refused) {
	w.Header().Set("Retry-After", "1")
	s.errorWriter(surface)(w, r, exhausted(refused))
}

// errorWriter is the one writer of domain errors of the HTTP surface named surface
// (httpSurface); each reads the codes from kindCodes.
func (s *Server) errorWriter(surface string) func(http.ResponseWriter, *http.Request, error) {
	switch surface {
	case "graphql":
		return writeGraphQLError
	case "odata":
		return writeODataError
	}
	return s.writeError
}

// Shutdown closes every WebSocket with a going-away close frame after what is already
// queued for it, and ends every SSE and multipart stream; http.Server.Shutdown takes
// care of the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	streams := make(chan error, 1)
	go func() { streams <- s.graphql.Streams.Shutdown(ctx) }()
	return cmp.Or(s.websockets.Shutdown(ctx), <-streams)
}

// healthz answers 200 {"status":"ok"} while the service works; 200 "degraded" with a
// reason while snapshots fail, which a restart would not mend (docs/durability.md);
// and 503 with a reason once the store refuses writes for good (its journal failed),
// so an orchestrator restarts it; with a warning about the configuration, if any.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	body, status := map[string]string{"status": "ok"}, http.StatusOK
	if s.opts.warning != "" {
		body["warning"] = s.opts.warning
	}
	if reason := s.store.Degraded(); reason != "" {
		body["status"], body["reason"] = "degraded", reason
	}
	if reason := s.store.Unavailable(); reason != "" {
		body["status"], body["reason"], status = "unavailable", reason, http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

// statusRecorder remembers the status and size of a response for the log line; it
// keeps Flush and Hijack working and unwraps for http.ResponseController.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *statusRecorder) statusOrOK() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijacking not supported")
	}
	r.status = http.StatusSwitchingProtocols
	return h.Hijack()
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeJSON writes v as the JSON body of a response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "internal server error", nil)
		return
	}
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// contentTypeJSON is the Content-Type header of JSON answers, shared (it saves an
// allocation per answer); never modified.
var contentTypeJSON = []string{"application/json"}

// responseChunk is how much of a list's JSON is sent at a time.
const responseChunk = 32 << 10

// writeJSONList answers 200 with the JSON array of items, a chunk at a time: the
// whole answer for a million users (about 100 MB) is never in memory.
func writeJSONList[T any](w http.ResponseWriter, items []T) {
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, responseChunk+1024)
	buf = append(buf, '[')
	for i, item := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		j, err := json.Marshal(item)
		if err != nil {
			return // not for the store's records; the client sees a cut-off body
		}
		if buf = append(buf, j...); len(buf) >= responseChunk {
			if _, err := w.Write(buf); err != nil {
				return // the client went away
			}
			buf = buf[:0]
		}
	}
	w.Write(append(buf, "]\n"...))
}

// problem is an RFC 9457 problem details body.
type problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors map[string][]string `json:"errors,omitempty"`
}

// writeProblem answers with an application/problem+json body.
func writeProblem(w http.ResponseWriter, status int, detail string, fields map[string][]string) {
	body, _ := json.Marshal(problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Errors: fields})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Del("Content-Length")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// writeError answers with the problem for a domain error; anything else is logged and
// answered as a bare 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := asError(err)
	if e.Kind == KindInternal {
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if e.Kind == KindUnauthenticated && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeProblem(w, kindCodes[e.Kind].http, e.Message, e.Fields)
}

// decodeOneJSONValue decodes src into v with encoding/json: one value, then nothing
// but white space. A body over its limit is reported as the http.MaxBytesError it is.
func decodeOneJSONValue(src io.Reader, v any) error {
	dec := json.NewDecoder(src)
	if err := dec.Decode(v); err != nil {
		return err
	}
	_, err := dec.Token()
	if err == io.EOF {
		return nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	return errors.New("unexpected data after the JSON value")
}

// decodeJSON reads r's body into v: its headers must pass reqbody.CheckJSON
// for mediaType, and it must be at most maxBodyBytes and exactly one JSON value with
// no repeated key (decodeBody). On failure it answers the request itself (415, 413 or 400) and
// reports false.
func decodeJSON(w http.ResponseWriter, r *http.Request, mediaType string, v any) bool {
	if err := reqbody.CheckJSON(r.Header, mediaType); err != nil {
		detail := "the request body must be " + mediaType
		switch {
		case err == reqbody.ErrEncoded:
			w.Header().Set("Accept-Encoding", "identity")
			detail = "the request body must not be content-encoded (Content-Encoding)"
		case mediaType == mergePatchType:
			w.Header().Set("Accept-Patch", mergePatchType) // RFC 5789 section 3.1
			detail = "the request body must be " + mergePatchType + " (UTF-8)"
		case err == reqbody.ErrCharset:
			detail = "the request body must be encoded in UTF-8"
		}
		writeProblem(w, http.StatusUnsupportedMediaType, detail, nil)
		return false
	}
	data, err := reqbody.Read(w, r, maxBodyBytes)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", maxBodyBytes), nil)
		return false
	}
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "the request body could not be read", nil)
		return false
	}
	if err := decodeBody(data, v); err != nil {
		writeProblem(w, http.StatusBadRequest, "request body: "+err.Error(), nil)
		return false
	}
	return true
}

// decodeBody decodes data into v as encoding/json would, but refuses invalid UTF-8
// (which encoding/json would replace with U+FFFD) and what package jsonkeys refuses:
// a repeated key (in the outermost object also in another letter case, which
// encoding/json would match to the same field), too deep a nesting, an unpaired
// surrogate escape. Errors are worded for the client.
func decodeBody(data []byte, v any) error {
	if !utf8.Valid(data) { // RFC 8259 section 8.1
		return errors.New("not valid UTF-8")
	}
	if err := jsonkeys.Check(data); jsonkeys.Refused(err) {
		return err
	}
	// Any other error Check found, encoding/json finds too, and words it as usual.
	if err := decodeOneJSONValue(bytes.NewReader(data), v); err != nil {
		return jsonscan.Describe(err)
	}
	return nil
}

// newMetrics returns the counts /metrics reports; the help texts say what the
// routes, codes and protocols of the servers' tables are.
func newMetrics() *metrics.Set {
	return &metrics.Set{Help: metrics.Help{
		Requests: "Requests answered, by surface, route (pattern or gRPC method) and status code (HTTP status or gRPC code name).",
		Duration: "Time to answer a request (for a WebSocket or a gRPC stream: its whole life), by surface and route.",
		InFlight: "Requests being answered now, by protocol (HTTP includes open WebSockets).",
	}}
}

// routeOData is the route the metrics count an OData request under when no pattern
// matched it: bounded, unlike its path.
const routeOData = "/api/* (OData)"

// routeGRPCWeb is the route of every gRPC-Web call: the gRPC table counts each method.
const routeGRPCWeb = "POST /* (gRPC-Web)"

// httpRoute is a request's route in the metrics: the ServeMux pattern that matched
// it, which keeps the label bounded; for the catch-all, routeOData or
// metrics.Unmatched (a gRPC-Web call's is routeGRPCWeb, set as it is served).
func httpRoute(pattern string, r *http.Request) string {
	switch {
	case pattern != "" && pattern != "/":
		return pattern
	case isODataPath(r.URL.Path):
		return routeOData
	}
	return metrics.Unmatched
}

// httpSurface names the surface an HTTP route belongs to in the metrics: rest,
// graphql, odata, grpc-web, or other (/healthz, /metrics, /debug/pprof/ and metrics.Unmatched).
func httpSurface(route string) string {
	_, path, _ := strings.Cut(route, " ")
	switch {
	case strings.HasPrefix(path, "/graphql"):
		return "graphql"
	case strings.HasPrefix(path, "/api/users"):
		return "rest"
	case route == routeOData || isODataPath(path):
		return "odata"
	case route == routeGRPCWeb:
		return "grpc-web"
	}
	return "other"
}

// serviceGauges adds to a scrape the levels read at scrape time rather than
// counted: the door's, the GraphQL WebSockets' and the store's (nil: none).
func serviceGauges(store *Store, entrance *admission.Door) func(*metrics.Text) {
	return func(x *metrics.Text) {
		one := func(name, kind, help string, v int64) {
			x.Family(name, kind, help)
			x.Sample(name, float64(v))
		}
		if entrance != nil {
			work, bodyBytes, answerBytes := entrance.Stats()
			one("quartet_queue_slots_busy", "gauge", "Work under way (HTTP requests, gRPC messages, WebSocket messages), a lone client's included.", int64(work.Running))
			one("quartet_queue_waiting", "gauge", "Work waiting for a slot.", int64(work.Waiting))
			one("quartet_queue_body_bytes", "gauge", "Request body bytes read ahead by requests not yet done.", bodyBytes)
			one("quartet_answer_bytes", "gauge", "Answer bytes rendered and not yet taken by their connections (past the first 64 KiB of each).", answerBytes)
			sockets, operations := entrance.Sockets, entrance.Operations
			one("quartet_websocket_connections", "gauge", "GraphQL WebSockets open.", sockets.Held())
			one("quartet_websocket_subscriptions", "gauge", "GraphQL WebSocket operations (subscriptions, in the main) active.", operations.Held())
		}
		if store == nil {
			return
		}
		st := store.Stats()
		x.Family("quartet_store_records", "gauge", "Records in the store, by table.")
		for i, n := range []int{st.Comments, st.Orders, st.Posts, st.Products, st.Users} {
			x.Sample("quartet_store_records", float64(n), "table", []string{"comments", "orders", "posts", "products", "users"}[i])
		}
		if st.Durable {
			one("quartet_journal_writes_total", "counter", "Changes written to the journal.", st.Journal.Writes)
			one("quartet_journal_fsyncs_total", "counter", "Journal fsyncs, one per group-committed batch: writes/fsyncs is the mean batch size.", st.Journal.Fsyncs)
			one("quartet_snapshot_failures_total", "counter", "Snapshots that failed, at the journal's rotation or the snapshot's write; the journal keeps every write meanwhile.", st.Journal.SnapshotFailures)
			one("quartet_journal_bytes", "gauge", "Journal bytes a restart replays after the snapshot; writes are refused at 4 times -snapshot-bytes.", st.Journal.Bytes)
		}
	}
}
