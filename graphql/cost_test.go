package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// costSDL exercises every rule of the cost analysis: default weights and
// sizes, @cost, @listSize with and without slicing arguments, the "first"
// and "limit" convention, abstract types and leaf lists.
const costSDL = `
directive @cost(weight: Int!) on FIELD_DEFINITION
directive @listSize(assumedSize: Int, slicingArguments: [String!]) on FIELD_DEFINITION

type Query {
  users(first: Int): [User!]!
  user(id: Int!): User
  top(count: Int = 3): [User!]! @listSize(slicingArguments: ["count"])
  expensive: Int @cost(weight: 100)
  node: Node
  search: [Result!]! @listSize(assumedSize: 4)
  grid: [[Int]]
}

type Subscription {
  onUser: User!
}

interface Node {
  id: Int!
}

type User implements Node {
  id: Int!
  name: String
  tags: [String!]!
  posts(limit: Int, last: Int): [Post!]! @listSize(assumedSize: 5, slicingArguments: ["limit", "last"])
}

type Post implements Node {
  id: Int!
  title: String
  comments: [Comment!]! @listSize(assumedSize: 2)
}

type Comment {
  text: String @cost(weight: 0)
}

union Result = User | Post
`

func newCostSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := ParseSchema(costSDL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// costOfQuery prepares query on s and returns the cost of its only operation
// with the variables vars, as executeOperation works it out.
func costOfQuery(t *testing.T, s *Schema, query string, vars map[string]any) int {
	t.Helper()
	p := s.prepare(query)
	if p.errs != nil {
		t.Fatalf("%s: %v", query, ErrorList(p.errs))
	}
	op, errResp := selectOperation(p.doc, "")
	if errResp != nil {
		t.Fatalf("%s: %v", query, ErrorList(errResp.Errors))
	}
	coerced, errs := coerceVariables(s, op, vars)
	if errs != nil {
		t.Fatalf("%s: %v", query, ErrorList(errs))
	}
	return s.operationCost(p, op, coerced)
}

func TestOperationCost(t *testing.T) {
	s := newCostSchema(t)
	var fields, types int
	for _, ty := range s.Types() {
		fields += len(ty.Fields)
		types++
	}
	perType := (fields + types - 1) / types
	tests := []struct {
		name  string
		query string
		vars  map[string]any
		want  int
	}{
		{"one object", "{ user(id: 1) { name } }", nil, 1 + 1},
		{"a leaf costs its weight", "{ expensive }", nil, 100},
		{"a weight of 0", "{ user(id: 1) { posts { comments { text } } } }", nil, 1 + (1 + 5*(1+2*0))},
		{"__typename", "{ __typename }", nil, 1},
		{"list without slicing: 50", "{ users { name } }", nil, 1 + 50*1},
		{"first literal", "{ users(first: 3) { id name } }", nil, 1 + 3*2},
		{"first variable", "query ($n: Int) { users(first: $n) { name } }", map[string]any{"n": 7}, 1 + 7},
		{"first variable absent", "query ($n: Int) { users(first: $n) { name } }", nil, 1 + 50},
		{"first variable null", "query ($n: Int) { users(first: $n) { name } }", map[string]any{"n": nil}, 1 + 50},
		{"first variable default", "query ($n: Int = 4) { users(first: $n) { name } }", nil, 1 + 4},
		{"first null literal", "{ users(first: null) { name } }", nil, 1 + 50},
		{"negative first counts as 0", "{ users(first: -5) { name } }", nil, 1},
		{"first 0", "{ users(first: 0) { name } }", nil, 1},
		{"argument default", "{ top { id } }", nil, 1 + 3},
		{"argument given", "{ top(count: 9) { id } }", nil, 1 + 9},
		{"nested lists multiply", "{ users { posts { comments { text } title } } }", nil, 1 + 50*(1+5*(1+2*0+1))},
		{"largest slicing argument", "{ users(first: 2) { posts(limit: 3, last: 8) { id } } }", nil, 1 + 2*(1+8*1)},
		{"assumed size", "{ user(id: 1) { posts { id } } }", nil, 1 + (1 + 5*1)},
		{"leaf list costs its weight", "{ user(id: 1) { tags } }", nil, 1 + 1},
		{"list of lists counts once", "{ grid }", nil, 1},
		{"aliases each count", "{ a: users(first: 2) { name } b: users(first: 2) { name } }", nil, 2 * (1 + 2)},
		{"fragment", "{ users(first: 10) { ...U } } fragment U on User { name posts { title } }", nil, 1 + 10*(1+1+5)},
		{"fragment spread twice", "{ a: users(first: 10) { ...U } b: user(id: 1) { ...U } } fragment U on User { name posts { title } }", nil, 1 + 10*7 + 1 + 7},
		{"nested fragments", "{ user(id: 1) { ...A } } fragment A on User { ...B ...B } fragment B on User { posts { id } }", nil, 1 + 2*(1+5)},
		{"inline fragments all count", "{ search { ... on User { name } ... on Post { title comments { text } } } }", nil, 1 + 4*(1+1+1)},
		{"interface", "{ node { id ... on User { posts(limit: 2) { id } } } }", nil, 1 + 1 + (1 + 2*1)},
		{"skip literal", "{ users @skip(if: true) { name } user(id: 1) @include(if: true) { name } }", nil, 2},
		{"skip variable", "query ($s: Boolean!) { users @skip(if: $s) { name } user(id: 1) { ... @include(if: $s) { name } } }", map[string]any{"s": true}, 1 + 1},
		{"skip variable false", "query ($s: Boolean!) { users @skip(if: $s) { name } user(id: 1) { ... @include(if: $s) { name } } }", map[string]any{"s": false}, 1 + 50 + 1},
		{"introspection types", "{ __schema { types { name } } }", nil, 1 + 1 + types},
		{"introspection fields", "{ __schema { types { fields { name } } } }", nil, 1 + 1 + types*(1+perType)},
		{"one type's fields", `{ __type(name: "User") { fields { name } } }`, nil, 1 + 1 + perType},
		{"ofType chains cost 1 a level", `{ __type(name: "User") { ofType { ofType { name } } } }`, nil, 4},
		{"ofType deeper than any wrapping is null", `{ __type(name: "User") { ofType { ofType { ofType { ofType { ofType { name } } } } } } }`, nil, 5},
		{"largest Int", "{ users(first: 2147483647) { posts(limit: 2147483647) { id } } }", nil, 1 + 2147483647*(1+2147483647)},
		{"over 2^63 saturates", "{ users(first: 2147483647) { posts(limit: 2147483647) { comments { t: __typename } } } }", nil, math.MaxInt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := costOfQuery(t, s, tt.query, tt.vars); got != tt.want {
				t.Errorf("cost of %s = %d, want %d", tt.query, got, tt.want)
			}
		})
	}
}

