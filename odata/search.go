package odata

import (
	"strconv"
	"strings"
)

// $search (OData 4.01 URL conventions, 5.1.7): words or "phrases" matched in any
// letter case in any string property, combined with NOT, AND (or side by side)
// and OR, tightest first, and parentheses.

// searchExpr tests one entity against a compiled $search.
type searchExpr func(x any) bool

// searchParser parses a $search value and compiles it as it goes.
type searchParser struct {
	src    string
	off    int
	depth  int
	budget *budget
	props  []*Property // the string properties a term is looked for in
}

// parseSearch compiles the decoded value of $search over the string
// properties of t; it panics with an *Error.
func parseSearch(src string, b *budget, t *EntityType) searchExpr {
	p := &searchParser{src: src, budget: b}
	for _, pr := range t.Properties {
		if pr.Type == EdmString {
			p.props = append(p.props, pr)
		}
	}
	x := p.or()
	if p.skipSpace(); p.off < len(p.src) {
		p.fail("unexpected ')'")
	}
	return x
}

func (p *searchParser) fail(msg string) { panic(errorf(p.off, msg)) }

func (p *searchParser) skipSpace() {
	for p.off < len(p.src) && isSpace(p.src[p.off]) {
		p.off++
	}
}

func (p *searchParser) node() { p.budget.node(p.off) }

// keyword reports whether the operator kw comes next, as a whole word.
func (p *searchParser) keyword(kw string) bool {
	p.skipSpace()
	after, ok := strings.CutPrefix(p.src[p.off:], kw)
	return ok && (after == "" || isSpace(after[0]) || after[0] == '(' || after[0] == '"')
}

func (p *searchParser) or() searchExpr {
	l := p.and()
	for p.keyword("OR") {
		p.node()
		p.off += len("OR")
		x, y := l, p.and()
		l = func(e any) bool { return x(e) || y(e) }
	}
	return l
}

func (p *searchParser) and() searchExpr {
	l := p.not()
	for {
		switch {
		case p.keyword("AND"):
			p.off += len("AND")
		case p.keyword("OR"), p.off == len(p.src), p.src[p.off] == ')':
			return l
		}
		p.node()
		x, y := l, p.not() // side by side: implicit AND
		l = func(e any) bool { return x(e) && y(e) }
	}
}

func (p *searchParser) not() searchExpr {
	if !p.keyword("NOT") {
		return p.primary()
	}
	p.node()
	p.off += len("NOT")
	p.enter()
	defer p.leave()
	x := p.not()
	return func(e any) bool { return !x(e) }
}

func (p *searchParser) enter() {
	p.depth++
	if p.depth > p.budget.MaxDepth {
		p.fail("$search nested too deeply (more than " + strconv.Itoa(p.budget.MaxDepth) + " levels)")
	}
}

func (p *searchParser) leave() { p.depth-- }

// primary parses ( expr ), a phrase or a word.
func (p *searchParser) primary() searchExpr {
	p.skipSpace()
	if p.off == len(p.src) || p.src[p.off] == ')' {
		p.fail("expected a search term")
	}
	switch p.src[p.off] {
	case '(':
		p.enter()
		p.off++
		x := p.or()
		if p.skipSpace(); p.off == len(p.src) || p.src[p.off] != ')' {
			p.fail("expected ')'")
		}
		p.off++
		p.leave()
		return x
	case '"':
		return p.phrase()
	}
	p.node()
	start := p.off
	for p.off < len(p.src) && !isSpace(p.src[p.off]) && !strings.ContainsRune(`()"`, rune(p.src[p.off])) {
		p.off++
	}
	return p.term(p.src[start:p.off])
}

// phrase parses "..." with \" and \\ escapes.
func (p *searchParser) phrase() searchExpr {
	p.node()
	p.off++ // the opening quote
	var b strings.Builder
	for p.off < len(p.src) {
		c := p.src[p.off]
		switch {
		case c == '"':
			p.off++
			if b.Len() == 0 {
				p.fail("empty search phrase")
			}
			return p.term(b.String())
		case c == '\\' && p.off+1 < len(p.src) && (p.src[p.off+1] == '"' || p.src[p.off+1] == '\\'):
			b.WriteByte(p.src[p.off+1])
			p.off += 2
		case c == '\\':
			p.fail(`only \" and \\ are escapes in a search phrase`)
		default:
			b.WriteByte(c)
			p.off++
		}
	}
	p.fail("unterminated search phrase")
	return nil
}

// term tests whether text is in any string property, as contains(tolower(...)) does.
func (p *searchParser) term(text string) searchExpr {
	term, props := strings.ToLower(text), p.props
	return func(e any) bool {
		for _, pr := range props {
			if containsFold(pr.String(e), term) {
				return true
			}
		}
		return false
	}
}
