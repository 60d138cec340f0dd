package graphql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestLexerTokens(t *testing.T) {
	src := "\uFEFF{ a(x: -1.5e3, y: \"\\u{1F600}\\uD83D\\uDE00\\n\", z: \"\"\"\n    one\n      two\n    \"\"\") ... $v @d } # comment\n!|&="
	var got []string
	l := newLexer(src)
	for {
		tok := l.next()
		if l.err != nil {
			t.Fatal(l.err)
		}
		got = append(got, fmt.Sprintf("%s@%s", tok, tok.Pos))
		if tok.Kind == TokenEOF {
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
		{strings.Repeat("{", 1<<20), "Syntax Error: Expected Name, found \"{\". (line 1, column 2)"},
		{strings.Repeat("{a", 1<<19), "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 514)"},
		{"{ a(x: " + strings.Repeat("[", 1<<20) + " }", "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 264)"},
		{"query($v: " + strings.Repeat("[", 300) + "Int) { a }", "Syntax Error: Document nesting exceeds the maximum depth of 256. (line 1, column 268)"},
		{"{" + strings.Repeat(" a", MaxTokens) + " }", fmt.Sprintf("Syntax Error: Document contains more than %d tokens. (line 1, column %d)", MaxTokens, 2*MaxTokens+1)},
	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tt.src)
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
	doc, err := Parse(src)
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
	if got := printValue(f.Arguments[1].Value); got != `{x: [1, 2.5, "s", true, null, ENUM]}` {
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
	var aliases strings.Builder
	aliases.WriteString("{")
	for i := range 10000 {
		fmt.Fprintf(&aliases, " a%d: __typename", i)
	}
	aliases.WriteString(" }")
	var bomb strings.Builder
	bomb.WriteString("{ ...F0 }\n")
	for i := range 20 {
		fmt.Fprintf(&bomb, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	bomb.WriteString("fragment F20 on Query { __typename }\n")
	tests := []struct {
		name, query, want string
	}{
		{"depth 12 runs", nested(12), ""},
		{"depth 13 refused", nested(13), "Query is nested too deeply: the maximum depth is 12."},
		{"50 levels refused", nested(50), "Query is nested too deeply: the maximum depth is 12."},
		{"10000 aliases refused", aliases.String(), "Query uses too many aliases: at most 100 are allowed."},
		{"2001 fields refused", "{" + strings.Repeat(" __typename", 2001) + " }", "Query selects too many fields: at most 2000 field selections are allowed after fragment expansion."},
		{"fragment bomb refused", bomb.String(), "Query selects too many fields: at most 2000 field selections are allowed after fragment expansion."},
		{"fragment cycle refused", "{ ...A }\nfragment A on Query { ...B }\nfragment B on Query { ...A }", "Cannot spread fragment \"A\" within itself via \"B\"."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestSchema(t)
			resp := s.Execute(context.Background(), Request{Query: tt.query})
			if tt.want == "" {
				if len(resp.Errors) > 0 || resp.Data == nil {
					t.Fatalf("unexpected errors: %v", ErrorList(resp.Errors))
				}
				return
			}
			if len(resp.Errors) != 1 || resp.Errors[0].Message != tt.want || resp.Data != nil {
				t.Fatalf("got %s, want the single error %q", resp.AppendJSON(nil), tt.want)
			}
			if code := resp.Errors[0].Code(); code != CodeValidationFailed {
				t.Errorf("code %q", code)
			}
		})
	}
}

func TestDocumentCache(t *testing.T) {
	s, _ := newTestSchema(t)
	q := "{ users { name } }"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if r := s.Execute(context.Background(), Request{Query: q}); len(r.Errors) > 0 {
					t.Error(ErrorList(r.Errors))
				}
			}
		}()
	}
	wg.Wait()
	p1, p2 := s.prepare(q), s.prepare(q)
	if p1 != p2 {
		t.Error("a repeated query was prepared twice")
	}
	c := newDocumentCache(2)
	for _, k := range []string{"a", "b", "a", "c"} {
		if c.get(k) == nil {
			c.put(&preparedDocument{query: k})
		}
	}
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil {
		t.Error("the least recently used entry was not the one evicted")
	}
}
