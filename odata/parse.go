package odata

import "strings"

// OrderItem is one $orderby key.
type OrderItem struct {
	Expr Expr
	Desc bool
}

// options is the syntax of a set of query options, at the top level or in $expand.
type options struct {
	present map[string]int // option name ("$filter") -> position of its value

	filter     Expr
	orderBy    []OrderItem
	selects    []Segment
	selectStar bool
	expand     []*expandItem
	top, skip  int64
	count      bool
	apply      *applySyntax    // top level only
	search     searchExpr      // top level only
	compute    []computeSyntax // top level only
}

func (o *options) has(name string) bool { _, ok := o.present[name]; return ok }

type expandItem struct {
	nav   Segment
	opts  *options
	count bool // nav/$count: only the number of related entities is expanded
}

// parser is a recursive-descent parser over one option value. Errors are raised
// with panic(*Error) and recovered by run, as text/template/parse does.
type parser struct {
	lex     lexer
	tok     token
	depth   int
	lambdas int // any/all enclosing the current token
	budget  *budget
}

// newParser returns a parser over src drawing on b, the query string's budget.
func newParser(src string, b *budget) *parser {
	p := &parser{lex: lexer{src: src}, budget: b}
	p.advance()
	return p
}

// run calls f, turning a raised *Error into a returned one.
func run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	f()
	return nil
}

func (p *parser) advance() { p.tok = p.lex.next() }

func (p *parser) expect(k tokKind) {
	if p.tok.kind != k {
		p.unexpected("expected " + tokNames[k])
	}
	p.advance()
}

func (p *parser) unexpected(context string) {
	if p.tok.kind == tokEOF {
		failf(p.tok.pos, "%s, found end of input", context)
	}
	failf(p.tok.pos, "%s, found %s", context, p.tok)
}

func (p *parser) enter() {
	p.depth++
	if p.depth > p.budget.MaxDepth {
		failf(p.tok.pos, "expression nested too deeply (more than %d levels)", p.budget.MaxDepth)
	}
}

func (p *parser) node() { p.budget.node(p.tok.pos) }

func (p *parser) leave() { p.depth-- }

// isWord reports whether the current token is the identifier w, in any letter case.
func (p *parser) isWord(w string) bool {
	return p.tok.kind == tokIdent && strings.EqualFold(p.tok.text, w)
}

func (p *parser) end() {
	if p.tok.kind == tokSemi {
		failf(p.tok.pos, "';' does not separate query options; use '&'")
	}
	if p.tok.kind != tokEOF {
		p.unexpected("expected operator or end of expression")
	}
}

func (p *parser) expr() Expr { return p.binary(1) }

var binaryPrec = map[string]int{
	"or": 1, "and": 2,
	"eq": 3, "ne": 3,
	"gt": 4, "ge": 4, "lt": 4, "le": 4, "has": 4, "in": 4,
	"add": 5, "sub": 5,
	"mul": 6, "div": 6, "divby": 6, "mod": 6,
}

// binop returns the binary operator at the current token, which whitespace must precede.
func (p *parser) binop() (string, int) {
	if p.tok.kind != tokIdent || !p.tok.space || len(p.tok.text) > 5 {
		return "", 0
	}
	op := strings.ToLower(p.tok.text)
	return op, binaryPrec[op]
}

// binary parses left-associative operators of precedence minPrec and higher.
func (p *parser) binary(minPrec int) Expr {
	x := p.unary()
	for {
		op, prec := p.binop()
		if prec == 0 || prec < minPrec {
			return x
		}
		p.node()
		pos := p.tok.pos
		p.advance()
		if p.tok.kind == tokEOF {
			p.unexpected("expected expression after '" + op + "'")
		}
		if !p.tok.space {
			failf(p.tok.pos, "expected whitespace after '%s'", op)
		}
		if op == "in" {
			x = p.inList(x, pos)
			continue
		}
		y := p.binary(prec + 1)
		x = &Binary{exprBase: exprBase{pos: pos}, Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	p.enter()
	defer p.leave()
	pos := p.tok.pos
	switch {
	case p.isWord("not"):
		p.node()
		p.advance()
		if !p.tok.space && p.tok.kind != tokLParen {
			failf(p.tok.pos, "expected whitespace after 'not'")
		}
		return &Unary{exprBase: exprBase{pos: pos}, Op: "not", X: p.unary()}
	case p.tok.kind == tokMinus:
		p.node()
		p.advance()
		return &Unary{exprBase: exprBase{pos: pos}, Op: "-", X: p.unary()}
	}
	return p.primary()
}

func (p *parser) primary() Expr {
	t := p.tok
	if t.kind == tokLiteral || t.kind == tokIdent {
		p.node() // a literal, a path, or a call
	}
	switch t.kind {
	case tokLiteral:
		p.advance()
		return t.lit
	case tokLParen:
		p.advance()
		x := p.expr()
		p.expect(tokRParen)
		return x
	case tokIdent:
		lower := strings.ToLower(t.text)
		switch lower {
		case "true", "false":
			p.advance()
			return &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeBool, Bool: lower == "true"}
		case "null":
			p.advance()
			return &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeNull}
		}
		if p.callFollows() {
			if lower == "any" || lower == "all" {
				failf(t.end, "%s must follow a collection path", lower)
			}
			return p.call()
		}
		return p.path()
	}
	p.unexpected("expected expression")
	return nil
}