// TestIntrospectionQueryCost checks that the standard introspection query is
// costed about as large as its answer: every list is sized from the schema's
// own counts, so the estimate stays far under the default limit.
func TestIntrospectionQueryCost(t *testing.T) {
	s, _ := newTestSchema(t)
	query := editorIntrospection(t)
	cost := costOfQuery(t, s, query, nil)
	resp := s.Execute(context.Background(), Request{Query: query})
	if len(resp.Errors) > 0 {
		t.Fatal(ErrorList(resp.Errors))
	}
	// Count the values in the answer: objects, lists and leaves.
	var data any
	if err := json.Unmarshal(resp.Data, &data); err != nil {
		t.Fatal(err)
	}
	values := countValues(data)
	t.Logf("introspection: cost %d, %d values in the answer", cost, values)
	if cost < values/2 || cost > 4*values {
		t.Errorf("cost %d for an answer of %d values: not within a small factor", cost, values)
	}
	if cost > DefaultLimits.MaxCost/5 {
		t.Errorf("introspection costs %d, too close to the default limit %d", cost, DefaultLimits.MaxCost)
	}
}

func countValues(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 0
		for _, x := range v {
			n += countValues(x)
		}
		return n
	case []any:
		n := 0
		for _, x := range v {
			n += countValues(x)
		}
		return n
	}
	return 1
}

