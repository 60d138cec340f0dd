package odata

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokLiteral
	tokLParen
	tokRParen
	tokComma
	tokSlash
	tokColon
	tokSemi
	tokEquals
	tokStar
	tokMinus
)

var tokNames = [...]string{"end of input", "identifier", "literal", "'('", "')'", "','", "'/'", "':'", "';'", "'='", "'*'", "'-'"}

// token is one lexeme of an option value; space reports whitespace before it.
type token struct {
	kind  tokKind
	pos   int
	end   int
	space bool
	text  string   // identifier text
	lit   *Literal // for tokLiteral
}

func (t token) String() string {
	switch t.kind {
	case tokIdent:
		return "'" + t.text + "'"
	case tokLiteral:
		return "literal"
	}
	return tokNames[t.kind]
}

// lexer scans a percent-decoded option value, whose whitespace is SP or HTAB.
type lexer struct {
	src string
	off int
}

var punct = [256]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma, '/': tokSlash,
	':': tokColon, ';': tokSemi, '=': tokEquals, '*': tokStar}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// fail raises a syntax error at pos; the parser's entry points recover it.
func (l *lexer) fail(pos int, msg string) { panic(errorf(pos, msg)) }

func (l *lexer) skip(c byte) bool {
	if l.off < len(l.src) && l.src[l.off] == c {
		l.off++
		return true
	}
	return false
}

func (l *lexer) next() token {
	start := l.off
	for l.off < len(l.src) && isSpace(l.src[l.off]) {
		l.off++
	}
	t := token{pos: l.off, space: l.off > start}
	if l.off >= len(l.src) {
		t.end = l.off
		return t
	}
	c := l.src[l.off]
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	switch {
	case punct[c] != tokEOF:
		t.kind = punct[c]
		l.off++
	case c == '\'':
		t.kind, t.lit = tokLiteral, l.string(t.pos)
	case isDigit(c), (c == '-' || c == '+') && l.off+1 < len(l.src) && isDigit(l.src[l.off+1]):
		t.kind, t.lit = tokLiteral, l.number(t.pos)
	case c == '-':
		t.kind = tokMinus
		l.off++
	case c == '$' || isIdentStart(r):
		l.off += size
		if r, _ := utf8.DecodeRuneInString(l.src[l.off:]); c == '$' && !isIdentStart(r) {
			l.fail(l.off, "expected identifier after '$'")
		}
		for l.off < len(l.src) {
			r, size = utf8.DecodeRuneInString(l.src[l.off:])
			if !isIdentPart(r) {
				break
			}
			l.off += size
		}
		t.kind, t.text = tokIdent, l.src[t.pos:l.off]
		if len(t.text) > 128 {
			l.fail(t.pos, "identifier longer than 128 characters")
		}
		if t.text == "INF" || t.text == "NaN" {
			f, _ := strconv.ParseFloat(t.text, 64)
			t.kind, t.lit = tokLiteral, &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeDouble, Float: f}
		}
	case r == utf8.RuneError && size <= 1:
		l.fail(l.off, "invalid UTF-8")
	default:
		l.fail(l.off, "unexpected character "+strconv.QuoteRune(r))
	}
	t.end = l.off
	return t
}

// string scans a quoted literal, in which two quotes stand for one.
func (l *lexer) string(pos int) *Literal {
	var b strings.Builder
	l.off++
	for {
		j := strings.IndexByte(l.src[l.off:], '\'')
		if j < 0 {
			l.fail(pos, "unterminated string literal")
		}
		b.WriteString(l.src[l.off : l.off+j])
		l.off += j + 1
		if !l.skip('\'') {
			return &Literal{exprBase: exprBase{pos: pos}, Kind: TypeString, Str: b.String()}
		}
		b.WriteByte('\'')
	}
}

func (l *lexer) digits() int {
	start := l.off
	for l.off < len(l.src) && isDigit(l.src[l.off]) {
		l.off++
	}
	return l.off - start
}

