package odata

import (
	"context"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// Route serves GET requests for one entity set: a collection (ServeList)
// or a single entity by key (ServeEntity). The service fills one Route per
// endpoint with that endpoint's Settings.
type Route struct {
	Set      *EntitySet
	Settings Settings

	// List returns the whole entity set, in key order, for collection
	// routes. Get returns the entity with the given key for entity routes.
	List func(ctx context.Context) []any
	Get  func(ctx context.Context, key int64) (any, bool)

	// Restrict, if set, keeps only entities for which it is true; it runs
	// after $filter and before $orderby (the search endpoint's active-only
	// rule).
	Restrict func(any) bool
	// AlwaysCount includes the counts in every collection response, as if
	// $count=true were given.
	AlwaysCount bool
	// RejectPassword answers 400 with an empty body when the query string
	// contains "password" in any letter case, as sent or percent-decoded
	// (valid escapes decoded even when another escape is invalid). It is
	// checked before anything else about the query string.
	RejectPassword bool
	// Metadata is the URL of the $metadata document used in context URLs.
	// A path starting with "/" is made absolute with the request's scheme
	// and host; empty means "$metadata".
	Metadata string
}

// Response is a complete HTTP answer.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

const jsonType = "application/json; odata.metadata=minimal"

// ServeList answers a collection request with the given raw query string.
func (rt *Route) ServeList(ctx context.Context, rawQuery, metadata string) Response {
	l, failed := rt.list(ctx, rawQuery, metadata)
	if failed != nil {
		return *failed
	}
	body, err := l.q.AppendCollection(nil, l.context, l.page, l.count, l.withCount)
	if err != nil {
		return badRequest(err)
	}
	return Response{http.StatusOK, jsonType, body}
}

// listAnswer is a collection request's answer, decided but not yet encoded.
type listAnswer struct {
	q         *Query
	context   string
	page      []any
	count     int
	withCount bool
}

// list evaluates a collection request, or returns the error answer.
func (rt *Route) list(ctx context.Context, rawQuery, metadata string) (listAnswer, *Response) {
	if r, done := rt.precheck(rawQuery); done {
		return listAnswer{}, &r
	}
	q, err := ParseQuery(rawQuery, rt.Set.Type, rt.Settings)
	if err != nil {
		r := badRequest(err)
		return listAnswer{}, &r
	}
	page, n, err := q.Apply(rt.List(ctx), rt.Restrict)
	if err != nil {
		r := badRequest(err)
		return listAnswer{}, &r
	}
	return listAnswer{q, q.ContextURL(metadata, rt.Set), page, n, rt.AlwaysCount || q.Count()}, nil
}

// ServeEntity answers a single-entity request for key.
func (rt *Route) ServeEntity(ctx context.Context, rawQuery, metadata string, key int64) Response {
	if r, done := rt.precheck(rawQuery); done {
		return r
	}
	q, err := ParseQuery(rawQuery, rt.Set.Type, rt.Settings)
	if err != nil {
		return badRequest(err)
	}
	x, ok := rt.Get(ctx, key)
	if !ok {
		return notFound(rt.Set.Type.Name + " " + strconv.FormatInt(key, 10) + " not found")
	}
	body, err := q.AppendEntity(nil, q.EntityContextURL(metadata, rt.Set), x)
	if err != nil {
		return badRequest(err)
	}
	return Response{http.StatusOK, jsonType, body}
}

// precheck applies the rules that come before the query is parsed: the password
// rule, whose answer has no body (CONTRACT.md section 5).
func (rt *Route) precheck(rawQuery string) (Response, bool) {
	if rt.RejectPassword && containsPassword(rawQuery) {
		return Response{Status: http.StatusBadRequest}, true
	}
	return Response{}, false
}

func badRequest(err error) Response {
	return Response{http.StatusBadRequest, "application/json", ErrorBody(err)}
}

func notFound(msg string) Response {
	b := []byte(`{"error":{"code":"NotFound","message":`)
	b = appendString(b, msg)
	return Response{http.StatusNotFound, "application/json", append(b, "}}"...)}
}

// ListHandler returns an http.Handler serving the collection.
//
// A long collection (a list without $top can hold every entity) is sent as it is
// encoded, a piece at a time; a short one in one write with its Content-Length.
// An error while encoding (a bound of evaluation reached by $expand's nested options)
// is a 400 if nothing is sent yet; otherwise the connection is cut, so that the
// client cannot take the part for the whole.
func (rt *Route) ListHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, failed := rt.list(r.Context(), r.URL.RawQuery, rt.metadataURL(r))
		if failed != nil {
			write(w, *failed)
			return
		}
		streaming := false
		flush := func(b []byte) []byte {
			if !streaming {
				streaming = true
				w.Header().Set("OData-Version", "4.0")
				w.Header().Set("Content-Type", jsonType)
				w.WriteHeader(http.StatusOK)
			}
			w.Write(b) // a client gone away makes the rest fail quietly
			return b[:0]
		}
		var body []byte
		err := run(func() {
			body = l.q.appendCollection(make([]byte, 0, flushSize+4<<10), l.context, l.page, l.count, l.withCount, flush)
		})
		switch {
		case err != nil && streaming:
			panic(http.ErrAbortHandler)
		case err != nil:
			write(w, badRequest(err))
			return
		case streaming:
			w.Write(body)
			return
		}
		write(w, Response{http.StatusOK, jsonType, body})
	})
}