// callFollows reports whether '(' follows the identifier token without space.
func (p *parser) callFollows() bool {
	return p.tok.end < len(p.lex.src) && p.lex.src[p.tok.end] == '('
}

func (p *parser) call() Expr {
	c := &Call{exprBase: exprBase{pos: p.tok.pos}, Name: strings.ToLower(p.tok.text)}
	p.advance()
	p.expect(tokLParen)
	if p.tok.kind == tokRParen {
		p.advance()
		return c
	}
	p.enter()
	defer p.leave()
	p.list(tokComma, func() { c.Args = append(c.Args, p.expr()) })
	p.expect(tokRParen)
	return c
}

// path parses a member path a/b/c, possibly ending in /any(...) or /all(...).
func (p *parser) path() Expr {
	path := &Path{exprBase: exprBase{pos: p.tok.pos}}
	path.Segments = append(path.Segments, Segment{Name: p.tok.text, Pos: p.tok.pos})
	p.advance()
	for p.tok.kind == tokSlash && !p.tok.space {
		p.advance()
		if p.tok.kind != tokIdent || p.tok.space {
			p.unexpected("expected name after '/'")
		}
		lower := strings.ToLower(p.tok.text)
		if (lower == "any" || lower == "all") && p.callFollows() {
			return p.lambda(path, lower == "all")
		}
		path.Segments = append(path.Segments, Segment{Name: p.tok.text, Pos: p.tok.pos})
		p.advance()
		if lower == "$count" && p.tok.kind == tokLParen && !p.tok.space {
			path.CountFilter = p.countFilter()
			return path
		}
	}
	return path
}

// countFilter parses the $filter of /$count($filter=...) in an expression.
func (p *parser) countFilter() Expr {
	p.enter()
	defer p.leave()
	p.advance()
	if !p.isWord("$filter") {
		p.unexpected("expected $filter")
	}
	p.advance()
	p.expect(tokEquals)
	e := p.expr()
	p.expect(tokRParen)
	return e
}

func (p *parser) lambda(src *Path, all bool) Expr {
	if p.lambdas == p.budget.MaxLambdaDepth {
		failf(p.tok.pos, "any and all nested more than %d deep", p.budget.MaxLambdaDepth)
	}
	p.node()
	l := &Lambda{exprBase: exprBase{pos: p.tok.pos}, Source: src, All: all}
	p.advance()
	p.expect(tokLParen)
	if p.tok.kind == tokRParen {
		if all {
			failf(p.tok.pos, "all requires a lambda expression")
		}
		p.advance()
		return l
	}
	if p.tok.kind != tokIdent || strings.HasPrefix(p.tok.text, "$") {
		p.unexpected("expected lambda variable")
	}
	l.Var = p.tok.text
	p.advance()
	p.expect(tokColon)
	p.enter()
	p.lambdas++
	l.Body = p.expr()
	p.lambdas--
	p.leave()
	p.expect(tokRParen)
	return l
}

// inList parses the right operand of in: a list of literals, or one expression.
func (p *parser) inList(x Expr, pos int) Expr {
	in := &In{exprBase: exprBase{pos: pos}, X: x}
	if p.tok.kind != tokLParen {
		p.unexpected("expected '(' after in")
	}
	p.advance()
	if p.tok.kind == tokRParen {
		p.advance()
		return in
	}
	p.enter()
	defer p.leave()
	in.List = append(in.List, p.expr())
	for p.tok.kind == tokComma {
		if _, ok := in.List[0].(*Literal); !ok {
			failf(p.tok.pos, "a list may contain only literals")
		}
		p.advance()
		e := p.expr()
		if _, ok := e.(*Literal); !ok {
			failf(e.Pos(), "a list may contain only literals")
		}
		in.List = append(in.List, e)
	}
	p.expect(tokRParen)
	return in
}

