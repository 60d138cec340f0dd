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

// token is one lexeme of an option value. space reports whitespace right
// before it, which OData requires around word operators.
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

// lexer scans an option value. Whitespace is SP or HTAB (after percent-
// decoding, %20 and + have become SP).
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

// next scans the token at l.off.
func (l *lexer) next() (token, *Error) {
	start := l.off
	for l.off < len(l.src) && isSpace(l.src[l.off]) {
		l.off++
	}
	t := token{pos: l.off, space: l.off > start}
	if l.off >= len(l.src) {
		t.kind, t.end = tokEOF, l.off
		return t, nil
	}
	c := l.src[l.off]
	if k := punct[c]; k != tokEOF {
		l.off++
		t.kind, t.end = k, l.off
		return t, nil
	}
	switch {
	case c == '\'':
		return l.string(t)
	case isDigit(c), (c == '-' || c == '+') && l.off+1 < len(l.src) && isDigit(l.src[l.off+1]):
		return l.number(t)
	case c == '-':
		l.off++
		t.kind, t.end = tokMinus, l.off
		return t, nil
	}
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	if c == '$' || isIdentStart(r) {
		l.off += size
		if c == '$' {
			r, _ = utf8.DecodeRuneInString(l.src[l.off:])
			if !isIdentStart(r) {
				return t, errorf(l.off, "expected identifier after '$'")
			}
		}
		for l.off < len(l.src) {
			r, size = utf8.DecodeRuneInString(l.src[l.off:])
			if !isIdentPart(r) {
				break
			}
			l.off += size
		}
		t.kind, t.end, t.text = tokIdent, l.off, l.src[t.pos:l.off]
		if l.off-t.pos > 128 {
			return t, errorf(t.pos, "identifier longer than 128 characters")
		}
		switch t.text {
		case "INF", "NaN":
			f := math.NaN()
			if t.text == "INF" {
				f = math.Inf(1)
			}
			t.kind, t.lit = tokLiteral, &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeDouble, Float: f}
		}
		return t, nil
	}
	if r == utf8.RuneError && size <= 1 {
		return t, errorf(l.off, "invalid UTF-8")
	}
	return t, errorf(l.off, "unexpected character "+strconv.QuoteRune(r))
}

// string scans 'text' where ” stands for one quote.
func (l *lexer) string(t token) (token, *Error) {
	var b strings.Builder
	i := l.off + 1
	for {
		j := strings.IndexByte(l.src[i:], '\'')
		if j < 0 {
			return t, errorf(t.pos, "unterminated string literal")
		}
		b.WriteString(l.src[i : i+j])
		i += j + 1
		if i < len(l.src) && l.src[i] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		break
	}
	l.off = i
	t.kind, t.end = tokLiteral, i
	t.lit = &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeString, Str: b.String()}
	return t, nil
}

func (l *lexer) digits() int {
	n := 0
	for l.off < len(l.src) && isDigit(l.src[l.off]) {
		l.off++
		n++
	}
	return n
}

// number scans an integer, decimal, double, date or date-time literal.
func (l *lexer) number(t token) (token, *Error) {
	s := l.src
	start := l.off
	signed := s[l.off] == '-' || s[l.off] == '+'
	if signed {
		l.off++
	}
	n := l.digits()
	if !signed && n >= 4 && l.off+1 < len(s) && s[l.off] == '-' && isDigit(s[l.off+1]) {
		return l.dateTime(t, start)
	}
	kind := TypeInt
	if l.off < len(s) && s[l.off] == '.' {
		l.off++
		if l.digits() == 0 {
			return t, errorf(l.off, "expected digit after '.'")
		}
		kind = TypeDecimal
	}
	if l.off < len(s) && (s[l.off] == 'e' || s[l.off] == 'E') {
		l.off++
		if l.off < len(s) && (s[l.off] == '+' || s[l.off] == '-') {
			l.off++
		}
		if l.digits() == 0 {
			return t, errorf(l.off, "expected digit in exponent")
		}
		kind = TypeDouble
	}
	if l.off < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[l.off:]); isIdentPart(r) || r == '.' {
			return t, errorf(l.off, "unexpected character "+strconv.QuoteRune(r)+" in number")
		}
	}
	text := s[start:l.off]
	lit := &Literal{exprBase: exprBase{pos: t.pos}, Kind: kind}
	switch kind {
	case TypeInt:
		v, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			lit.Int = v
			break
		}
		kind = TypeDouble
		fallthrough
	case TypeDecimal:
		if v, ok := parseDecimal(text); ok {
			lit.Kind, lit.Int = TypeDecimal, v
			break
		}
		// Too many fractional digits or too large for the fixed scale: the
		// value is carried as a double (see Decimal semantics in doc.go).
		kind = TypeDouble
		fallthrough
	case TypeDouble:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !math.IsInf(f, 0) {
			return t, errorf(t.pos, "invalid number")
		}
		lit.Kind, lit.Float = TypeDouble, f
	}
	t.kind, t.end, t.lit = tokLiteral, l.off, lit
	return t, nil
}

