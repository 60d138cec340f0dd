package odata

import (
	"bytes"
	"cmp"
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Service serves every resource path of a model below one root, as a client that
// reads $metadata derives them (OData 4.01 URL conventions, section 4):
//
//	{root}                          the service document
//	{root}$metadata                 the CSDL document
//	{root}Products                  a collection (the set's name in any letter case)
//	{root}Products/$count           its size after $filter, as text/plain
//	{root}Products(5), (id=5), /5   one entity
//	{root}Products(5)/orders        a navigation property, with query options when a collection
//	{root}Products(5)/orders/$count the size of a collection navigation
//	{root}Products(5)/name          a property, and /name/$value its raw value
//
// Every answer carries OData-Version: 4.0, every error the OData JSON error body.
// The service is read-only: GET and HEAD are served, OPTIONS answers 204, any
// other method 405.
type Service struct {
	Model *Model
	Root  string               // the path resources are relative to, ending in "/"
	Sets  map[string]SetRoutes // by the set's name in Model; a set without routes is 404
	// RejectPassword answers 400 with an empty body, before any other check,
	// when the query string contains "password" as containsPassword reads it.
	RejectPassword bool
	Metadata       string // the URL of $metadata, as Route.Metadata; empty: Root + "$metadata"

	metadataOnce sync.Once
	metadata     []byte // built once: the model does not change
}

// SetRoutes are the routes of one entity set. List serves the collection (and a
// collection navigation into it), Entity one entity (and a single-valued
// navigation to it); both must be set. Named are further collections, addressed
// by one exact segment below the set (/Products/search), never taken for a key.
type SetRoutes struct {
	List   *Route
	Entity *Route
	Named  map[string]*Route
}

// ServeHTTP answers r, whose path is below s.Root.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, s.Root)
	if r.URL.Path+"/" == s.Root {
		rest, ok = "", true // the root without its slash, as a client given "/api" may ask
	}
	if !ok {
		write(w, notFound("no resource at "+r.URL.Path))
		return
	}
	rest = strings.TrimSuffix(rest, "/") // /Products/ is /Products, as clients that join paths write it
	segs := strings.Split(rest, "/")
	// An unknown entity set is 404 whatever the method.
	var rs *SetRoutes
	if rest != "" && rest != "$metadata" {
		name, _, _ := strings.Cut(segs[0], "(")
		if rs = s.routes(name); rs == nil {
			write(w, notFound("no entity set named "+strconv.Quote(name)))
			return
		}
	}
	if !allowOnly(w, r, r.URL.Path, http.MethodGet, http.MethodHead) {
		return
	}
	if s.RejectPassword && containsPassword(r.URL.RawQuery) {
		write(w, Response{Status: http.StatusBadRequest})
		return
	}
	switch rest {
	case "":
		s.serveDocument(w, r)
	case "$metadata":
		s.serveMetadata(w, r)
	default:
		s.serveResource(w, r, rs, segs)
	}
}

// routes returns the routes of the entity set named name in any letter case, or nil.
func (s *Service) routes(name string) *SetRoutes {
	if set := s.Model.Set(name); set != nil {
		if rs, ok := s.Sets[set.Name]; ok {
			return &rs
		}
	}
	return nil
}

// serveDocument answers the service document (OData JSON Format, section 5): the
// entity sets, each with its URL relative to the root.
func (s *Service) serveDocument(w http.ResponseWriter, r *http.Request) {
	f, ok := noOptions(w, r)
	if !ok {
		return
	}
	if _, err := parseFormat(f); f != "" && err != nil {
		err.Option = "$format"
		write(w, badRequest(err)) // JSON is all a service document is served as
		return
	}
	b := []byte(`{"@odata.context":`)
	b = appendString(b, s.metadataURL())
	b = append(b, `,"value":[`...)
	for _, set := range s.Model.Sets {
		if _, ok := s.Sets[set.Name]; ok {
			b = append(b, `{"name":`...)
			b = appendString(b, set.Name)
			b = append(b, `,"kind":"EntitySet","url":`...)
			b = appendString(b, set.Name)
			b = append(b, "},"...)
		}
	}
	b = append(bytes.TrimSuffix(b, []byte(",")), "]}"...)
	write(w, Response{http.StatusOK, jsonType, b})
}

