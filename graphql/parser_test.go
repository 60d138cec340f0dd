package graphql

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
)

// parseDoc parses a document as a request's query is parsed, within the
// parse limits of DefaultLimits; the error, if any, is a *SyntaxError.
func parseDoc(src string) (*Document, error) {
	doc, _, err := parseLimited(src, DefaultLimits)
	return doc, err
}

func TestLexerTokens(t *testing.T) {
	src := "\uFEFF{ a(x: -1.5e3, y: \"\\u{1F600}\\uD83D\\uDE00\\n\", z: \"\"\"\n    one\n      two\n    \"\"\") ... $v @d } # comment\n!|&="
	var got []string
	l := newLexer(src, 0)
	for {
		tok := l.next()
		if l.err != nil {
			t.Fatal(l.err)
		}
		got = append(got, fmt.Sprintf("%s@%s", tok, tok.Pos))
		if tok.Kind == tokEOF {
			break
		}
	}
	want := []string{
		`"{"@1:2`, `Name "a"@1:4`, `"("@1:5`, `Name "x"@1:6`, `":"@1:7`, `Float "-1.5e3"@1:9`,
		`Name "y"@1:17`, `":"@1:18`, `String "😀😀\n"@1:20`, `Name "z"@1:47`, `":"@1:48`,
		`BlockString "one\n  two"@1:50`, `")"@4:8`, `"..."@4:10`, `"$"@4:14`, `Name "v"@4:15`,
		`"@"@4:17`, `Name "d"@4:18`, `"}"@4:20`, `"!"@5:1`, `"|"@5:2`, `"&"@5:3`, `"="@5:4`, `<EOF>@5:5`,
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tokens\n got %q\nwant %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "Syntax Error: Unexpected <EOF>. (line 1, column 1)"},
		{"{", "Syntax Error: Expected Name, found <EOF>. (line 1, column 2)"},
		{"{ a", "Syntax Error: Expected \"}\", found <EOF>. (line 1, column 4)"},
		{"query { a(x: $v) }\nfragment on on T { a }", "Syntax Error: Unexpected Name \"on\". (line 2, column 10)"},
		{"{ a(x: 01) }", "Syntax Error: Invalid number, unexpected digit after 0: \"1\" (line 1, column 9)"},
		{"{ a(x: 1.) }", "Syntax Error: Invalid number, expected digit but got \")\" (line 1, column 10)"},
		{"{ a(x: 1x) }", "Syntax Error: Invalid number, expected digit but got \"x\" (line 1, column 9)"},
		{"{ a(x: \"abc) }", "Syntax Error: Unterminated string. (line 1, column 15)"},
		{"{ a(x: \"\\uD800\") }", "Syntax Error: Invalid Unicode escape sequence: \"\\\\uD800\" (line 1, column 9)"},
		{"{ a(x: \"\\u{110000}\") }", "Syntax Error: Invalid Unicode escape sequence: \"\\\\u{110000}\" (line 1, column 9)"},
		{"{ a(x: \"\\q\") }", "Syntax Error: Invalid character escape sequence: \"\\\\q\" (line 1, column 9)"},
		{"{ a(x: \"\x01\") }", "Syntax Error: Invalid character within String: U+0001 (line 1, column 9)"},
		{"{ a ? }", "Syntax Error: Unexpected character \"?\" (line 1, column 5)"},
		{"{ a.b }", "Syntax Error: Unexpected \".\"; did you mean \"...\"? (line 1, column 4)"},
		{"query ($v: Int = $w) { a }", "Syntax Error: Unexpected variable \"$w\" in constant value. (line 1, column 18)"},
		{"{ a }\n\n  }", "Syntax Error: Unexpected \"}\". (line 3, column 3)"},
		{"type T { a: [Int }", "Syntax Error: Expected \"]\", found \"}\". (line 1, column 18)"},
		{"enum E { true }", "Syntax Error: true is reserved and cannot be used for an enum value. (line 1, column 10)"},
		{"directive @d on NOWHERE", "Syntax Error: Unexpected Name \"NOWHERE\". (line 1, column 17)"},
		{strings.Repeat("{", 1000), "Syntax Error: Expected Name, found \"{\". (line 1, column 2)"},
		{strings.Repeat("{a", 1000), "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 514)"},
		{"{ a(x: " + strings.Repeat("[", 1000) + " }", "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 264)"},
		// A document of more tokens than the limit is refused for that before it is
		// parsed, whatever error it has earlier.
		{strings.Repeat("{", 1<<20), "Syntax Error: Document contains more than 20000 tokens. (line 1, column 20001)"},
		{strings.Repeat("{a", 1<<19), "Syntax Error: Document contains more than 20000 tokens. (line 1, column 20001)"},
		{"{ a(x: " + strings.Repeat("[", 1<<19) + " }", "Syntax Error: Document contains more than 20000 tokens. (line 1, column 20003)"},
		{"{ a(x: \"\\z\") }" + strings.Repeat(" a", 20000), "Syntax Error: Invalid character escape sequence: \"\\\\z\" (line 1, column 9)"}, // a lexical error first is still reported
		{"query($v: " + strings.Repeat("[", 300) + "Int) { a }", "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 268)"},
		{"{" + strings.Repeat(" a", DefaultLimits.MaxTokens) + " }", fmt.Sprintf("Syntax Error: Document contains more than %d tokens. (line 1, column %d)", DefaultLimits.MaxTokens, 2*DefaultLimits.MaxTokens+1)},
	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			_, err := parseDoc(tt.src)
			if err == nil {
				t.Fatalf("no error, want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseDocument(t *testing.T) {
	src := `query Q($a: [Int!]! = [1], $b: In @dir) @op {
  alias: f(a: $a, b: {x: [1, 2.5, "s", true, null, ENUM]}) @skip(if: false) { ...F ... on T { g } ... @include(if: true) { h } }
}
fragment F on T { i }
"desc" type T implements A & B @d { "fd" f(x: Int = 1 @deprecated): [T!] }
extend type T { j: Int }
schema { query: T mutation: M }
union U = | A | B
enum E { X Y @deprecated }
input I { a: Int = 1 }
interface A implements B { f: Int }
scalar S @specifiedBy(url: "u")
directive @dir(a: Int) repeatable on FIELD | QUERY
`
	doc, err := parseDoc(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Definitions) != 11 {
		t.Fatalf("got %d definitions", len(doc.Definitions))
	}
	op := doc.Definitions[0].(*OperationDefinition)
	f := op.SelectionSet.Selections[0].(*Field)
	if f.Alias != "alias" || f.Name != "f" || f.Pos != (Position{2, 3}) || f.NamePos != (Position{2, 10}) {
		t.Errorf("field: %+v", f)
	}
	if got := printLiteral(f.Arguments[1].Value); got != `{x: [1, 2.5, "s", true, null, ENUM]}` {
		t.Errorf("value printed as %s", got)
	}
	if op.Variables[0].Type.String() != "[Int!]!" || op.Variables[1].NamePos != (Position{1, 29}) {
		t.Errorf("variables: %+v", op.Variables)
	}
	td := doc.Definitions[2].(*TypeDefinition)
	if td.Description != "desc" || td.Fields[0].Description != "fd" || len(td.Interfaces) != 2 {
		t.Errorf("type definition: %+v", td)
	}
	dd := doc.Definitions[10].(*DirectiveDefinition)
	if !dd.Repeatable || strings.Join(dd.Locations, ",") != "FIELD,QUERY" {
		t.Errorf("directive definition: %+v", dd)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct{ sdl, want string }{
		{"type Q { a: Int }", "schema: the schema has no query root type"},
		{"type Query { a: Nope }", "schema: unknown type \"Nope\" (line 1, column 17)"},
		{"type Query { a: Int a: Int }", "schema: field Query.a is defined more than once (line 1, column 21)"},
		{"type Query { a: Int }\ntype Query { b: Int }", "schema: there can be only one type named \"Query\" (line 2, column 6)"},
		{"type Query { a: I }\ninput I { x: Int }", "schema: field Query.a must be of an output type, but I is not (line 1, column 17)"},
		{"type Query { a(x: Query): Int }", "schema: \"x\" must be an input type, but Query is not (line 1, column 19)"},
		{"interface N { id: ID! }\ntype Query implements N { a: Int }", "schema: Query.id expected by interface N is not provided (line 2, column 6)"},
		{"type Query { a: Int }\nextend type Nope { b: Int }", "schema: cannot extend type \"Nope\": no object of that name is defined (line 2, column 13)"},
		{"type Query { a: Int }\nunion U = Query | Int", "schema: union U can only include object types, and Int is not one (line 2, column 19)"},
	}
	for _, tt := range tests {
		_, err := ParseSchema(tt.sdl)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseSchema(%q)\n got %v\nwant %s", tt.sdl, err, tt.want)
		}
	}
}

func nested(depth int) string {
	// user { posts { user { posts ... } } } alternates to any depth.
	var b strings.Builder
	b.WriteString("{ user(id: 1) {")
	for i := 1; i < depth-1; i++ {
		if i%2 == 1 {
			b.WriteString(" posts(limit: 2) {") // sliced: the cost bound is not what this tests
		} else {
			b.WriteString(" user {")
		}
	}
	b.WriteString(" id")
	b.WriteString(strings.Repeat(" }", depth))
	return b.String()
}

func TestLimits(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("{ ...F0 }\n")
	for i := range 20 {
		fmt.Fprintf(&bomb, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	bomb.WriteString("fragment F20 on Query { __typename }\n")
	aliases := func(n int) string {
		return repeatFields(n, func(i int) string { return fmt.Sprintf("a%d: __typename", i) })
	}
	// ops returns n named operations of the fields made by fields.
	ops := func(n int, fields func(op int) string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "query Q%d %s\n", i, fields(i))
		}
		return b.String()
	}
	const (
		tooManyFields  = "Query selects too many fields: at most 2000 field selections are allowed after fragment expansion."
		tooManyAliases = "Query uses too many aliases: at most 100 are allowed."
	)
	tests := []struct {
		name, query, want string
		code              string // codeValidationFailed when empty
	}{
		{"depth 12 runs", nested(12), "", ""},
		{"depth 13 refused", nested(13), "Query is nested too deeply: the maximum depth is 12.", ""},
		{"50 levels refused", nested(50), "Query is nested too deeply: the maximum depth is 12.", ""},
		{"100 aliases run", aliases(100), "", ""},
		{"101 aliases refused", aliases(101), tooManyAliases, ""},
		{"10000 aliases refused", aliases(10000), "Syntax Error: Document contains more than 20000 tokens.", codeParseFailed},
		{"2000 fields run", "{" + strings.Repeat(" __typename", 2000) + " }", "", ""}, // a list of them would cost too much
		{"2001 fields refused", "{" + strings.Repeat(" __typename", 2001) + " }", tooManyFields, ""},
		{"fragment bomb refused", bomb.String(), tooManyFields, ""},
		{"fragment cycle refused", "{ ...A }\nfragment A on Query { ...B }\nfragment B on Query { ...A }", "Cannot spread fragment \"A\" within itself via \"B\".", ""},

		// Counted for the whole document, not per operation.
		{"fields of 2 operations", ops(2, func(int) string { return "{ users {" + strings.Repeat(" id", 1000) + " } }" }), tooManyFields, ""},
		{"aliases of 2 operations", ops(2, func(int) string { return aliases(51) }), tooManyAliases, ""},
		{"45 operations of 1990 fields", ops(45, func(int) string { return "{ users {" + strings.Repeat(" id", 1989) + " } }" }),
			"Syntax Error: Document contains more than 20000 tokens.", codeParseFailed},

		// Counted while parsing.
		{"20 operations run", ops(20, func(int) string { return "{ __typename }" }), "", ""},
		{"21 operations refused", ops(21, func(int) string { return "{ __typename }" }), "Syntax Error: Document contains more than 20 operations.", codeParseFailed},
		{"200 directives run", "{" + strings.Repeat(" __typename @include(if: true)", 200) + " }", "", ""},
		{"201 directives refused", "{" + strings.Repeat(" __typename @include(if: true)", 201) + " }", "Syntax Error: Document contains more than 200 directives.", codeParseFailed},
		{"201 unknown directives refused", "{ __typename" + strings.Repeat(" @foo", 201) + " }", "Syntax Error: Document contains more than 200 directives.", codeParseFailed},
		{"20000 unknown directives refused", "{ __typename" + strings.Repeat(" @foo", 20000) + " }", "Syntax Error: Document contains more than 20000 tokens.", codeParseFailed},
		{"100 variables run", withVars("Q0", 0, 100), "", ""},
		{"101 variables refused", withVars("Q0", 0, 101), "Syntax Error: Document contains more than 100 variable definitions.", codeParseFailed},
		{"variables of 2 operations", withVars("Q0", 0, 50) + withVars("Q1", 50, 51),
			"Syntax Error: Document contains more than 100 variable definitions.", codeParseFailed},
		{"3000 unused variables refused", "query (" + strings.Repeat(" $v: Int", 3000) + ") { __typename }",
			"Syntax Error: Document contains more than 100 variable definitions.", codeParseFailed},
		// "{ echo ( list : [" and "] ) }" are 9 tokens.
		{"20000 tokens run", "{ echo(list: [" + strings.Repeat(" 1", 20000-9) + "]) }", "", ""},
		{"20001 tokens refused", "{ echo(list: [" + strings.Repeat(" 1", 20001-9) + "]) }", "Syntax Error: Document contains more than 20000 tokens.", codeParseFailed},
		{"1 MiB runs", "{ __typename }" + strings.Repeat(" ", 1<<20-len("{ __typename }")), "", ""},
		{"1 MiB and a byte refused", "{ __typename }" + strings.Repeat(" ", 1<<20-len("{ __typename }")+1), "Syntax Error: Document is larger than 1048576 bytes.", codeParseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestSchema(t)
			resp := s.Execute(context.Background(), Request{Query: tt.query, OperationName: firstOperationName(tt.query)})
			if tt.want == "" {
				if len(resp.Errors) > 0 || resp.Data == nil {
					t.Fatalf("unexpected errors: %v", ErrorList(resp.Errors))
				}
				return
			}
			if len(resp.Errors) != 1 || resp.Errors[0].Message != tt.want || resp.Data != nil {
				t.Fatalf("got %.500s, want the single error %q", resp.appendJSON(nil), tt.want)
			}
			want := cmp.Or(tt.code, codeValidationFailed)
			if code := resp.Errors[0].Code(); code != want {
				t.Errorf("code %q, want %q", code, want)
			}
		})
	}
}

// varDefs returns the definitions of n Boolean variables $v<from>…
// $v<from+n-1>, and a selection of __typename that uses each of them (unused
// variables are a validation error).
func varDefs(from, n int) (defs, uses string) {
	var d, u strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&d, " $v%d: Boolean = true", i)
		fmt.Fprintf(&u, " __typename @include(if: $v%d)", i)
	}
	return d.String(), "{" + u.String() + " }"
}

