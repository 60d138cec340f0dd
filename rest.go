package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"quartet/internal/etag"
)

// The REST surface: /api/users and the orders nested under a user (docs/rest.md).

// rest wraps a REST handler with what every REST route shares: a query string that
// does not decode (a bad %-escape, a ';' separator) is refused with 400, since
// url.Values would silently drop the pair it cannot read; the caller must have the
// access need (auth.go); an error h returns is answered as a problem. The decoded
// query is left in r.Form, where ParseForm would put it, so h need not decode it again.
func (s *Server) rest(need access, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" { // most requests have none: no map to make
			q, err := restQuery(r.URL.RawQuery)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			r.Form = q
		}
		if need != accessOpen && s.denied(w, r, need, s.writeError) {
			return
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// restQuery decodes a REST query string, refusing one that does not decode, to
// UTF-8 text too: a search for bytes that are no text could only match nothing.
func restQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("malformed query string: %v", err)
	}
	for name, values := range q {
		if !utf8.ValidString(name) || slices.ContainsFunc(values, func(v string) bool { return !utf8.ValidString(v) }) {
			return nil, invalid("malformed query string: %q is not valid UTF-8", name)
		}
	}
	return q, nil
}

// userBody is the JSON body of POST and PUT /api/users.
type userBody struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// pagedResult is the paged form of the user list.
type pagedResult[T any] struct {
	Items      []T `json:"items"`
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	TotalItems int `json:"totalItems"`
	TotalPages int `json:"totalPages"`
}

const (
	defaultPageSize = 10
	maxPageSize     = 100
)

// parseUserQuery reads the user list's query parameters. paged is false when none of
// them is given: the plain list. Names match case-insensitively, as the ASP.NET
// services this interface comes from bind them; a repeated parameter is an error.
func parseUserQuery(q url.Values) (uq UserQuery, paged bool, err error) {
	uq = UserQuery{Page: 1, PageSize: defaultPageSize}
	fields := map[string][]string{}
	params := map[string]string{}
	names := []string{"page", "pageSize", "search", "sortBy"}
	for key, vals := range q {
		i := slices.IndexFunc(names, func(name string) bool { return strings.EqualFold(key, name) })
		if i < 0 {
			continue
		}
		if _, dup := params[names[i]]; dup || len(vals) > 1 {
			fields[names[i]] = append(fields[names[i]], "must be given at most once")
			continue
		}
		params[names[i]] = vals[0]
	}
	if s, ok := params["search"]; ok && s == "" {
		delete(params, "search") // an empty search is no search
	}
	if len(params) == 0 && len(fields) == 0 {
		return uq, false, nil
	}
	if v, ok := params["page"]; ok {
		if uq.Page, err = strconv.Atoi(v); err != nil || uq.Page < 1 {
			fields["page"] = append(fields["page"], "must be an integer >= 1")
		}
	}
	if v, ok := params["pageSize"]; ok {
		if uq.PageSize, err = strconv.Atoi(v); err != nil || uq.PageSize < 1 || uq.PageSize > maxPageSize {
			fields["pageSize"] = append(fields["pageSize"], fmt.Sprintf("must be an integer from 1 to %d", maxPageSize))
		}
	}
	if len(fields) > 0 {
		return uq, true, invalidFields(fields)
	}
	uq.Search = params["search"]
	if sortBy := strings.ToLower(params["sortBy"]); sortBy == "name" || sortBy == "email" {
		uq.SortBy = sortBy
	}
	return uq, true, nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	uq, paged, err := parseUserQuery(r.Form) // decoded by rest
	if err != nil {
		return err
	}
	if !paged {
		writeJSONList(w, s.store.Users())
		return nil
	}
	items, total := s.store.UserPage(uq)
	writeJSON(w, http.StatusOK, pagedResult[*User]{Items: items, Page: uq.Page, PageSize: uq.PageSize,
		TotalItems: total, TotalPages: (total + uq.PageSize - 1) / uq.PageSize})
	return nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	u, ok := s.store.User(id)
	if !ok {
		return userNotFound(id)
	}
	rep := u.representation()
	writeTagged(w, r, rep.body, rep.tag)
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	var body userBody
	if !decodeJSON(w, r, "application/json", &body) {
		return nil
	}
	u, err := s.store.CreateUser(body.Name, body.Email)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/users/"+strconv.FormatInt(u.ID, 10))
	return writeUser(w, http.StatusCreated, u) // a client may update it with If-Match at once
}