// serveMetadata answers the CSDL document, as XML only: a $format asking for
// JSON CSDL is not met with XML that claims to answer it.
func (s *Service) serveMetadata(w http.ResponseWriter, r *http.Request) {
	f, ok := noOptions(w, r)
	if !ok {
		return
	}
	if mt, _, err := mime.ParseMediaType(f); f != "" && (err != nil || mt != "xml" && mt != "application/xml") {
		write(w, errorResponse(http.StatusNotAcceptable, "NotAcceptable", "$metadata is served as XML only; $format="+f+" is not"))
		return
	}
	s.metadataOnce.Do(func() { s.metadata = s.document() })
	write(w, Response{http.StatusOK, "application/xml", s.metadata})
}

// noOptions holds the query string of a resource that takes no option but $format
// to the rules of every other, answering r if it fails them; it returns $format.
func noOptions(w http.ResponseWriter, r *http.Request) (format string, ok bool) {
	params, err := splitQuery(r.URL.RawQuery, DefaultLimits)
	for _, p := range params {
		if strings.EqualFold(p.name, "$format") {
			format = p.value
		} else if strings.HasPrefix(p.name, "$") && err == nil {
			err = &Error{Option: p.name, Msg: "query option " + p.name + " is not allowed on this resource"}
		}
	}
	if err != nil {
		write(w, badRequest(err))
	}
	return format, err == nil
}

// metadataURL is the URL of $metadata, as context URLs name it.
func (s *Service) metadataURL() string { return cmp.Or(s.Metadata, s.Root+"$metadata") }

// serveResource answers the path segments segs below the root, segs[0] naming
// the set whose routes are rs.
func (s *Service) serveResource(w http.ResponseWriter, r *http.Request, rs *SetRoutes, segs []string) {
	set := rs.List.Set
	key, hasKey, err := parseKey(segs[0], set.Type)
	if err != nil {
		write(w, badRequest(err))
		return
	}
	rest := segs[1:]
	if !hasKey {
		if serveCollection(w, r, rs.List, rest) {
			return
		}
		if named := rs.Named[rest[0]]; named != nil && serveCollection(w, r, named, rest[1:]) {
			return
		}
		// Key as a segment (/Products/5), the contract's form.
		k, perr := strconv.ParseInt(rest[0], 10, 64)
		if perr != nil {
			write(w, badRequest(&Error{Msg: "invalid key in " + strconv.Quote(rest[0])}))
			return
		}
		key, rest = k, rest[1:]
	}
	x, ok := rs.Entity.Get(r.Context(), key)
	if !ok {
		write(w, notFound(set.Type.Name+" "+strconv.FormatInt(key, 10)+" not found"))
		return
	}
	s.serveEntity(w, r, rs, set, x, key, rest)
}

// serveEntity answers entity x of set, with key key and routes rs, or the path
// rest below it: a property (and its $value) or a navigation property.
func (s *Service) serveEntity(w http.ResponseWriter, r *http.Request, rs *SetRoutes, set *EntitySet, x any, key int64, rest []string) {
	if len(rest) == 0 {
		rs.Entity.serveValue(w, r, x)
		return
	}
	t := set.Type
	if p := t.Property(rest[0]); p != nil {
		switch {
		case len(rest) == 1:
			s.serveProperty(w, r, set, key, p, x)
		case len(rest) == 2 && rest[1] == "$value":
			s.servePropertyValue(w, r, p, x)
		default:
			write(w, notFound("no resource at "+r.URL.Path))
		}
		return
	}
	name, _, _ := strings.Cut(rest[0], "(")
	n := t.nav(name)
	if n == nil {
		write(w, notFound("no property "+strconv.Quote(name)+" on "+t.Name))
		return
	}
	s.serveNav(w, r, set, x, key, n, rest)
}