// editorIntrospection returns the introspection query the editor sends (the
// kind graphql-js sends too), read from the editor's source.
func editorIntrospection(t *testing.T) string {
	t.Helper()
	js, err := os.ReadFile(filepath.Join("editor", "editor.js"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(js), "const INTROSPECTION_QUERY = `")
	query, _, ok2 := strings.Cut(rest, "`")
	if !ok || !ok2 {
		t.Fatal("editor.js: INTROSPECTION_QUERY not found")
	}
	return query
}

// TestOperationCostCache checks that a cost is kept for the next request only
// when no variable's value went into it.
func TestOperationCostCache(t *testing.T) {
	s := newCostSchema(t)
	tests := []struct {
		query  string
		cached bool
	}{
		{"{ users { name } }", true},
		{"query ($id: Int!) { user(id: $id) { posts { id } } }", true},
		{"query ($n: Int) { users(first: $n) { name } }", false},
		{"query ($s: Boolean!) { users @skip(if: $s) { name } }", false},
		{"query ($n: Int) { ...F } fragment F on Query { users(first: $n) { name } }", false},
	}
	for _, tt := range tests {
		costOfQuery(t, s, tt.query, map[string]any{"id": 1, "n": 2, "s": false})
		p := s.prepare(tt.query)
		op, _ := selectOperation(p.doc, "")
		if _, ok := p.costs.Load(op); ok != tt.cached {
			t.Errorf("%s: cached = %v, want %v", tt.query, ok, tt.cached)
		}
	}
	// Variables that set the size give each request its own cost.
	q := "query ($n: Int) { users(first: $n) { name } }"
	if a, b := costOfQuery(t, s, q, map[string]any{"n": 2}), costOfQuery(t, s, q, map[string]any{"n": 20}); a != 3 || b != 21 {
		t.Errorf("costs %d and %d, want 3 and 21", a, b)
	}
}

// TestCostDirectiveErrors checks that a misused directive is a schema error,
// not a silently ignored one.
func TestCostDirectiveErrors(t *testing.T) {
	tests := []struct{ field, want string }{
		{"a: Int @cost(weight: -1)", "weight of a cost directive on Query.a must be a non-negative Int"},
		{`a: Int @cost(weight: "2")`, "weight of a cost directive on Query.a must be a non-negative Int"},
		{"a: Int @cost", "@cost on Query.a needs weight: a non-negative Int"},
		{"a: [Int] @listSize(assumedSize: 1.5)", "assumedSize of a cost directive on Query.a must be a non-negative Int"},
		{`a(n: Int): [Int] @listSize(slicingArguments: ["m"])`, `slicing argument "m" of Query.a must name one of its Int arguments`},
		{`a(n: String): [Int] @listSize(slicingArguments: ["n"])`, `slicing argument "n" of Query.a must name one of its Int arguments`},
		{`a(n: [Int]): [Int] @listSize(slicingArguments: ["n"])`, `slicing argument "n" of Query.a must name one of its Int arguments`},
		{`a(n: Int): [Int] @listSize(slicingArguments: 3)`, "slicingArguments on Query.a must be a list of argument names"},
		{`a: [Int] @listSize(sizedFields: ["x"])`, `@listSize on Query.a: argument "sizedFields" is not supported (only assumedSize and slicingArguments)`},
	}
	for _, tt := range tests {
		_, err := ParseSchema("type Query { " + tt.field + " }")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.field, err, tt.want)
		}
	}
	for _, ok := range []string{`a(n: Int!): [Int] @listSize(slicingArguments: "n", assumedSize: 0)`, "a: Int @cost(weight: 0)"} {
		if _, err := ParseSchema("type Query { " + ok + " }"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestCostLimitRefusesBeforeResolving runs an operation over the limit: the
// answer is one error that names the cost and the limit, without data, and no
// resolver has run.
func TestCostLimitRefusesBeforeResolving(t *testing.T) {
	s := newCostSchema(t)
	s.Limits.MaxCost = 100
	calls := 0
	s.SetResolver("Query", "users", func(p ResolveParams) (any, error) { calls++; return []any{}, nil })
	s.SetResolver("Query", "user", func(p ResolveParams) (any, error) { calls++; return nil, nil })

	resp := s.Execute(context.Background(), Request{Query: "query Q { user(id: 1) { id } users { posts { id } } }"})
	want := `{"errors":[{"message":"The operation's estimated cost is 303, over the limit of 100.","locations":[{"line":1,"column":1}],"extensions":{"code":"COST_LIMIT_EXCEEDED","cost":303,"maxCost":100}}]}`
	if got := string(resp.appendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if calls != 0 {
		t.Errorf("%d resolvers ran before the refusal", calls)
	}
	// At the limit it runs.
	resp = s.Execute(context.Background(), Request{Query: "{ users(first: 99) { id } }"})
	if len(resp.Errors) > 0 || calls != 1 {
		t.Errorf("cost 100 under a limit of 100: %s, %d calls", resp.appendJSON(nil), calls)
	}
	// A variable can take the same document over the limit.
	q := "query ($n: Int) { users(first: $n) { id } }"
	for n, refused := range map[int]bool{99: false, 100: true} {
		resp := s.Execute(context.Background(), Request{Query: q, Variables: map[string]any{"n": json.Number(fmt.Sprint(n))}})
		if got := len(resp.Errors) == 1 && resp.Errors[0].Code() == CodeCostLimitExceeded; got != refused {
			t.Errorf("first: %d: refused = %v, want %v (%s)", n, got, refused, resp.appendJSON(nil))
		}
	}
	// 0 is no limit.
	s.Limits.MaxCost = 0
	if resp := s.Execute(context.Background(), Request{Query: "{ users(first: 100000) { id } }"}); len(resp.Errors) > 0 {
		t.Errorf("MaxCost 0: %s", resp.appendJSON(nil))
	}
}

// TestCostLimitOverHTTP checks the refusal's status codes: as for every
// request error, 400 with application/graphql-response+json, 200 with
// application/json.
func TestCostLimitOverHTTP(t *testing.T) {
	s := newCostSchema(t)
	s.Limits.MaxCost = 10
	h := NewHandler(s)
	for accept, status := range map[string]int{mediaGraphQLResponse: http.StatusBadRequest, mediaJSON: http.StatusOK} {
		r := httptest.NewRequest("POST", "/graphql", strings.NewReader(`{"query":"{ users { id } }"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body struct {
			Data   json.RawMessage
			Errors []struct {
				Extensions map[string]any
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != status || body.Data != nil || len(body.Errors) != 1 || body.Errors[0].Extensions["code"] != CodeCostLimitExceeded || body.Errors[0].Extensions["cost"] != 51.0 {
			t.Errorf("Accept %s: %d %s", accept, w.Code, w.Body)
		}
	}
}

// TestCostLimitOnSubscriptions checks that a subscription over the limit is
// refused before its source stream is created, as a WebSocket subscribe is.
func TestCostLimitOnSubscriptions(t *testing.T) {
	s, st := newTestSchema(t)
	_, err := s.subscribeEach(context.Background(), Request{Query: "subscription { onUserCreated { posts { comments { author { posts { comments { text } } } } } } }"})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Code() != CodeCostLimitExceeded {
		t.Fatalf("got %v, want one %s error", err, CodeCostLimitExceeded)
	}
	if len(st.userSubs) != 0 {
		t.Error("the source stream was created")
	}
	// A query sent where subscriptions are served is checked too.
	run, err := s.subscribeEach(context.Background(), Request{Query: "{ users { posts { comments { author { posts { comments { text } } } } } } }"})
	if err != nil {
		t.Fatal(err)
	}
	run(func(resp *Response) bool {
		if len(resp.Errors) != 1 || resp.Errors[0].Code() != CodeCostLimitExceeded || resp.Data != nil {
			t.Errorf("query over subscribeEach: %s", resp.appendJSON(nil))
		}
		return true
	})
}

// sizeSchema is the cost schema with n users of one post each, counting the
// calls of User.posts; its cost bound is off, so that only the size bound acts.
func sizeSchema(t *testing.T, n int, calls *int) *Schema {
	t.Helper()
	s := newCostSchema(t)
	s.Limits.MaxCost = 0
	users := make([]any, n)
	for i := range users {
		users[i] = map[string]any{"id": i, "name": fmt.Sprintf("user %d", i), "tags": []string{"a", "b"}}
	}
	s.SetResolver("Query", "users", func(p ResolveParams) (any, error) { return users, nil })
	s.SetResolver("User", "posts", func(p ResolveParams) (any, error) {
		*calls++
		id := p.Source.(map[string]any)["id"].(int)
		if id == 3 {
			return []any{map[string]any{"id": nil, "title": "broken"}}, nil // Post.id is Int!
		}
		return []any{map[string]any{"id": id, "title": "a title"}}, nil
	})
	s.SetResolver("User", "name", func(p ResolveParams) (any, error) {
		if id := p.Source.(map[string]any)["id"].(int); id%2 == 1 {
			return nil, fmt.Errorf("no name for odd user %d", id)
		}
		return p.Source.(map[string]any)["name"], nil
	})
	return s
}

// TestResponseSizeBound checks that an answer over MaxResponseBytes stops the
// execution, without running the resolvers that would have come after, and
// answers one error with data null; and that an answer within the bound is
// exactly what it is without one, null propagation included.
func TestResponseSizeBound(t *testing.T) {
	const n = 10000
	var calls int
	s := sizeSchema(t, n, &calls)
	ctx := context.Background()
	q := "{ users { id name posts { title } tags } }"
	// User 3's post has no id: selecting it nulls the post, which nulls
	// user 3, which nulls the users and then data (every type is non-null).
	propagating := "{ users { id name posts { id title } } }"

	for _, q := range []string{q, propagating} {
		// A bound the answer fits in changes nothing; half of it stops the
		// execution. (Errors are counted by an estimate of their size, and
		// what null propagation takes back was written, so the bound is not
		// exactly the size of the answer.)
		s.Limits.MaxResponseBytes = 0
		full := s.Execute(ctx, Request{Query: q}).appendJSON(nil)
		s.Limits.MaxResponseBytes = 2 * len(full)
		if got := s.Execute(ctx, Request{Query: q}).appendJSON(nil); string(got) != string(full) {
			t.Errorf("within the bound the answer changed:\n got %.300s\nwant %.300s", got, full)
		}
		s.Limits.MaxResponseBytes = len(full) / 2
		if resp := s.Execute(ctx, Request{Query: q}); len(resp.Errors) != 1 || resp.Errors[0].Code() != CodeResponseTooLarge {
			t.Errorf("over the bound: %.300s", resp.appendJSON(nil))
		}
		if q == propagating && !strings.HasSuffix(string(full), `"data":null}`) {
			t.Errorf("%s: null did not propagate to data: %.300s", q, full)
		}
	}
	s.Limits.MaxResponseBytes = 1 << 30
	calls = 0
	if resp := s.Execute(ctx, Request{Query: q}); len(resp.Data) < 50*n || calls != n {
		t.Fatalf("%d bytes, %d calls within the bound, want more than %d bytes and %d calls", len(resp.Data), calls, 50*n, n)
	}

	s.Limits.MaxResponseBytes = 1000
	calls = 0
	resp := s.Execute(ctx, Request{Query: q})
	want := `{"errors":[{"message":"The response is larger than the limit of 1000 bytes; execution was stopped.","extensions":{"code":"RESPONSE_TOO_LARGE","maxResponseBytes":1000}}],"data":null}`
	if got := string(resp.appendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if calls > 100 {
		t.Errorf("%d resolver calls after the bound was reached at about 30 users", calls)
	}
}

// TestResponseSizeBoundCountsErrors checks that field errors count towards
// the bound: a small data entry with thousands of errors is refused too.
func TestResponseSizeBoundCountsErrors(t *testing.T) {
	var calls int
	s := sizeSchema(t, 2000, &calls)
	q := "{ users { name } }"
	s.Limits.MaxResponseBytes = 0
	resp := s.Execute(context.Background(), Request{Query: q})
	data, whole := len(resp.Data), len(resp.appendJSON(nil))
	if len(resp.Errors) != 1000 {
		t.Fatalf("%d errors, want 1000", len(resp.Errors))
	}
	s.Limits.MaxResponseBytes = data + (whole-data)/4
	resp = s.Execute(context.Background(), Request{Query: q})
	if len(resp.Errors) != 1 || resp.Errors[0].Code() != CodeResponseTooLarge || string(resp.Data) != "null" {
		t.Errorf("data of %d bytes with %d bytes of errors under a bound of %d: %.300s", data, whole-data, s.Limits.MaxResponseBytes, resp.appendJSON(nil))
	}
}

// TestResponseSizeBoundStopsMutations checks that the mutations after the
// one whose answer went over the bound are not run.
func TestResponseSizeBoundStopsMutations(t *testing.T) {
	s, st := newTestSchema(t)
	s.Limits.MaxResponseBytes = 50
	resp := s.Execute(context.Background(), Request{Query: `mutation {
		a: createUser(name: "A", email: "a@example.com") { id name email createdAt }
		b: createUser(name: "B", email: "b@example.com") { id }
	}`})
	if len(resp.Errors) != 1 || resp.Errors[0].Code() != CodeResponseTooLarge {
		t.Fatalf("got %s", resp.appendJSON(nil))
	}
	if len(st.users) != 4 {
		t.Errorf("%d users after the stop, want 4: the second mutation ran", len(st.users))
	}
}

// newCountingCostSchema binds every field of the cost schema to a resolver
// that adds the field's weight to *weights and returns a value shaped as the
// analysis assumes: lists as long as their slicing argument says, else their
// assumed size.
func newCountingCostSchema(t testing.TB) (*Schema, *int) {
	t.Helper()
	s, err := ParseSchema(costSDL)
	if err != nil {
		t.Fatal(err)
	}
	s.Limits.MaxCost, s.Limits.MaxResponseBytes = 0, 0
	weights := new(int)
	var fake func(t *Type, size int) any
	fake = func(t *Type, size int) any {
		t = t.Nullable()
		switch t.Kind {
		case List:
			out := make([]any, size)
			for i := range out {
				out[i] = fake(t.OfType, 1)
			}
			return out
		case Object:
			return map[string]any{"__typename": t.Name}
		case Interface, Union:
			return map[string]any{"__typename": "User"}
		}
		if t.Name == "String" {
			return "s"
		}
		return 1
	}
	for _, ty := range s.Types() {
		if ty.Kind != Object || strings.HasPrefix(ty.Name, "__") || ty == s.Subscription {
			continue
		}
		for _, def := range ty.Fields {
			s.SetResolver(ty.Name, def.Name, func(p ResolveParams) (any, error) {
				c := s.costOf(def)
				*weights += c.weight
				size, given := 0, false
				for _, name := range c.slicing {
					if n, ok := p.Args[name].(int); ok {
						size, given = max(size, n), true
					}
				}
				if !given {
					size = c.assumedSize
				}
				return fake(def.Type, max(size, 0)), nil
			})
		}
	}
	return s, weights
}

// FuzzOperationCost checks that the cost analysis never panics, gives the same
// cost from its cache as fresh, and is an upper bound: on data shaped as it
// assumes, the weights of the fields an execution resolves add up to no more.
func FuzzOperationCost(f *testing.F) {
	for _, q := range []string{
		"{ users { name posts { title comments { text } } } }",
		"{ users(first: 3) { ...U } user(id: 1) { ...U } } fragment U on User { posts(limit: 2, last: 1) { id } tags }",
		"{ search { ... on User { name } ... on Post { title comments { text } } } node { id ... on Post { title } } }",
		"{ top(count: 2) { id } top2: top { name } expensive grid __typename }",
		"query ($n: Int = 2, $s: Boolean = false) { users(first: $n) @skip(if: $s) { id } }",
		"{ a: users(first: 2) { id } a: users(first: 2) { name } }",
		"{ __schema { types { name fields { name args { name } } } } }",
		`{ __type(name: "User") { ofType { ofType { ofType { ofType { name } } } } } }`,
		"{ users(first: -1) { id } user(id: 2) { posts(limit: 2147483647) { id } } }",
	} {
		f.Add(q)
	}
	s, weights := newCountingCostSchema(f)
	f.Fuzz(func(t *testing.T, src string) {
		p := s.prepare(src)
		if p.errs != nil {
			return
		}
		op, errResp := selectOperation(p.doc, "")
		if errResp != nil || op.Operation != Query {
			return
		}
		vars, errs := coerceVariables(s, op, nil)
		if errs != nil {
			return
		}
		cost := s.operationCost(p, op, vars)
		if again := s.operationCost(p, op, vars); cost < 0 || again != cost {
			t.Fatalf("cost %d, then %d", cost, again)
		}
		if fresh := (&costAnalysis{s: s, fragments: p.fragments, vars: vars}).selectionSet(op.SelectionSet, s.Query); fresh != cost {
			t.Fatalf("cost %d, %d worked out afresh", cost, fresh)
		}
		if cost > 5000 {
			return // a bound on the work of one input, not a property
		}
		*weights = 0
		s.executeOperation(context.Background(), p, op, nil, vars)
		if *weights > cost {
			t.Fatalf("resolved fields weigh %d, over the estimated cost %d", *weights, cost)
		}
	})
}

// TestIntrospectionQueryCached checks that the editor's introspection query,
// which every page load sends, is cached under the default budget, and is
// estimated at under half of the largest document the cache keeps (a
// sixteenth of its budget), so that the query can grow.
func TestIntrospectionQueryCached(t *testing.T) {
	s, _ := newTestSchema(t)
	query := editorIntrospection(t)
	s.prepare(query)
	if _, ok := s.cache.get(query); !ok {
		t.Fatal("the editor's introspection query is not cached")
	}
	size := s.cache.cost() // the only document cached
	t.Logf("estimated at %d bytes; a document may take %d", size, defaultCacheBytes/16)
	if size > defaultCacheBytes/16/2 {
		t.Errorf("estimated at %d bytes, over half the %d a cached document may take", size, defaultCacheBytes/16)
	}
}