// writeUser answers with u and its ETag.
func writeUser(w http.ResponseWriter, status int, u *User) error {
	rep := u.representation()
	w.Header().Set("ETag", rep.tag)
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	w.Write(rep.body)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var body userBody
	if !decodeJSON(w, r, "application/json", &body) {
		return nil
	}
	if body.ID != 0 && body.ID != id {
		return invalidFields(map[string][]string{"id": {fmt.Sprintf("must match the id in the path (%d)", id)}})
	}
	return s.storeUser(w, r, id, UserPatch{Name: &body.Name, Email: &body.Email})
}

// storeUser applies p to user id under r's If-Match and answers with the result.
func (s *Server) storeUser(w http.ResponseWriter, r *http.Request, id int64, p UserPatch) error {
	p.Require = s.ifMatch(r, id)
	u, err := s.store.UpdateUser(id, p)
	if err != nil {
		return err
	}
	return writeUser(w, http.StatusOK, u)
}

// mergePatchType is the media type of a JSON Merge Patch (RFC 7396), the one body
// PATCH /api/users/{id} takes.
const mergePatchType = "application/merge-patch+json"

// patchUser applies a JSON Merge Patch to user id. name and email are required, so
// null is refused; id may be given if it is the path's; createdAt is read-only and
// ignored, as PUT ignores it. Any other member is refused: merge patch keys are
// case-sensitive, and "Name" silently doing nothing would be worse.
func (s *Server) patchUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if !decodeJSON(w, r, mergePatchType, &raw) {
		return nil
	}
	var members map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &members) != nil {
		// RFC 7396 would replace the whole user with a non-object: never a valid user.
		writeProblem(w, http.StatusBadRequest, "request body: a merge patch of a user must be a JSON object", nil)
		return nil
	}
	patch, err := userMergePatch(id, members)
	if err != nil {
		return err
	}
	return s.storeUser(w, r, id, patch)
}

