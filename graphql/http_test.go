package graphql

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

type ctxKey struct{}

func TestHandler(t *testing.T) {
	const jsonCT = "application/json; charset=utf-8"
	const gqlCT = "application/graphql-response+json; charset=utf-8"
	get := func(params url.Values) string { return "/graphql?" + params.Encode() }
	tests := []struct {
		name        string
		method      string
		target      string
		contentType string
		accept      string
		body        string
		header      map[string]string
		wantStatus  int
		wantCT      string
		wantBody    string
		wantAllow   string
	}{
		{name: "post json", method: "POST", contentType: "application/json", body: `{"query":"{ user(id: 1) { name } }"}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"user":{"name":"Alice"}}}`},
		{name: "post with charset, variables, operationName and extensions", method: "POST", contentType: "application/json; charset=utf-8",
			body:       `{"query":"query A { a: user(id: 1) { name } } query B($id: Int!) { user(id: $id) { name } }","operationName":"B","variables":{"id":2},"extensions":{"x":1}}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"user":{"name":"Bob"}}}`},
		{name: "get query", method: "GET", target: get(url.Values{"query": {"query($id: Int!) { user(id: $id) { email } }"}, "variables": {`{"id":3}`}}),
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"user":{"email":"carol@example.com"}}}`},
		{name: "get mutation is 405", method: "GET", target: get(url.Values{"query": {"mutation { deleteUser(id: 1) }"}}),
			wantStatus: 405, wantCT: jsonCT, wantAllow: "POST",
			wantBody: `{"errors":[{"message":"Mutations can only be sent with POST.","locations":[{"line":1,"column":1}],"extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post mutation", method: "POST", contentType: "application/json", body: `{"query":"mutation { deleteUser(id: 3) }"}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"deleteUser":true}}`},
		{name: "parse error is 200 with application/json", method: "POST", contentType: "application/json", body: `{"query":"{"}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"errors":[{"message":"Syntax Error: Expected Name, found <EOF>.","locations":[{"line":1,"column":2}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`},
		{name: "parse error is 400 with graphql-response+json", method: "POST", contentType: "application/json", accept: "application/graphql-response+json", body: `{"query":"{"}`,
			wantStatus: 400, wantCT: gqlCT, wantBody: `{"errors":[{"message":"Syntax Error: Expected Name, found <EOF>.","locations":[{"line":1,"column":2}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`},
		{name: "validation error is 400 with graphql-response+json", method: "POST", contentType: "application/json", accept: "application/graphql-response+json, application/json;q=0.9", body: `{"query":"{ nope }"}`,
			wantStatus: 400, wantCT: gqlCT, wantBody: `{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "variable error is 400 with graphql-response+json", method: "POST", contentType: "application/json", accept: "application/graphql-response+json", body: `{"query":"query($id: Int!) { user(id: $id) { name } }","variables":{"id":"x"}}`,
			wantStatus: 400, wantCT: gqlCT, wantBody: `{"errors":[{"message":"Variable \"$id\" got invalid value \"x\"; Int cannot represent non-integer value: \"x\"","locations":[{"line":1,"column":7}],"extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "field error is 200 with graphql-response+json", method: "POST", contentType: "application/json", accept: "application/graphql-response+json", body: `{"query":"{ fail }"}`,
			wantStatus: 200, wantCT: gqlCT, wantBody: `{"errors":[{"message":"nothing here","locations":[{"line":1,"column":3}],"path":["fail"],"extensions":{"code":"NOT_FOUND"}}],"data":{"fail":null}}`},
		{name: "json preferred by quality", method: "POST", contentType: "application/json", accept: "application/graphql-response+json;q=0.5, application/json", body: `{"query":"{ nope }"}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "any media type means json", method: "POST", contentType: "application/json", accept: "*/*", body: `{"query":"{ __typename }"}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"__typename":"Query"}}`},
		{name: "unacceptable", method: "POST", contentType: "application/json", accept: "text/plain", body: `{"query":"{ __typename }"}`,
			wantStatus: 406, wantCT: "text/plain; charset=utf-8", wantBody: "Not Acceptable: this endpoint answers application/graphql-response+json or application/json."},
		{name: "unsupported content type", method: "POST", contentType: "text/plain", body: `{"query":"{ __typename }"}`,
			wantStatus: 415, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body must be application/json.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "missing content type", method: "POST", body: `{"query":"{ __typename }"}`,
			wantStatus: 415, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body must be application/json.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "malformed json", method: "POST", contentType: "application/json", body: `{"query":`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: unexpected end of JSON input.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "query not a string", method: "POST", contentType: "application/json", body: `{"query":1}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: query must be a string, not a JSON number.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "operationName not a string", method: "POST", contentType: "application/json", body: `{"query":"{ __typename }","operationName":["A"]}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: operationName must be a string, not a JSON array.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "body an array", method: "POST", contentType: "application/json", body: `[{"query":"{ __typename }"}]`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"Batched requests (a JSON array of operations) are not accepted by this server; send one operation per request.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "missing query", method: "POST", contentType: "application/json", body: `{"variables":{}}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request has no query.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "variables not an object", method: "POST", contentType: "application/json", body: `{"query":"{ __typename }","variables":[1]}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The variables parameter must be a JSON object.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "body too large", method: "POST", contentType: "application/json", body: `{"query":"{ __typename }","x":"` + strings.Repeat("a", maxRequestBytes) + `"}`,
			wantStatus: 413, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is larger than 1048576 bytes.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "method not allowed", method: "PUT", contentType: "application/json", body: `{"query":"{ __typename }"}`,
			wantStatus: 405, wantCT: jsonCT, wantAllow: "GET, HEAD, POST", wantBody: `{"errors":[{"message":"Method PUT is not allowed; use GET or POST.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "subscription over http", method: "POST", contentType: "application/json", accept: "application/graphql-response+json", body: `{"query":"subscription { onUserCreated { id } }"}`,
			wantStatus: 400, wantCT: gqlCT, wantBody: `{"errors":[{"message":"Subscriptions are served over WebSocket, over SSE (Accept: text/event-stream) and over multipart/mixed;subscriptionSpec=1.0.","locations":[{"line":1,"column":1}],"extensions":{"code":"BAD_USER_INPUT"}}]}`},
		// Its error is the incremental answer's: a JSON one would drop the @defer unannounced.
		{name: "@defer with a null condition is answered in parts", method: "POST", contentType: "application/json", accept: "application/graphql-response+json",
			body:       `{"query":"query($v: Boolean) { user(id: 1) { id ... @defer(if: $v) { name } } }","variables":{"v":null}}`,
			wantStatus: 406, wantCT: gqlCT, wantBody: `{"errors":[{"message":"@defer and @stream are answered in parts: send Accept: multipart/mixed;deferSpec=20220824 or multipart/mixed;incrementalSpec=v0.2.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "browser gets the page", method: "GET", accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
			wantStatus: 200, wantCT: "text/html", wantBody: "<html>editor</html>"},
		{name: "websocket upgrade goes to its handler", method: "GET", header: map[string]string{"Connection": "keep-alive, Upgrade", "Upgrade": "websocket"},
			wantStatus: 101, wantCT: "", wantBody: ""},
		// What parsers may read differently is refused.
		{name: "post repeating query", method: "POST", contentType: "application/json", body: `{"query":"{ users { id } }","query":"mutation { deleteUser(id: 1) }"}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: duplicate key \"query\" at byte 35.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post repeating operationName", method: "POST", contentType: "application/json", body: `{"query":"query A { __typename } mutation B { deleteUser(id: 1) }","operationName":"A","operationName":"B"}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: duplicate key \"operationName\" at byte 102.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post repeating query in another case", method: "POST", contentType: "application/json", body: `{"query":"{ users { id } }","QUERY":"mutation { deleteUser(id: 1) }"}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: duplicate key \"QUERY\" at byte 35.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post repeating a variable", method: "POST", contentType: "application/json", body: `{"query":"query($id: Int!) { user(id: $id) { name } }","variables":{"id":1,"id":2}}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: duplicate key \"id\" at byte 79.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post variables differing in case", method: "POST", contentType: "application/json", body: `{"query":"query($id: Int!) { user(id: $id) { name } }","variables":{"id":1,"ID":2}}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"user":{"name":"Alice"}}}`},
		{name: "get with a bad escape", method: "GET", target: "/graphql?query=%7B%20__typename%20%7D&x=%zz",
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The query string is malformed: invalid URL escape \"%zz\".","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get with a semicolon", method: "GET", target: "/graphql?query=%7B%20__typename%20%7D;operationName=A",
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The query string is malformed: invalid semicolon separator in query.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get repeating query", method: "GET", target: "/graphql?query=%7B%20__typename%20%7D&query=%7B%20users%20%7B%20id%20%7D%20%7D",
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The query string gives the query parameter more than once.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get repeating variables", method: "GET", target: get(url.Values{"query": {"query($id: Int!) { user(id: $id) { email } }"}, "variables": {`{"id":3}`, `{"id":1}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The query string gives the variables parameter more than once.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get repeating a variable", method: "GET", target: get(url.Values{"query": {"query($id: Int!) { user(id: $id) { email } }"}, "variables": {`{"id":3,"id":1}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The variables parameter repeats the key \"id\".","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get variables differing in case", method: "GET", target: get(url.Values{"query": {"query($id: Int!) { user(id: $id) { email } }"}, "variables": {`{"id":3,"ID":1}`}}),
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"user":{"email":"carol@example.com"}}}`},
		{name: "get variables followed by more", method: "GET", target: get(url.Values{"query": {"query($id: Int!) { user(id: $id) { email } }"}, "variables": {`{"id":3}] [{"id":1,"id":2}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The variables parameter must be a JSON object.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get repeating an extension", method: "GET", target: get(url.Values{"query": {"{ __typename }"}, "extensions": {`{"a":1,"a":2}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The extensions parameter repeats the key \"a\".","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		// Nesting past jsonkeys.MaxDepth and unpaired surrogate escapes are refused
		// as repeated keys are; a surrogate pair is one character.
		{name: "post variables with an unpaired surrogate", method: "POST", contentType: "application/json", body: `{"query":"query($t: String) { echo(text: $t) }","variables":{"t":"a\ud800"}}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: unpaired surrogate escape \\ud800 at byte 67: it names no character.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post variables with a surrogate pair", method: "POST", contentType: "application/json", body: `{"query":"query($t: String) { echo(text: $t) }","variables":{"t":"\ud83d\ude00"}}`,
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"echo":"{\"text\":\"😀\"}"}}`},
		{name: "post query with an unpaired surrogate", method: "POST", contentType: "application/json", body: `{"query":"{ echo(text: \"\udc00\") }"}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: unpaired surrogate escape \\udc00 at byte 25: it names no character.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "post variables nested too deep", method: "POST", contentType: "application/json", body: `{"query":"query($v: [[Int]]) { echo(list: $v) }","variables":{"v":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`,
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The request body is not a JSON object with GraphQL request parameters: arrays and objects nested deeper than 64 levels at byte 128.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get variables with an unpaired surrogate", method: "GET", target: get(url.Values{"query": {"query($t: String) { echo(text: $t) }"}, "variables": {`{"t":"\udfff"}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The variables parameter holds the unpaired surrogate escape \\udfff, which names no character.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get variables nested too deep", method: "GET", target: get(url.Values{"query": {"query($v: [[Int]]) { echo(list: $v) }"}, "variables": {`{"v":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`}}),
			wantStatus: 400, wantCT: jsonCT, wantBody: `{"errors":[{"message":"The variables parameter nests arrays and objects deeper than 64 levels.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "get variables nested to the bound", method: "GET", target: get(url.Values{"query": {"query($v: [Int]) { echo(list: $v) }"}, "variables": {`{"v":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}`}}),
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"errors":[{"message":"Variable \"$v\" got invalid value ` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `; at index 0: Int cannot represent non-integer value: ` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `","locations":[{"line":1,"column":7}],"extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{name: "context func reaches resolvers", method: "POST", contentType: "application/json", body: `{"query":"{ echo(text: \"ctx\") }"}`, header: map[string]string{"X-Who": "alice"},
			wantStatus: 200, wantCT: jsonCT, wantBody: `{"data":{"echo":"{\"text\":\"ctx\"} by alice"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestSchema(t)
			echo := s.mustField("Query", "echo").resolve
			s.SetResolver("Query", "echo", func(p ResolveParams) (any, error) {
				v, err := echo(p)
				if who, ok := p.Context.Value(ctxKey{}).(string); ok {
					v = v.(string) + " by " + who
				}
				return v, err
			})
			h := NewHandler(s)
			h.HTMLPage = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, "<html>editor</html>")
			})
			h.WebSocket = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(101) })
			h.ContextFunc = func(r *http.Request) context.Context {
				if who := r.Header.Get("X-Who"); who != "" {
					return context.WithValue(r.Context(), ctxKey{}, who)
				}
				return r.Context()
			}
			target := tt.target
			if target == "" {
				target = "/graphql"
			}
			r := httptest.NewRequest(tt.method, target, strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			if tt.accept != "" {
				r.Header.Set("Accept", tt.accept)
			}
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", w.Code, tt.wantStatus)
			}
			if ct := w.Header().Get("Content-Type"); ct != tt.wantCT {
				t.Errorf("Content-Type %q, want %q", ct, tt.wantCT)
			}
			if got := strings.TrimSuffix(w.Body.String(), "\n"); got != tt.wantBody {
				t.Errorf("body\n got %s\nwant %s", got, tt.wantBody)
			}
			if allow := w.Header().Get("Allow"); allow != tt.wantAllow {
				t.Errorf("Allow %q, want %q", allow, tt.wantAllow)
			}
		})
	}
}
