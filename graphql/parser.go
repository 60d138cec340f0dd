package graphql

import "fmt"

// maxParseDepth bounds the nesting of a document (selection sets, list and
// object values, list types): a deeper one is refused with a syntax error,
// so hostile input cannot overflow the stack.
const maxParseDepth = 256

// parse parses a trusted document, such as a schema, with no limit.
func parse(src string) (*Document, error) {
	doc, _, err := parseLimited(src, Limits{})
	return doc, err
}

// parseLimited parses src and refuses it, as a syntax error, at the first
// limit of lim it exceeds: the document is never read further than that.
// It also returns the number of tokens, which measures the document's size.
func parseLimited(src string, lim Limits) (doc *Document, tokens int, err error) {
	if lim.MaxDocumentBytes > 0 && len(src) > lim.MaxDocumentBytes {
		return nil, 0, &SyntaxError{Pos: Position{Line: 1, Column: 1}, Msg: fmt.Sprintf("Document is larger than %d bytes.", lim.MaxDocumentBytes)}
	}
	// A document that may hold more than MaxTokens tokens (one a byte at most)
	// is counted first, and refused before a syntax tree of garbage is built:
	// so it gets that error even when it has an earlier syntax error.
	if lim.MaxTokens > 0 && len(src) > lim.MaxTokens {
		if err := tooManyTokens(src, lim.MaxTokens); err != nil {
			return nil, 0, err
		}
	}
	p := &parser{lex: newLexer(src, lim.MaxTokens), lim: lim}
	p.advance()
	doc = p.document()
	if p.err != nil {
		return nil, 0, p.err
	}
	return doc, p.lex.tokens, nil
}

// tooManyTokens returns the lexer's error for src's token past max, or nil
// when src has at most max tokens before its end or its first lexical error.
func tooManyTokens(src string, max int) *SyntaxError {
	l := newLexer(src, max)
	for l.next().Kind != tokEOF {
	}
	if l.tokens > max {
		return l.err
	}
	return nil
}

type parser struct {
	lex   *lexer
	tok   token
	depth int
	err   *SyntaxError

	lim                                 Limits
	operations, directiveCount, varDefs int // counted against lim as they are read
}

func (p *parser) advance() {
	if p.err != nil {
		return
	}
	p.tok = p.lex.next()
	if p.lex.err != nil {
		p.err = p.lex.err
	}
}

// count adds one to *n, a count of the things called what, and fails once it
// is over max (0: no limit).
func (p *parser) count(n *int, max int, what string) {
	*n++
	if max > 0 && *n > max {
		p.errorf(p.tok.Pos, "Document contains more than %d %s.", max, what)
	}
}