// userMergePatch turns the members of a merge patch of user id into a UserPatch.
func userMergePatch(id int64, members map[string]json.RawMessage) (UserPatch, error) {
	var p UserPatch
	fields := map[string][]string{}
	for name, v := range members {
		isNull := string(v) == "null"
		switch name {
		case "name", "email":
			var s string
			if isNull {
				fields[name] = append(fields[name], "is required: null would remove it")
			} else if json.Unmarshal(v, &s) != nil {
				fields[name] = append(fields[name], "must be a string")
			} else if name == "name" {
				p.Name = &s
			} else {
				p.Email = &s
			}
		case "id":
			var got int64
			if isNull || json.Unmarshal(v, &got) != nil || got != id {
				fields["id"] = append(fields["id"], fmt.Sprintf("must match the id in the path (%d)", id))
			}
		case "createdAt":
			// read-only, ignored (see patchUser)
		default:
			fields[name] = append(fields[name], "is not a member of a user (names are case-sensitive: id, name, email, createdAt)")
		}
	}
	if len(fields) > 0 {
		return UserPatch{}, invalidFields(fields)
	}
	return p, nil
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	existed, err := s.store.DeleteUserIf(id, s.ifMatch(r, id))
	if err != nil {
		return err
	}
	if !existed {
		return userNotFound(id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listUserOrders(w http.ResponseWriter, r *http.Request) error {
	userID, err := pathID(r, "userId")
	if err != nil {
		return err
	}
	orders, ok := s.store.OrdersByUser(userID)
	if !ok {
		return userNotFound(userID)
	}
	writeJSON(w, http.StatusOK, orders)
	return nil
}

func (s *Server) createUserOrder(w http.ResponseWriter, r *http.Request) error {
	userID, err := pathID(r, "userId")
	if err != nil {
		return err
	}
	if _, ok := s.store.User(userID); !ok {
		return userNotFound(userID) // before reading the body: the path decides first
	}
	var body NewOrder
	if !decodeJSON(w, r, "application/json", &body) {
		return nil
	}
	o, err := s.store.CreateOrder(userID, body)
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/api/users/%d/orders/%d", userID, o.ID))
	writeJSON(w, http.StatusCreated, o)
	return nil
}

func (s *Server) getUserOrder(w http.ResponseWriter, r *http.Request) error {
	userID, err := pathID(r, "userId")
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, ok := s.store.User(userID); !ok {
		return userNotFound(userID)
	}
	o, ok := s.store.Order(id)
	if !ok || o.UserID != userID {
		return notFound("order %d of user %d not found", id, userID)
	}
	body, _ := json.Marshal(o) // refuses only times outside years 0 to 9999, which no stored order has
	writeTagged(w, r, append(body, '\n'), entityTag(body))
	return nil
}

// pathID reads the integer path parameter name.
func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, invalid("%s must be an integer, not %q", name, v)
	}
	return id, nil
}

// writeTagged answers a GET of one record (RFC 9110 section 13): 200 with body, its
// JSON and a newline, whose entity tag is tag; 412 when If-Match does not name tag
// strongly (nor is "*"), else 304 when If-None-Match names tag (or is "*").
func writeTagged(w http.ResponseWriter, r *http.Request, body []byte, tag string) {
	w.Header().Set("ETag", tag)
	if im := r.Header.Values("If-Match"); im != nil && !etag.ListMatches(im, tag, true) {
		writeProblem(w, http.StatusPreconditionFailed, "the current ETag is not one that If-Match names", nil)
	} else if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && etag.ListMatches(inm, tag, false) {
		w.WriteHeader(http.StatusNotModified)
	} else {
		w.Header()["Content-Type"] = contentTypeJSON
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}
}

// ifMatch is the store-side check of r's If-Match and If-None-Match for user id, nil when
// there is neither (RFC 9110 section 13.2.2): If-Match must name the current ETag strongly
// (or be "*"), If-None-Match must not name it (nor be "*"). The check runs under the
// store's write lock, where hashing would hold up every reader, so the tags are compared
// here with the record current now; as records never change, the lock need only see it current.
func (s *Server) ifMatch(r *http.Request, id int64) func(current *User) error {
	im, inm := r.Header.Values("If-Match"), r.Header.Values("If-None-Match")
	if len(im)+len(inm) == 0 {
		return nil
	}
	holds := func(u *User) bool {
		return (im == nil || etag.ListMatches(im, u.ETag(), true)) && (inm == nil || !etag.ListMatches(inm, u.ETag(), false))
	}
	seen, _ := s.store.User(id)
	held := seen != nil && holds(seen)
	return func(current *User) error {
		if current == seen && held || current != seen && holds(current) {
			return nil
		}
		return &Error{Kind: KindPrecondition, Message: fmt.Sprintf("user %d: its current ETag is not one that If-Match names, or is one that If-None-Match names", current.ID)}
	}
}

// openapi.json is the REST surface's contract for every configuration at once: it
// leaves out what depends on the running one, which openAPIDocument fills in.
//
//go:embed openapi.json
var openAPITemplate []byte

// restRoute adds a REST route whose caller needs need. What it records is all the
// OpenAPI document says of authentication, so the two cannot disagree.
func (s *Server) restRoute(pattern string, need access, h func(http.ResponseWriter, *http.Request) error) {
	if s.opts.auth == nil {
		need = accessOpen // no key: nothing is checked
	}
	s.restAccess[pattern] = need
	s.handle(pattern, s.rest(need, h))
}

// openAPIDocument is openapi.json fitted to this server: each operation's security
// and 401 and 403 answers from its route's access, 429 when requests queue at the
// door, the URL clients reach the service at, and the products an order may name
// (only a dataset adds products).
func (s *Server) openAPIDocument() []byte {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(openAPITemplate))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		panic("openapi.json: " + err.Error()) // embedded: TestOpenAPIServed sees it first
	}
	ref := func(name string) any { return map[string]any{"$ref": "#/components/responses/" + name} }
	bearer := false
	for path, item := range jsonObject(doc, "paths") {
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue // the path's parameters
			}
			need := s.restAccess[strings.ToUpper(method)+" "+path] // absent: open
			op["security"] = []any{}
			if need != accessOpen {
				bearer = true
				op["security"] = []any{map[string]any{"bearerAuth": []any{}}}
				jsonObject(op, "responses")["401"] = ref("Unauthorized")
			}
			if need == accessWrite {
				jsonObject(op, "responses")["403"] = ref("Forbidden")
			}
			if s.opts.door.Queue != nil { // every request waits its turn at the door
				jsonObject(op, "responses")["429"] = ref("TooManyRequests")
			}
		}
	}
	info, components := jsonObject(doc, "info"), jsonObject(doc, "components")
	drop := func(refs ...string) { // components no operation can answer with here
		for _, ref := range refs {
			kind, name, _ := strings.Cut(ref, "/")
			delete(jsonObject(components, kind), name)
		}
	}
	auth := "Authentication is off: every operation is open."
	switch {
	case !bearer:
		delete(components, "securitySchemes")
		drop("responses/Unauthorized", "responses/Forbidden", "headers/WWW-Authenticate", "schemas/Problem401", "schemas/Problem403")
	case s.opts.auth.readAccess() == accessOpen:
		auth = "Authentication is on: writes need a bearer JWT whose `scope` claim contains `write`; reads are open."
	default:
		auth = "Authentication is on: writes need a bearer JWT whose `scope` claim contains `write`, reads a valid token of any scope."
	}
	if s.opts.door.Queue == nil {
		drop("responses/TooManyRequests", "headers/Retry-After", "schemas/Problem429")
	}
	info["description"] = info["description"].(string) + "\n\n" + auth
	doc["servers"] = []any{map[string]any{"url": cmp.Or(s.opts.publicURL, "/")}}
	productIDs(jsonObject(components, "schemas", "OrderInput", "properties", "productId"), s.store.ProductValues())

	// The top level in the template's order, so that a reader sees the version and
	// info first; json.Encoder sorts the keys below it.
	var b, indented bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // patterns hold < and &
	sep := "{"
	for _, key := range []string{"openapi", "info", "servers", "tags", "paths", "components"} {
		b.WriteString(sep + strconv.Quote(key) + ":")
		sep = ","
		if err := enc.Encode(doc[key]); err != nil {
			panic("openapi.json: " + err.Error())
		}
	}
	b.WriteString("}")
	json.Indent(&indented, b.Bytes(), "", "  ")
	return append(indented.Bytes(), '\n')
}

// productIDs narrows schema to the ids of products: a range when they have no gap,
// else a list when it is short; a client sampling the schema then names products
// that exist.
func productIDs(schema map[string]any, products []any) {
	ids := make([]int64, len(products))
	for i, p := range products {
		ids[i] = p.(*Product).ID
	}
	switch {
	case len(ids) == 0:
		schema["description"] = "An existing product (404 otherwise); this service has none."
	case ids[len(ids)-1]-ids[0] == int64(len(ids)-1):
		schema["minimum"], schema["maximum"] = ids[0], ids[len(ids)-1]
	case len(ids) <= 1000:
		schema["enum"] = ids
	default:
		schema["minimum"], schema["maximum"] = ids[0], ids[len(ids)-1]
		schema["description"] = "An existing product (404 otherwise): some ids in this range name none."
	}
}

// jsonObject walks doc down keys, each naming an object.
func jsonObject(doc map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		doc = doc[k].(map[string]any)
	}
	return doc
}

// openAPI answers GET /openapi.json: the OpenAPI 3.1 document of the REST surface.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openAPIDoc)
}
