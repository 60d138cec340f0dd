package odata

import (
	"strconv"
	"strings"
)

// $search (OData 4.01 URL conventions, section 5.1.7): terms matched, without
// regard to letter case, as substrings of any string property of the entity
// (for products, name and category). A term is a word (a run of characters
// other than space, parentheses and '"') or a "quoted phrase" (\" and \\
// escape a quote and a backslash in it). Terms combine with NOT, AND and OR,
// tightest first, and parentheses; two terms side by side mean AND. The
// operators are upper case, as the ABNF spells them: "and" is a word.

// searchNode is a parsed $search: a searchTerm, searchNot or searchBinary.
type searchNode interface{ searchNode() }

type searchTerm struct{ text string } // lower case
type searchNot struct{ x searchNode }
type searchBinary struct {
	or   bool
	l, r searchNode
}

func (searchTerm) searchNode()   {}
func (searchNot) searchNode()    {}
func (searchBinary) searchNode() {}

// searchExpr tests one entity against a compiled $search.
type searchExpr func(x any) bool

// searchParser is a recursive-descent parser of a $search value, drawing on
// the query's budget as the expression parser does.
type searchParser struct {
	src    string
	off    int
	depth  int
	budget *budget
}

// parseSearch parses the decoded value of $search; it panics with an *Error.
func parseSearch(src string, b *budget) searchNode {
	p := &searchParser{src: src, budget: b}
	n := p.or()
	if p.skipSpace(); p.off < len(p.src) {
		p.fail("unexpected ')'")
	}
	return n
}

func (p *searchParser) fail(msg string) { panic(errorf(p.off, msg)) }

func (p *searchParser) skipSpace() {
	for p.off < len(p.src) && isSpace(p.src[p.off]) {
		p.off++
	}
}

// node counts one term or operator against the budget.
func (p *searchParser) node() {
	p.budget.nodes++
	if p.budget.nodes > p.budget.MaxNodes {
		p.fail("query has more than " + strconv.Itoa(p.budget.MaxNodes) + " expression nodes")
	}
}

// keyword reports whether the operator kw comes next, as a whole word.
func (p *searchParser) keyword(kw string) bool {
	p.skipSpace()
	rest := p.src[p.off:]
	if !strings.HasPrefix(rest, kw) {
		return false
	}
	return len(rest) == len(kw) || isSpace(rest[len(kw)]) || rest[len(kw)] == '(' || rest[len(kw)] == '"'
}

func (p *searchParser) or() searchNode {
	l := p.and()
	for p.keyword("OR") {
		p.node()
		p.off += len("OR")
		l = searchBinary{or: true, l: l, r: p.and()}
	}
	return l
}

func (p *searchParser) and() searchNode {
	l := p.not()
	for {
		switch {
		case p.keyword("AND"):
			p.off += len("AND")
		case p.keyword("OR"), p.off == len(p.src), p.src[p.off] == ')':
			return l
		}
		p.node()
		l = searchBinary{l: l, r: p.not()} // side by side: implicit AND
	}
}

func (p *searchParser) not() searchNode {
	if !p.keyword("NOT") {
		return p.primary()
	}
	p.node()
	p.off += len("NOT")
	p.enter()
	defer p.leave()
	return searchNot{p.not()}
}

func (p *searchParser) enter() {
	p.depth++
	if p.depth > p.budget.MaxDepth {
		p.fail("$search nested too deeply (more than " + strconv.Itoa(p.budget.MaxDepth) + " levels)")
	}
}

func (p *searchParser) leave() { p.depth-- }

// primary parses ( expr ), a phrase or a word.
func (p *searchParser) primary() searchNode {
	p.skipSpace()
	if p.off == len(p.src) {
		p.fail("expected a search term")
	}
	switch p.src[p.off] {
	case '(':
		p.enter()
		p.off++
		n := p.or()
		if p.skipSpace(); p.off == len(p.src) || p.src[p.off] != ')' {
			p.fail("expected ')'")
		}
		p.off++
		p.leave()
		return n
	case ')':
		p.fail("expected a search term")
	case '"':
		return p.phrase()
	}
	p.node()
	start := p.off
	for p.off < len(p.src) && !isSpace(p.src[p.off]) && !strings.ContainsRune(`()"`, rune(p.src[p.off])) {
		p.off++
	}
	return searchTerm{strings.ToLower(p.src[start:p.off])}
}

// phrase parses "..." with \" and \\ escapes.
func (p *searchParser) phrase() searchNode {
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
			return searchTerm{strings.ToLower(b.String())}
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

// compile returns the test of n over the string properties of t.
func compileSearch(n searchNode, t *EntityType) searchExpr {
	switch n := n.(type) {
	case searchNot:
		x := compileSearch(n.x, t)
		return func(e any) bool { return !x(e) }
	case searchBinary:
		l, r := compileSearch(n.l, t), compileSearch(n.r, t)
		if n.or {
			return func(e any) bool { return l(e) || r(e) }
		}
		return func(e any) bool { return l(e) && r(e) }
	}
	term := n.(searchTerm).text
	var props []*Property
	for _, p := range t.Properties {
		if p.Type == EdmString {
			props = append(props, p)
		}
	}
	return func(e any) bool {
		for _, p := range props {
			if containsFold(p.String(e), term) { // as contains(tolower(...)) does

				return true
			}
		}
		return false
	}
}