// dateTime scans date ["T" time ("Z" / sign hh:mm)] after the year digits.
// Errors point at the first character that breaks the grammar, as the ABNF
// test cases do.
func (l *lexer) dateTime(t token, start int) (token, *Error) {
	s := l.src
	year, _ := strconv.Atoi(s[start:l.off])
	if l.off-start > 4 && s[start] == '0' {
		return t, errorf(start, "invalid year")
	}
	l.off++ // '-'
	month, err := l.twoDigits("month", 1, 12)
	if err != nil {
		return t, err
	}
	if l.off >= len(s) || s[l.off] != '-' {
		return t, errorf(l.off, "expected '-' in date")
	}
	l.off++
	day, err := l.twoDigits("day", 1, 31)
	if err != nil {
		return t, err
	}
	if day > daysIn(month, year) {
		return t, errorf(l.off-2, "day out of range")
	}
	lit := &Literal{exprBase: exprBase{pos: t.pos}, Kind: TypeDate, Time: time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)}
	if l.off < len(s) && s[l.off] == 'T' {
		l.off++
		hour, err := l.twoDigits("hour", 0, 23)
		if err != nil {
			return t, err
		}
		if l.off >= len(s) || s[l.off] != ':' {
			return t, errorf(l.off, "expected ':' in time")
		}
		l.off++
		min, err := l.twoDigits("minute", 0, 59)
		if err != nil {
			return t, err
		}
		sec, nsec := 0, 0
		if l.off < len(s) && s[l.off] == ':' {
			l.off++
			if sec, err = l.twoDigits("second", 0, 60); err != nil {
				return t, err
			}
			if l.off < len(s) && s[l.off] == '.' {
				l.off++
				fs := l.off
				if n := l.digits(); n == 0 || n > 12 {
					return t, errorf(fs, "invalid fractional seconds")
				}
				frac := s[fs:l.off] + "000000000"
				nsec, _ = strconv.Atoi(frac[:9])
			}
		}
		loc := time.UTC
		switch {
		case l.off < len(s) && s[l.off] == 'Z':
			l.off++
		case l.off < len(s) && (s[l.off] == '+' || s[l.off] == '-'):
			sign := 1
			if s[l.off] == '-' {
				sign = -1
			}
			l.off++
			oh, err := l.twoDigits("offset hour", 0, 23)
			if err != nil {
				return t, err
			}
			if l.off >= len(s) || s[l.off] != ':' {
				return t, errorf(l.off, "expected ':' in offset")
			}
			l.off++
			om, err := l.twoDigits("offset minute", 0, 59)
			if err != nil {
				return t, err
			}
			loc = time.FixedZone("", sign*(oh*3600+om*60))
		default:
			return t, errorf(l.off, "expected 'Z' or offset in date-time")
		}
		lit.Kind = TypeDateTimeOffset
		lit.Time = time.Date(year, time.Month(month), day, hour, min, sec, nsec, loc)
	}
	if l.off < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[l.off:]); isIdentPart(r) || r == '.' || r == ':' {
			return t, errorf(l.off, "unexpected character "+strconv.QuoteRune(r)+" after date")
		}
	}
	t.kind, t.end, t.lit = tokLiteral, l.off, lit
	return t, nil
}

// twoDigits reads exactly two digits forming a value in [lo, hi]. The error
// position is the first digit that cannot start or continue such a value.
func (l *lexer) twoDigits(what string, lo, hi int) (int, *Error) {
	s := l.src
	if l.off >= len(s) || !isDigit(s[l.off]) {
		return 0, errorf(l.off, "expected "+what)
	}
	if int(s[l.off]-'0') > hi/10 {
		return 0, errorf(l.off, what+" out of range")
	}
	if l.off+1 >= len(s) || !isDigit(s[l.off+1]) {
		return 0, errorf(l.off+1, "expected two-digit "+what)
	}
	v := int(s[l.off]-'0')*10 + int(s[l.off+1]-'0')
	if v < lo || v > hi {
		return 0, errorf(l.off+1, what+" out of range")
	}
	l.off += 2
	return v, nil
}

func daysIn(month, year int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