// list parses item {sep item}.
func (p *parser) list(sep tokKind, item func()) {
	for {
		item()
		if p.tok.kind != sep {
			return
		}
		p.advance()
	}
}

// orderBy parses key [asc|desc] {, key [asc|desc]}.
func (p *parser) orderBy() (items []OrderItem) {
	p.list(tokComma, func() {
		if len(items) == p.budget.MaxOrderByKeys {
			failf(p.tok.pos, "$orderby has more than %d keys", p.budget.MaxOrderByKeys)
		}
		it := OrderItem{Expr: p.expr()}
		if (p.isWord("asc") || p.isWord("desc")) && p.tok.space {
			it.Desc = p.isWord("desc")
			p.advance()
		}
		items = append(items, it)
	})
	return items
}

// selectList parses name {, name} or *.
func (p *parser) selectList(o *options) {
	p.list(tokComma, func() {
		switch {
		case p.tok.kind == tokStar:
			o.selectStar = true
			p.advance()
		case p.tok.kind == tokIdent && !strings.HasPrefix(p.tok.text, "$"):
			o.selects = append(o.selects, Segment{Name: p.tok.text, Pos: p.tok.pos})
			p.advance()
			if p.tok.kind == tokSlash || p.tok.kind == tokLParen {
				failf(p.tok.pos, "only property names can be selected")
			}
		default:
			p.unexpected("expected property name")
		}
	})
}

// expandList parses item {, item} where item is nav [( options )].
func (p *parser) expandList() (items []*expandItem) {
	p.enter()
	defer p.leave()
	p.list(tokComma, func() {
		if p.tok.kind != tokIdent || strings.HasPrefix(p.tok.text, "$") {
			p.unexpected("expected navigation property")
		}
		it := &expandItem{nav: Segment{Name: p.tok.text, Pos: p.tok.pos}, opts: &options{}}
		p.advance()
		if p.tok.kind == tokSlash && !p.tok.space {
			slash := p.tok.pos
			p.advance()
			if p.tok.kind != tokIdent || p.tok.text != "$count" || p.tok.space {
				failf(slash, "only navigation property names, or one followed by /$count, can be expanded")
			}
			it.count = true
			p.advance()
		}
		if p.tok.kind == tokLParen && !p.tok.space {
			p.advance()
			p.nestedOptions(it.opts)
			p.expect(tokRParen)
		}
		items = append(items, it)
	})
	return items
}

// nestedOptions parses name=value {; name=value} inside $expand(...), where the
// leading $ is optional.
func (p *parser) nestedOptions(o *options) {
	o.present = map[string]int{}
	p.list(tokSemi, func() {
		if p.tok.kind != tokIdent {
			p.unexpected("expected query option")
		}
		name := "$" + strings.TrimPrefix(strings.ToLower(p.tok.text), "$")
		namePos := p.tok.pos
		p.advance()
		if p.tok.kind != tokEquals || p.tok.space {
			p.unexpected("expected '='")
		}
		p.advance()
		if _, dup := o.present[name]; dup {
			failf(namePos, "duplicate option %s", name)
		}
		o.present[name] = p.tok.pos
		if !p.option(o, name) {
			failf(namePos, "query option %s is not supported in $expand", name)
		}
	})
}

// count parses a non-negative integer ($top, $skip).
func (p *parser) count() int64 {
	t := p.tok
	if t.kind == tokLiteral && (t.lit.Kind != TypeInt || t.lit.Int < 0 || p.lex.src[t.pos] == '+') {
		failf(t.pos, "expected non-negative integer")
	}
	if t.kind != tokLiteral {
		p.unexpected("expected non-negative integer")
	}
	p.advance()
	return t.lit.Int
}

// boolean parses true or false ($count).
func (p *parser) boolean() bool {
	if !p.isWord("true") && !p.isWord("false") {
		p.unexpected("expected true or false")
	}
	v := p.isWord("true")
	p.advance()
	return v
}

// option parses the value of the system query option name into o; it reports
// false for an option it does not know.
func (p *parser) option(o *options, name string) bool {
	switch name {
	case "$filter":
		o.filter = p.expr()
	case "$orderby":
		o.orderBy = p.orderBy()
	case "$select":
		p.selectList(o)
	case "$expand":
		o.expand = p.expandList()
	case "$top":
		o.top = p.count()
	case "$skip":
		o.skip = p.count()
	case "$count":
		o.count = p.boolean()
	default:
		return false
	}
	return true
}