// withVars returns an operation named name that defines and uses n variables.
func withVars(name string, from, n int) string {
	defs, uses := varDefs(from, n)
	return "query " + name + "(" + defs + ") " + uses
}

// firstOperationName returns the name of the first "query Name" in q, or "".
func firstOperationName(q string) string {
	if rest, ok := strings.CutPrefix(q, "query Q"); ok {
		n := strings.IndexAny(rest, " (")
		return "Q" + rest[:n]
	}
	return ""
}

// TestTooManyTokensBuildsNothing: a document past MaxTokens is refused before
// it is parsed. Parsed up to the limit, 45 operations of 1,990 fields made
// 20,000 allocations and 3.7 MB of syntax tree, all garbage, per request.
func TestTooManyTokensBuildsNothing(t *testing.T) {
	var b strings.Builder
	for i := range 45 {
		fmt.Fprintf(&b, "query Q%d { users {%s } }\n", i, strings.Repeat(" id", 1989))
	}
	doc := b.String()
	allocs := testing.AllocsPerRun(5, func() {
		if _, _, err := parseLimited(doc, DefaultLimits); err == nil || !strings.Contains(err.Error(), "more than 20000 tokens") {
			t.Fatalf("parseLimited = %v, want the token limit", err)
		}
	})
	if allocs > 20 {
		t.Errorf("%v allocations refusing the document; want a handful", allocs)
	}
}

// TestPrintLiteralEscapes: a string literal prints with GraphQL's escapes, control
// characters as \u00XX (lower-case hex), and allocates only its answer.
func TestPrintLiteralEscapes(t *testing.T) {
	v := &Value{Kind: StringValue, Raw: "a\"b\\c\n\t\x01\x1f\x7fé/"}
	want := `"a\"b\\c\n\t\u0001\u001f\u007fé/"`
	if got := printLiteral(v); got != want {
		t.Errorf("printed %s, want %s", got, want)
	}
	short := &Value{Kind: StringValue, Raw: "\x01"}
	if n := testing.AllocsPerRun(100, func() { printLiteral(short) }); n > 1 {
		t.Errorf("printing a short literal allocated %v times, want 1", n)
	}
}