// serveNav answers navigation property n of entity x (of set, with key key),
// which rest[0] names, perhaps with a key, and what lies below it.
func (s *Service) serveNav(w http.ResponseWriter, r *http.Request, set *EntitySet, x any, key int64, n *NavProperty, rest []string) {
	t := set.Type
	target := s.Model.setOf(n.Target)
	var trs *SetRoutes
	if target != nil {
		trs = s.routes(target.Name)
	}
	if trs == nil {
		write(w, notFound("no entity set for "+t.Name+"."+n.Name))
		return
	}
	if !n.Collection {
		if len(n.Name) != len(rest[0]) {
			write(w, badRequest(&Error{Pos: len(n.Name), Msg: "a key follows only a collection; " + t.Name + "." + n.Name + " is one entity"}))
			return
		}
		if y, ok := n.One(x); ok {
			s.serveEntity(w, r, trs, target, y, n.Target.keyProperty().Int(y), rest[1:])
		} else {
			write(w, Response{Status: http.StatusNoContent}) // OData: a null single-valued navigation is 204
		}
		return
	}
	relKey, hasKey, err := parseKey(rest[0], n.Target)
	if err != nil {
		write(w, badRequest(err))
		return
	}
	if hasKey { // one of the related entities: /Products(3)/orders(7)
		id := n.Target.keyProperty().Int
		for _, y := range n.Many(x) {
			if id(y) == relKey {
				s.serveEntity(w, r, trs, target, y, relKey, rest[1:])
				return
			}
		}
		write(w, notFound(n.Target.Name+" "+strconv.FormatInt(relKey, 10)+" is not among the "+n.Name+" of "+t.Name+" "+strconv.FormatInt(key, 10)))
		return
	}
	nav := *trs.List
	nav.List = func(context.Context) []any { return n.Many(x) }
	nav.Restrict, nav.AlwaysCount = nil, false
	if !serveCollection(w, r, &nav, rest[1:]) {
		write(w, notFound("no resource at "+r.URL.Path))
	}
}

// serveCollection answers the collection of rt when rest is empty, its size when
// rest is /$count, and otherwise reports false.
func serveCollection(w http.ResponseWriter, r *http.Request, rt *Route, rest []string) bool {
	switch {
	case len(rest) == 0:
		rt.serveList(w, r)
	case len(rest) == 1 && rest[0] == "$count":
		rt.serveCount(w, r)
	default:
		return false
	}
	return true
}

// serveProperty answers one property of an entity as {"@odata.context":...,"value":...}.
func (s *Service) serveProperty(w http.ResponseWriter, r *http.Request, set *EntitySet, key int64, p *Property, x any) {
	q, err := parseQuery(r.URL.RawQuery, set.Type, Settings{})
	if err == nil {
		err = q.negotiate(r, serviceRoot(s.metadataURL()))
	}
	if err != nil {
		write(w, badRequest(err))
		return
	}
	b := []byte{'{'}
	if q.out.metadata != metadataNone {
		b = append(b, `"@odata.context":`...)
		b = appendString(b, s.metadataURL()+"#"+set.Name+"("+strconv.FormatInt(key, 10)+")/"+p.Name)
		b = append(b, ',')
	}
	b = append(b, `"value":`...)
	b = q.out.appendValue(b, p, x)
	write(w, Response{http.StatusOK, q.out.contentType(), append(b, '}')})
}

// servePropertyValue answers a property's raw value ($value) as text/plain.
func (s *Service) servePropertyValue(w http.ResponseWriter, r *http.Request, p *Property, x any) {
	if _, ok := noOptions(w, r); !ok {
		return
	}
	var b []byte
	switch p.Type {
	case EdmString:
		b = []byte(p.String(x))
	case EdmDateTimeOffset:
		b = bytes.Trim(appendTime(nil, p.Time(x)), `"`) // without the JSON quotes
	default:
		b = appendValue(nil, p, x) // numbers and Booleans are written alike
	}
	write(w, Response{http.StatusOK, "text/plain; charset=utf-8", b})
}

// parseKey parses the key of a segment "Products(5)" or "Products(id=5)" of type
// t: ok is false without a key. Error positions count from the segment's start.
func parseKey(seg string, t *EntityType) (key int64, ok bool, err error) {
	i := strings.IndexByte(seg, '(')
	if i < 0 {
		return 0, false, nil
	}
	if !strings.HasSuffix(seg, ")") {
		return 0, false, &Error{Pos: len(seg), Msg: "expected ')' closing the key"}
	}
	inner, at := seg[i+1:len(seg)-1], i+1
	if name, v, found := strings.Cut(inner, "="); found {
		if !strings.EqualFold(name, t.Key) {
			return 0, false, &Error{Pos: at, Msg: "unknown key property " + strconv.Quote(name) + " of " + t.Name}
		}
		inner, at = v, at+len(name)+1
	}
	key, perr := strconv.ParseInt(inner, 10, 64)
	if perr != nil {
		return 0, false, &Error{Pos: at, Msg: "the key in " + strconv.Quote(seg) + " must be an integer"}
	}
	return key, true, nil
}
