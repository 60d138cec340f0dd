package odata

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"quartet/internal/etag"
)

// Route serves GET requests for one entity set, with one endpoint's Settings: a
// collection (serveList) or a single entity (serveValue, through a Service,
// which resolves paths to Routes).
type Route struct {
	Set      *EntitySet
	Settings Settings

	List        func(ctx context.Context) []any                  // the whole set, in key order
	Get         func(ctx context.Context, key int64) (any, bool) // one entity by key
	Restrict    func(any) bool                                   // if set, applied after $filter
	AlwaysCount bool                                             // counts in every collection answer
	// ETag sends each single entity's strong ETag, as the ETag header and
	// @odata.etag, and answers 412 to an If-Match that does not name it, 304 to an
	// If-None-Match that does.
	ETag bool
	// Metadata is the URL of $metadata that context URLs name, absolute or a
	// path; empty means "$metadata".
	Metadata string
}

// Response is a complete HTTP answer.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

const jsonType = "application/json; odata.metadata=minimal"

// serveValue answers one entity, x, found by the caller (by key or by navigation).
func (rt *Route) serveValue(w http.ResponseWriter, r *http.Request, x any) {
	metadata := rt.metadataURL()
	q, err := parseQuery(r.URL.RawQuery, rt.Set.Type, rt.Settings)
	if err == nil {
		err = q.negotiate(r, serviceRoot(metadata))
	}
	if err != nil {
		write(w, badRequest(err))
		return
	}
	if rt.ETag {
		q.etag = rt.Set.Type.entityTag(x)
		w.Header().Set("ETag", q.etag)
		if im := r.Header.Values("If-Match"); im != nil && !etag.ListMatches(im, q.etag, true) { // RFC 9110 section 13.2.2
			write(w, errorResponse(http.StatusPreconditionFailed, "PreconditionFailed", "the entity's current ETag is not one that If-Match names"))
			return
		}
		if etag.ListMatches(r.Header.Values("If-None-Match"), q.etag, false) {
			write(w, Response{Status: http.StatusNotModified})
			return
		}
	}
	body, err := q.appendEntity(nil, q.contextURL(metadata, rt.Set)+"/$entity", x)
	if err != nil {
		write(w, badRequest(err))
		return
	}
	write(w, Response{http.StatusOK, q.out.contentType(), body})
}

// serviceRoot is the service root of a $metadata URL, which @odata.id starts from.
func serviceRoot(metadata string) string { return strings.TrimSuffix(metadata, "$metadata") }

// serveCount answers the collection's /$count as text/plain: the number of its
// entities that pass $filter and $search (the only options it takes) and Restrict.
func (rt *Route) serveCount(w http.ResponseWriter, r *http.Request) {
	s := rt.Settings
	s.Allowed &= OptFilter | OptSearch
	q, err := parseQuery(r.URL.RawQuery, rt.Set.Type, s)
	n := 0
	if err == nil {
		n, err = q.matches(rt.List(r.Context()), rt.Restrict)
	}
	if err != nil {
		write(w, badRequest(err))
		return
	}
	write(w, Response{http.StatusOK, "text/plain; charset=utf-8", strconv.AppendInt(nil, int64(n), 10)})
}

func badRequest(err error) Response {
	if e, ok := asError(err); ok && e.Status == http.StatusNotAcceptable {
		return errorResponse(e.Status, "NotAcceptable", e.Error())
	}
	return errorResponse(http.StatusBadRequest, "BadRequest", err.Error())
}

func notFound(msg string) Response { return errorResponse(http.StatusNotFound, "NotFound", msg) }

// WriteError answers with the OData JSON error body, as the service answers its own
// errors: for a caller's refusals (authentication, a full queue) on the same paths.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	write(w, errorResponse(status, code, msg))
}

// errorResponse is an answer with the OData JSON error body.
func errorResponse(status int, code, msg string) Response {
	b := []byte(`{"error":{"code":`)
	b = appendString(b, code)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return Response{status, "application/json", append(b, "}}"...)}
}

// serveList answers a collection request. A long collection is sent as it is
// encoded, a short one with its Content-Length. An error while encoding (a bound
// reached by $expand's options) is a 400 if nothing is sent yet; otherwise the
// connection is cut, so that the client cannot take the part for the whole.
func (rt *Route) serveList(w http.ResponseWriter, r *http.Request) {
	metadata := rt.metadataURL()
	q, err := parseQuery(r.URL.RawQuery, rt.Set.Type, rt.Settings)
	var page []any
	var n int
	withCount := rt.AlwaysCount || err == nil && q.count
	if err == nil {
		page, n, err = q.Evaluate(rt.List(r.Context()), rt.Restrict, withCount)
	}
	if err == nil {
		err = q.negotiate(r, serviceRoot(metadata))
	}
	if err != nil {
		write(w, badRequest(err))
		return
	}
	contentType := q.out.contentType()
	streaming := false
	flush := func(b []byte) []byte {
		if !streaming {
			streaming = true
			w.Header().Set("OData-Version", "4.0")
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(http.StatusOK)
		}
		w.Write(b) // a client gone away makes the rest fail quietly
		return b[:0]
	}
	var body []byte
	err = run(func() {
		body = q.appendCollection(make([]byte, 0, flushSize+4<<10), q.contextURL(metadata, rt.Set), page, n, withCount, flush)
	})
	switch {
	case err != nil && streaming:
		panic(http.ErrAbortHandler)
	case err != nil:
		write(w, badRequest(err))
	case streaming:
		w.Write(body)
	default:
		write(w, Response{http.StatusOK, contentType, body})
	}
}

// metadataURL is the URL of $metadata as context URLs name it, never built from
// the Host header, which a client chooses.
func (rt *Route) metadataURL() string { return cmp.Or(rt.Metadata, "$metadata") }

func write(w http.ResponseWriter, r Response) {
	h := w.Header()
	h.Set("OData-Version", "4.0")
	if r.ContentType != "" {
		h.Set("Content-Type", r.ContentType)
	}
	if r.Body != nil {
		h.Set("Content-Length", strconv.Itoa(len(r.Body)))
	}
	w.WriteHeader(r.Status)
	w.Write(r.Body)
}

// allowOnly answers OPTIONS with 204 and a method not among methods with 405,
// naming the allowed ones; it reports whether r is left for the caller.
func allowOnly(w http.ResponseWriter, r *http.Request, what string, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	allow := strings.Join(methods, ", ") + ", OPTIONS"
	w.Header().Set("Allow", allow)
	if r.Method == http.MethodOptions {
		w.Header().Set("OData-Version", "4.0")
		w.WriteHeader(http.StatusNoContent)
	} else {
		write(w, errorResponse(http.StatusMethodNotAllowed, "MethodNotAllowed",
			"method "+r.Method+" is not allowed on "+what+"; allowed: "+allow))
	}
	return false
}