// number scans an integer, decimal, double, date or date-time literal.
func (l *lexer) number(pos int) *Literal {
	s := l.src
	start := l.off
	signed := s[l.off] == '-' || s[l.off] == '+'
	if signed {
		l.off++
	}
	n := l.digits()
	if !signed && n >= 4 && l.off+1 < len(s) && s[l.off] == '-' && isDigit(s[l.off+1]) {
		return l.dateTime(pos, start)
	}
	kind := TypeInt
	if l.skip('.') {
		if l.digits() == 0 {
			l.fail(l.off, "expected digit after '.'")
		}
		kind = TypeDecimal
	}
	if l.skip('e') || l.skip('E') {
		if !l.skip('+') {
			l.skip('-')
		}
		if l.digits() == 0 {
			l.fail(l.off, "expected digit in exponent")
		}
		kind = TypeDouble
	}
	if l.off < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[l.off:]); isIdentPart(r) || r == '.' {
			l.fail(l.off, "unexpected character "+strconv.QuoteRune(r)+" in number")
		}
	}
	text := s[start:l.off]
	lit := &Literal{exprBase: exprBase{pos: pos}, Kind: kind}
	switch kind {
	case TypeInt:
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			lit.Int = v
			break
		}
		fallthrough
	case TypeDecimal:
		v, cut, ok := parseDecimal(text)
		if ok && !cut {
			lit.Kind, lit.Int = TypeDecimal, v
			break
		}
		// Too large, or digits past the scale: a double, which keeps the decimal cut
		// to the scale so that decimals compare with it exactly.
		lit.Int, lit.cut = v, ok
		fallthrough
	case TypeDouble:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !math.IsInf(f, 0) {
			l.fail(pos, "invalid number")
		}
		lit.Kind, lit.Float = TypeDouble, f
	}
	return lit
}

// dateTime scans date ["T" time ("Z" / sign hh:mm)] after the year digits;
// errors point at the first character that breaks the grammar.
func (l *lexer) dateTime(pos, start int) *Literal {
	s := l.src
	year, _ := strconv.Atoi(s[start:l.off])
	if l.off-start > 4 && s[start] == '0' {
		l.fail(start, "invalid year")
	}
	month := l.field('-', "date", "month", 1, 12)
	day := l.field('-', "date", "day", 1, 31)
	if day > daysIn(month, year) {
		l.fail(l.off-2, "day out of range")
	}
	lit := &Literal{exprBase: exprBase{pos: pos}, Kind: TypeDate, Time: time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)}
	if l.skip('T') {
		hour := l.field(0, "", "hour", 0, 23)
		min := l.field(':', "time", "minute", 0, 59)
		sec, nsec := 0, 0
		if l.skip(':') {
			sec = l.field(0, "", "second", 0, 60)
			if l.skip('.') {
				fs := l.off
				if n := l.digits(); n == 0 || n > 12 {
					l.fail(fs, "invalid fractional seconds")
				}
				nsec, _ = strconv.Atoi((s[fs:l.off] + "000000000")[:9])
			}
		}
		loc := time.UTC
		switch {
		case l.skip('Z'):
		case l.off < len(s) && (s[l.off] == '+' || s[l.off] == '-'):
			sign := 1
			if s[l.off] == '-' {
				sign = -1
			}
			l.off++
			oh := l.field(0, "", "offset hour", 0, 23)
			om := l.field(':', "offset", "offset minute", 0, 59)
			loc = time.FixedZone("", sign*(oh*3600+om*60))
		default:
			l.fail(l.off, "expected 'Z' or offset in date-time")
		}
		lit.Kind = TypeDateTimeOffset
		lit.Time = time.Date(year, time.Month(month), day, hour, min, sec, nsec, loc)
	}
	if l.off < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[l.off:]); isIdentPart(r) || r == '.' || r == ':' {
			l.fail(l.off, "unexpected character "+strconv.QuoteRune(r)+" after date")
		}
	}
	return lit
}

// field reads the separator sep (none when 0; in names what it separates),
// then exactly two digits forming a value in [lo, hi]. The error position is
// the first digit that cannot start or continue such a value.
func (l *lexer) field(sep byte, in, what string, lo, hi int) int {
	s := l.src
	if sep != 0 && !l.skip(sep) {
		l.fail(l.off, "expected '"+string(sep)+"' in "+in)
	}
	if l.off >= len(s) || !isDigit(s[l.off]) {
		l.fail(l.off, "expected "+what)
	}
	if int(s[l.off]-'0') > hi/10 {
		l.fail(l.off, what+" out of range")
	}
	if l.off+1 >= len(s) || !isDigit(s[l.off+1]) {
		l.fail(l.off+1, "expected two-digit "+what)
	}
	v := int(s[l.off]-'0')*10 + int(s[l.off+1]-'0')
	if v < lo || v > hi {
		l.fail(l.off+1, what+" out of range")
	}
	l.off += 2
	return v
}

func daysIn(month, year int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