// EntityHandler returns an http.Handler serving one entity. The key is taken
// from the last path segment, either "5" (as in /api/products/5) or
// "products(5)".
func (rt *Route) EntityHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failed, done := rt.precheck(r.URL.RawQuery); done {
			write(w, failed)
			return
		}
		seg := path.Base(r.URL.Path)
		key, err := strconv.ParseInt(seg, 10, 64)
		if err != nil {
			var ok bool
			_, key, ok, err = ParseKeySegment(seg)
			if err == nil && !ok {
				err = &Error{Msg: "missing key"}
			}
		}
		if err != nil {
			write(w, badRequest(&Error{Msg: "invalid key in " + strconv.Quote(seg)}))
			return
		}
		write(w, rt.ServeEntity(r.Context(), r.URL.RawQuery, rt.metadataURL(r), key))
	})
}

func (rt *Route) metadataURL(r *http.Request) string {
	m := rt.Metadata
	if m == "" {
		return "$metadata"
	}
	if strings.HasPrefix(m, "/") && r.Host != "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		return scheme + "://" + r.Host + m
	}
	return m
}

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

// ParseKeySegment parses a path segment of the form name(key), e.g.
// "products(5)" or "Products(5)", with an integer key. ok is false when the
// segment has no parenthesized key; err is set when it has a malformed one.
// ServeMux patterns cannot match inside a segment, so a service routes
// "GET /api/{seg}" to a handler that calls this (see KeySegmentHandler).
func ParseKeySegment(seg string) (name string, key int64, ok bool, err error) {
	i := strings.IndexByte(seg, '(')
	if i < 0 {
		return seg, 0, false, nil
	}
	name = seg[:i]
	if name == "" || !strings.HasSuffix(seg, ")") {
		return name, 0, false, &Error{Pos: i, Msg: "malformed key segment"}
	}
	inner := seg[i+1 : len(seg)-1]
	// Accept the long form products(id=5) as well.
	if _, v, found := strings.Cut(inner, "="); found {
		inner = v
	}
	key, perr := strconv.ParseInt(strings.TrimSpace(inner), 10, 64)
	if perr != nil {
		return name, 0, false, &Error{Pos: i + 1, Msg: "key must be an integer"}
	}
	return name, key, true, nil
}

// KeySegmentHandler serves "set(key)" segments: the last path segment is
// parsed with ParseKeySegment and, when its set name matches a key of
// routes (case-insensitively), the request is served by that route's
// EntityHandler. Any other request goes to next (404 when next is nil).
func KeySegmentHandler(routes map[string]*Route, next http.Handler) http.Handler {
	byName := map[string]http.Handler{}
	for name, rt := range routes {
		byName[strings.ToLower(name)] = rt.EntityHandler()
	}
	if next == nil {
		next = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _, _ := ParseKeySegment(path.Base(r.URL.Path))
		if h, ok := byName[strings.ToLower(name)]; ok && strings.Contains(path.Base(r.URL.Path), "(") {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MetadataHandler serves the model's CSDL document. The document takes no query
// options, but its query string is held to the same rules as a route's (see
// ParseQuery), with DefaultLimits, and to the password rule when rejectPassword is
// set, so that no OData URL answers 200 to a query string the others refuse.
func MetadataHandler(m *Model, rejectPassword bool) http.Handler {
	doc := m.Metadata()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rejectPassword && containsPassword(r.URL.RawQuery) {
			write(w, Response{Status: http.StatusBadRequest})
			return
		}
		if _, err := splitQuery(r.URL.RawQuery, DefaultLimits); err != nil {
			write(w, badRequest(err))
			return
		}
		write(w, Response{http.StatusOK, "application/xml", doc})
	})
}