// errorf records the first error, the one closest to the cause. After an
// error the current token is EOF, which ends every loop of the parser.
func (p *parser) errorf(pos Position, format string, args ...any) {
	if p.err == nil {
		p.err = &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	p.tok = token{Kind: tokEOF, Pos: pos}
}

func (p *parser) unexpected() { p.errorf(p.tok.Pos, "Unexpected %s.", p.tok) }

func (p *parser) enter() bool {
	p.depth++
	if p.depth > maxParseDepth {
		p.errorf(p.tok.Pos, "Document nesting exceeds the maximum depth of %d.", maxParseDepth)
		return false
	}
	return true
}

func (p *parser) leave() { p.depth-- }

func (p *parser) peek(k tokenKind) bool { return p.tok.Kind == k }

func (p *parser) peekName(name string) bool { return p.tok.Kind == tokName && p.tok.Value == name }

func (p *parser) skip(k tokenKind) bool {
	if p.tok.Kind == k {
		p.advance()
		return true
	}
	return false
}

// closes ends a list: it consumes the closing token k and reports true, or
// reports an error and true at the end of input, or false otherwise.
func (p *parser) closes(k tokenKind) bool {
	if p.skip(k) {
		return true
	}
	if p.tok.Kind == tokEOF {
		p.errorf(p.tok.Pos, "Expected %s, found <EOF>.", k)
		return true
	}
	return false
}

// many reads the items of a list between open and close, or nothing when the
// next token is not open.
func many[T any](p *parser, open, close tokenKind, item func() T) []T {
	if !p.skip(open) {
		return nil
	}
	var items []T
	for {
		items = append(items, item())
		if p.closes(close) {
			return items
		}
	}
}

// separated reads items separated by sep, which may also come first.
func separated[T any](p *parser, sep tokenKind, item func() T) []T {
	p.skip(sep)
	var items []T
	for {
		items = append(items, item())
		if !p.skip(sep) {
			return items
		}
	}
}

func (p *parser) expect(k tokenKind) token {
	t := p.tok
	if t.Kind != k {
		p.errorf(t.Pos, "Expected %s, found %s.", k, t)
	} else {
		p.advance()
	}
	return t
}

func (p *parser) expectKeyword(name string) {
	if !p.peekName(name) {
		p.errorf(p.tok.Pos, "Expected \"%s\", found %s.", name, p.tok)
	} else {
		p.advance()
	}
}

func (p *parser) name() (string, Position) {
	t := p.expect(tokName)
	return t.Value, t.Pos
}

func (p *parser) document() *Document {
	doc := &Document{}
	for { // at least one definition: at once at EOF, definition fails
		if d := p.definition(); d != nil {
			doc.Definitions = append(doc.Definitions, d)
		}
		if p.peek(tokEOF) {
			return doc
		}
	}
}

func (p *parser) definition() Definition {
	if p.peek('{') {
		return p.operation()
	}
	start := p.tok.Pos
	hasDesc := p.peek(tokString) || p.peek(tokBlockString)
	desc := p.description()
	extend := !hasDesc && p.peekName("extend")
	if extend {
		p.advance()
	}
	if !p.peek(tokName) {
		p.unexpected()
		return nil
	}
	executable := !hasDesc && !extend
	switch p.tok.Value {
	case "query", "mutation", "subscription":
		if executable {
			return p.operation()
		}
	case "fragment":
		if executable {
			return p.fragmentDefinition()
		}
	case "schema":
		return p.schemaDefinition(start, desc, extend)
	case "scalar", "type", "interface", "union", "enum", "input":
		return p.typeDefinition(start, desc, extend)
	case "directive":
		if !extend {
			return p.directiveDefinition(start, desc)
		}
	}
	p.unexpected()
	return nil
}

func (p *parser) operation() *OperationDefinition {
	p.count(&p.operations, p.lim.MaxOperations, "operations")
	op := &OperationDefinition{node: node{p.tok.Pos}}
	if p.peek('{') {
		op.SelectionSet = p.selectionSet()
		return op
	}
	op.Operation = operationTypes[p.tok.Value]
	p.advance()
	if p.peek(tokName) {
		op.Name, op.NamePos = p.name()
	}
	op.Variables = many(p, '(', ')', p.variableDefinition)
	op.Directives = p.directives(false)
	op.SelectionSet = p.selectionSet()
	return op
}

func (p *parser) variableDefinition() *VariableDefinition {
	p.count(&p.varDefs, p.lim.MaxVariables, "variable definitions")
	v := &VariableDefinition{Pos: p.tok.Pos}
	p.expect('$')
	v.Name, v.NamePos = p.name()
	p.expect(':')
	v.Type = p.typeRef()
	if p.skip('=') {
		v.DefaultValue = p.value(true)
	}
	v.Directives = p.directives(true)
	return v
}

func (p *parser) selectionSet() *SelectionSet {
	set := &SelectionSet{Pos: p.tok.Pos}
	p.expect('{')
	if !p.enter() {
		return set
	}
	defer p.leave()
	for {
		set.Selections = append(set.Selections, p.selection())
		if p.closes('}') {
			return set
		}
	}
}

func (p *parser) selection() Selection {
	if p.peek(tokSpread) {
		start := p.tok.Pos
		p.advance()
		if p.peek(tokName) && p.tok.Value != "on" {
			s := &FragmentSpread{node: node{start}}
			s.Name, s.NamePos = p.name()
			s.Directives = p.directives(false)
			return s
		}
		f := &InlineFragment{node: node{start}}
		if p.peekName("on") {
			p.advance()
			f.TypeCondition = p.namedType()
		}
		f.Directives = p.directives(false)
		f.SelectionSet = p.selectionSet()
		return f
	}
	return p.field()
}

func (p *parser) field() *Field {
	f := &Field{node: node{p.tok.Pos}}
	f.Name, f.NamePos = p.name()
	if p.skip(':') {
		f.Alias = f.Name
		f.Name, f.NamePos = p.name()
	}
	f.Arguments = p.arguments(false)
	f.Directives = p.directives(false)
	if p.peek('{') {
		f.SelectionSet = p.selectionSet()
	}
	return f
}

func (p *parser) arguments(isConst bool) []*Argument {
	return many(p, '(', ')', func() *Argument {
		a := &Argument{Pos: p.tok.Pos}
		a.Name, _ = p.name()
		p.expect(':')
		a.Value = p.value(isConst)
		return a
	})
}

func (p *parser) directives(isConst bool) []*Directive {
	var ds []*Directive
	for p.peek('@') {
		p.count(&p.directiveCount, p.lim.MaxDirectives, "directives")
		d := &Directive{Pos: p.tok.Pos}
		p.advance()
		d.Name, _ = p.name()
		d.Arguments = p.arguments(isConst)
		ds = append(ds, d)
	}
	return ds
}

func (p *parser) fragmentDefinition() *FragmentDefinition {
	f := &FragmentDefinition{node: node{p.tok.Pos}}
	p.advance()
	if p.peekName("on") {
		p.unexpected()
		return f
	}
	f.Name, f.NamePos = p.name()
	p.expectKeyword("on")
	f.TypeCondition = p.namedType()
	f.Directives = p.directives(false)
	f.SelectionSet = p.selectionSet()
	return f
}

func (p *parser) value(isConst bool) *Value {
	t := p.tok
	v := &Value{Pos: t.Pos}
	switch t.Kind {
	case '[', '{':
		closing := tokenKind(']')
		v.Kind = ListValue
		if t.Kind == '{' {
			v.Kind, closing = ObjectValue, '}'
		}
		p.advance()
		if !p.enter() {
			return v
		}
		for !p.skip(closing) && !p.peek(tokEOF) {
			if v.Kind == ListValue {
				v.List = append(v.List, p.value(isConst))
				continue
			}
			f := &ObjectField{Pos: p.tok.Pos}
			f.Name, _ = p.name()
			p.expect(':')
			f.Value = p.value(isConst)
			v.Fields = append(v.Fields, f)
		}
		p.leave()
		if p.peek(tokEOF) && p.err == nil {
			p.unexpected()
		}
		return v
	case tokInt, tokFloat, tokString, tokBlockString:
		v.Kind = [...]ValueKind{tokInt: IntValue, tokFloat: FloatValue, tokString: StringValue, tokBlockString: StringValue}[t.Kind]
	case tokName:
		switch t.Value {
		case "true", "false":
			v.Kind = BooleanValue
		case "null":
			v.Kind = NullValue
		default:
			v.Kind = EnumValue
		}
	case '$':
		p.advance()
		if isConst && p.peek(tokName) {
			p.errorf(t.Pos, "Unexpected variable \"$%s\" in constant value.", p.tok.Value)
		} else if isConst {
			p.unexpected()
		}
		v.Kind = VariableValue
		v.Raw, _ = p.name()
		return v
	default:
		p.unexpected()
		return v
	}
	v.Raw = t.Value
	p.advance()
	return v
}

func (p *parser) typeRef() *TypeRef {
	var t *TypeRef
	if p.peek('[') {
		t = &TypeRef{Pos: p.tok.Pos, Kind: ListTypeRef}
		p.advance()
		if !p.enter() {
			return t
		}
		t.Elem = p.typeRef()
		p.leave()
		p.expect(']')
	} else {
		t = p.namedType()
	}
	if p.peek('!') {
		p.advance()
		return &TypeRef{Pos: t.Pos, Kind: NonNullTypeRef, Elem: t}
	}
	return t
}

func (p *parser) namedType() *TypeRef {
	t := &TypeRef{Pos: p.tok.Pos, Kind: NamedTypeRef}
	t.Name, _ = p.name()
	return t
}

// Type-system definitions (spec section 3).

func (p *parser) schemaDefinition(start Position, desc string, extend bool) *SchemaDefinition {
	s := &SchemaDefinition{node: node{start}, Extend: extend, Description: desc}
	p.advance()
	s.Directives = p.directives(true)
	if extend && !p.peek('{') {
		if len(s.Directives) == 0 {
			p.unexpected()
		}
		return s
	}
	p.expect('{')
	for {
		op, ok := operationTypes[p.tok.Value]
		if !ok || !p.peek(tokName) {
			p.unexpected()
			return s
		}
		r := &RootOperationType{Pos: p.tok.Pos, Operation: op}
		p.advance()
		p.expect(':')
		r.Type = p.namedType()
		s.Operations = append(s.Operations, r)
		if p.closes('}') {
			break
		}
	}
	return s
}

var operationTypes = map[string]OperationType{"query": Query, "mutation": Mutation, "subscription": Subscription}

var typeKeywords = map[string]TypeKind{
	"scalar": Scalar, "type": Object, "interface": Interface,
	"union": Union, "enum": Enum, "input": InputObject,
}

func (p *parser) typeDefinition(start Position, desc string, extend bool) *TypeDefinition {
	d := &TypeDefinition{node: node{start}, Extend: extend, Kind: typeKeywords[p.tok.Value], Description: desc}
	p.advance()
	d.Name, d.NamePos = p.name()
	if (d.Kind == Object || d.Kind == Interface) && p.peekName("implements") {
		p.advance()
		d.Interfaces = separated(p, '&', p.namedType)
	}
	d.Directives = p.directives(true)
	switch d.Kind {
	case Object, Interface:
		d.Fields = many(p, '{', '}', p.fieldDefinition)
	case Union:
		if p.skip('=') {
			d.Types = separated(p, '|', p.namedType)
		}
	case Enum:
		d.EnumValues = many(p, '{', '}', func() *EnumValueDefinition {
			e := &EnumValueDefinition{Pos: p.tok.Pos}
			e.Description = p.description()
			if p.peekName("true") || p.peekName("false") || p.peekName("null") {
				p.errorf(p.tok.Pos, "%s is reserved and cannot be used for an enum value.", p.tok.Value)
			}
			e.Name, _ = p.name()
			e.Directives = p.directives(true)
			return e
		})
	case InputObject:
		d.InputFields = many(p, '{', '}', p.inputValueDefinition)
	}
	if extend && len(d.Interfaces) == 0 && len(d.Directives) == 0 && len(d.Fields) == 0 &&
		len(d.InputFields) == 0 && len(d.Types) == 0 && len(d.EnumValues) == 0 {
		p.unexpected()
	}
	return d
}

func (p *parser) description() string {
	if p.peek(tokString) || p.peek(tokBlockString) {
		s := p.tok.Value
		p.advance()
		return s
	}
	return ""
}

func (p *parser) fieldDefinition() *FieldDefinition {
	f := &FieldDefinition{Pos: p.tok.Pos}
	f.Description = p.description()
	f.Name, _ = p.name()
	f.Args = many(p, '(', ')', p.inputValueDefinition)
	p.expect(':')
	f.Type = p.typeRef()
	f.Directives = p.directives(true)
	return f
}

func (p *parser) inputValueDefinition() *InputValueDefinition {
	v := &InputValueDefinition{Pos: p.tok.Pos}
	v.Description = p.description()
	v.Name, _ = p.name()
	p.expect(':')
	v.Type = p.typeRef()
	if p.skip('=') {
		v.DefaultValue = p.value(true)
	}
	v.Directives = p.directives(true)
	return v
}

func (p *parser) directiveDefinition(start Position, desc string) *DirectiveDefinition {
	d := &DirectiveDefinition{node: node{start}, Description: desc}
	p.advance()
	p.expect('@')
	d.Name, _ = p.name()
	d.Args = many(p, '(', ')', p.inputValueDefinition)
	if p.peekName("repeatable") {
		d.Repeatable = true
		p.advance()
	}
	p.expectKeyword("on")
	d.Locations = separated(p, '|', func() string {
		name, pos := p.name()
		if p.err == nil && !directiveLocations[name] {
			p.errorf(pos, "Unexpected Name \"%s\".", name)
		}
		return name
	})
	return d
}
