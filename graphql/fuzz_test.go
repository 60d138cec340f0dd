package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"quartet/internal/jsonkeys"
	"quartet/internal/testkit"
)

var fuzzSeeds = []string{
	"{ users { name posts(limit: 2) { title comments { text author { name } } } } }",
	"query Q($id: Int! = 1, $f: PostFilter) @skip(if: false) { user(id: $id) { ...U ... on User { id } } filteredPosts(filter: {ids: [1], limit: 2}) { id } }\nfragment U on User { name }",
	"mutation { createUser(name: \"a\", email: \"b\") { id } }",
	"subscription S { onUserCreated { id } }",
	"{ echo(text: \"\"\"\n  block \\\"\"\" \n \"\"\", float: -1.5e-3, list: [1, null], role: ADMIN) }",
	"{ a: echo(text: \"\\u{1F600}\\uD83D\\uDE00\") __typename __type(name: \"User\") { name } }",
	"type T implements A & B @d { \"desc\" f(a: Int = 1): [T!]! } extend schema @x union U = A | B input I { a: Int = 2 } directive @d repeatable on FIELD",
	"{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }",
	"{ search(text: \"o\") { ... on User { name } ... on Post { name: title } } }",
	"{{{{{{{",
	"query ($d: Boolean!) { users @stream(initialCount: 1, label: \"s\") { id ...U @defer(if: $d) ... @defer(label: \"x\") { posts { title } } } } fragment U on User { name }",
	"{ ... @defer { mustFail } search(text: \"o\") @stream(initialCount: -1) { ... on User @defer { name } } }",
	"query ($v: [[[[Int]]]]) { echo(list: $v) }",
	// A null default where a directive's argument is non-null: an error at the value.
	"query ($v: Boolean = null, $n: Int = null) { user(id: 1) { id ... @defer(if: $v) { name } } users @stream(initialCount: $n) { id } }",
	// Just past the parse limits: tokens, directives, variables, operations.
	"{" + strings.Repeat(" a", 20000) + " }",
	"{ a" + strings.Repeat(" @d", 201) + " }",
	"query (" + strings.Repeat("$v: Int ", 101) + ") { a }",
	strings.Repeat("{ a } ", 21),
}

// FuzzParse checks that the parser never panics and that errors carry a
// position inside the document.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// Under a small token limit, the count before parsing decides alone: a
		// document is refused for its length exactly when it has more tokens
		// than the limit before its end or its first lexical error.
		lim := DefaultLimits
		lim.MaxTokens = 8
		_, _, limErr := parseLimited(src, lim)
		counted := newLexer(src, 0)
		for counted.next().Kind != tokEOF {
		}
		if tooLong := limErr != nil && strings.Contains(limErr.Error(), "more than 8 tokens"); tooLong != (counted.tokens > 8) {
			t.Fatalf("%d tokens, yet parsing under a limit of 8 says %v", counted.tokens, limErr)
		}

		doc, err := parseDoc(src)
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok || se.Pos.Line < 1 || se.Pos.Column < 1 || se.Pos.Line > strings.Count(src, "\n")+strings.Count(src, "\r")+1 {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		if doc == nil || len(doc.Definitions) == 0 {
			t.Fatal("no definitions and no error")
		}
		if counted.tokens > DefaultLimits.MaxTokens {
			t.Fatalf("parsed a document of %d tokens", counted.tokens)
		}
	})
}

// FuzzValidate runs limits, validation and, for valid queries, execution
// against the test schema; none of it may panic.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	s, _ := newTestSchema(f)
	f.Fuzz(func(t *testing.T, src string) {
		doc, err := parseDoc(src)
		if err != nil {
			return
		}
		if errs := checkLimits(doc, fragmentsOf(doc), DefaultLimits); errs != nil {
			return
		}
		errs := s.validate(doc)
		for _, e := range errs {
			if e.Message == "" || e.Code() != codeValidationFailed {
				t.Fatalf("bad validation error %#v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		for _, d := range doc.Definitions {
			if op, ok := d.(*OperationDefinition); ok && op.Operation != Query {
				return
			}
		}
		resp := s.Execute(context.Background(), Request{Query: src})
		if resp.Data == nil && len(resp.Errors) == 0 {
			t.Fatal("no data and no errors")
		}
		in := s.ExecuteIncremental(context.Background(), Request{Query: src})
		for p := in.Next(); p != nil; p = in.Next() {
			if part := p.appendJSON(nil, formatV02); !json.Valid(part) {
				t.Fatalf("a part that is not JSON: %s", part)
			}
		}
	})
}

// FuzzDecodeParams checks that no request body that repeats a key, nests deeper
// than jsonkeys.MaxDepth or holds an unpaired surrogate escape is accepted (the
// last two by testkit's references).
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ user(id: 7) { id name email } }"}`,
		` { "query" : "{ a }" , "operationName" : null } `,
		`{"operationName":"Q","query":"query Q { a }","query":"{ b }"}`,
		`{}`, `{"query":null}`, `{"Query":"{ a }"}`, `{"query":"caf\u00e9 ü"}`, "{\"query\":\"a\xffb\"}",
		`{"query":"a\"b"}`, `{"query":"{ a }","variables":{"id":1}}`, `{"query":"{ a }",}`, `{"query":"x"} x`,
		`{"query":nul}`, `[]`, ``, `{"query":"tab	in"}`,
		`{"query":"{ a }","query":"{ b }"}`, `{"operationName":null,"query":"x","operationName":"y"}`,
		`{"query":"{ a }","QUERY":"{ b }"}`, `{"query":"{ a }","variables":{"a":1,"a":2}}`,
		`{"query":"{ a }","variables":{"t":"\ud800"}}`, `{"query":"{ a(t: \"\udc00\ud83d\ude00\") }"}`,
		`{"query":"{ a }","variables":{"v":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p httpParams
		if jsonkeys.Unmarshal(body, &p) != nil {
			return
		}
		var dup *jsonkeys.Error
		switch {
		case errors.As(jsonkeys.Check(body), &dup):
			t.Fatalf("accepted a body repeating the key %q", dup.Key)
		case testkit.JSONDepth(body) > jsonkeys.MaxDepth:
			t.Fatalf("accepted a body nested %d deep", testkit.JSONDepth(body))
		case testkit.HasLoneSurrogate(body):
			t.Fatalf("accepted %q, which holds an unpaired surrogate escape", body)
		}
	})
}
