package graphql

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Position is a location in a source text. Line and Column start at 1;
// Column counts Unicode code points.
type Position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// String returns the position as line:column.
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// tokenKind is the lexical class of a token (spec section 2.1): a
// punctuator's own character, or one of the kinds below.
type tokenKind byte

const (
	tokEOF tokenKind = iota
	tokSpread
	tokName
	tokInt
	tokFloat
	tokString
	tokBlockString
)

const punctuators = "!$&():=@[]{|}"

// String returns the token kind's name, as syntax errors print it.
func (k tokenKind) String() string {
	if k > tokBlockString {
		return `"` + string(rune(k)) + `"`
	}
	return [...]string{"<EOF>", `"..."`, "Name", "Int", "Float", "String", "BlockString"}[k]
}

// token is one lexical token. Value holds the text of names and numbers and
// the decoded value of strings; it is empty for punctuators.
type token struct {
	Kind  tokenKind
	Value string
	Pos   Position
}

// String describes the token for a syntax error message.
func (t token) String() string {
	switch t.Kind {
	case tokName, tokInt, tokFloat:
		return t.Kind.String() + " \"" + t.Value + "\""
	case tokString, tokBlockString:
		return t.Kind.String() + " " + strconv.Quote(t.Value)
	}
	return t.Kind.String()
}

// SyntaxError is a lexing or parsing failure at a position of the source.
type SyntaxError struct {
	Pos Position
	Msg string
}

// Error returns the message with its line and column.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("Syntax Error: %s (line %d, column %d)", e.Msg, e.Pos.Line, e.Pos.Column)
}

// lexer turns a source text into tokens, tracking line and column as it goes.
type lexer struct {
	src       string
	off       int // byte offset of the next unread byte
	line      int
	lineStart int // byte offset where the current line starts
	colOff    int // a byte offset on the current line whose column is col
	col       int
	err       *SyntaxError

	tokens    int // significant tokens returned so far
	maxTokens int // 0: no limit
}

func newLexer(src string, maxTokens int) *lexer {
	return &lexer{src: src, line: 1, col: 1, maxTokens: maxTokens}
}

// pos converts a byte offset on the current line into a position whose
// column counts code points. Offsets mostly grow, so counting on from the
// previous answer keeps a long single-line document linear.
func (l *lexer) pos(off int) Position {
	if off < l.colOff {
		l.colOff, l.col = l.lineStart, 1
	}
	l.col += utf8.RuneCountInString(l.src[l.colOff:off])
	l.colOff = off
	return Position{Line: l.line, Column: l.col}
}

func (l *lexer) fail(off int, format string, args ...any) token {
	if l.err == nil {
		l.err = &SyntaxError{Pos: l.pos(off), Msg: fmt.Sprintf(format, args...)}
	}
	return token{Kind: tokEOF, Pos: l.pos(off)}
}

// lineBreak passes the line terminator at i (\n, \r or \r\n) and returns the
// offset after it.
func (l *lexer) lineBreak(i int) int {
	i++
	if l.src[i-1] == '\r' && i < len(l.src) && l.src[i] == '\n' {
		i++
	}
	l.line++
	l.lineStart = i
	l.colOff, l.col = i, 1
	return i
}

// next returns the next significant token. After an error (in l.err) it
// keeps returning EOF. Past maxTokens tokens it fails, as graphql-js does.
func (l *lexer) next() token {
	t := l.scan()
	if t.Kind == tokEOF || l.err != nil {
		return t
	}
	l.tokens++
	if l.tokens%4096 == 0 {
		// A long document keeps a CPU for milliseconds, and Go preempts a goroutine
		// only after 10: yielding now and then lets other requests in between.
		runtime.Gosched()
	}
	if l.maxTokens > 0 && l.tokens > l.maxTokens {
		l.err = &SyntaxError{Pos: t.Pos, Msg: fmt.Sprintf("Document contains more than %d tokens.", l.maxTokens)}
		return token{Kind: tokEOF, Pos: t.Pos}
	}
	return t
}

func (l *lexer) scan() token {
	if l.err != nil {
		return token{Kind: tokEOF, Pos: l.err.Pos}
	}
	src := l.src
	for l.off < len(src) {
		c := src[l.off]
		switch c {
		case ' ', '\t', ',':
			l.off++
			continue
		case '\n', '\r':
			l.off = l.lineBreak(l.off)
			continue
		case '#':
			for l.off < len(src) && src[l.off] != '\n' && src[l.off] != '\r' {
				l.off++
			}
			continue
		case 0xEF: // byte order mark U+FEFF
			if strings.HasPrefix(src[l.off:], "\uFEFF") {
				l.off += 3
				continue
			}
		}
		break
	}
	start := l.off
	if start >= len(src) {
		return token{Kind: tokEOF, Pos: l.pos(start)}
	}
	switch c := src[start]; {
	case strings.IndexByte(punctuators, c) >= 0:
		l.off++
		return token{Kind: tokenKind(c), Pos: l.pos(start)}
	case strings.HasPrefix(src[start:], "..."):
		l.off += 3
		return token{Kind: tokSpread, Pos: l.pos(start)}
	case c == '.':
		return l.fail(start, "Unexpected \".\"; did you mean \"...\"?")
	case c == '"':
		return l.string(start, strings.HasPrefix(src[start:], `"""`))
	case isNameStart(c):
		l.off++
		for l.off < len(src) && isNameContinue(src[l.off]) {
			l.off++
		}
		return token{Kind: tokName, Value: src[start:l.off], Pos: l.pos(start)}
	case c == '-' || isDigit(c):
		return l.number(start)
	}
	r, _ := utf8.DecodeRuneInString(src[start:])
	if r == utf8.RuneError {
		return l.fail(start, "Invalid UTF-8 byte 0x%02X", src[start])
	}
	return l.fail(start, "Unexpected character %s", describeRune(r))
}

func describeRune(r rune) string {
	if r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0) {
		return fmt.Sprintf("U+%04X", r)
	}
	return "\"" + string(r) + "\""
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameContinue(c byte) bool { return isNameStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number lexes IntValue and FloatValue (spec 2.9.1, 2.9.2), including the
// lookahead restrictions that forbid a digit, "." or a name start directly
// after a number.
func (l *lexer) number(start int) token {
	src := l.src
	i := start
	// digits skips the digits at i, of which there must be at least one.
	digits := func() bool {
		if i >= len(src) || !isDigit(src[i]) {
			return false
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		return true
	}
	if src[i] == '-' {
		i++
	}
	kind := tokInt
	ok := true
	if i < len(src) && src[i] == '0' {
		i++
		if i < len(src) && isDigit(src[i]) {
			return l.fail(i, "Invalid number, unexpected digit after 0: %s", l.describeAt(i))
		}
	} else {
		ok = digits()
	}
	if ok && i < len(src) && src[i] == '.' {
		kind = tokFloat
		i++
		ok = digits()
	}
	if ok && i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		kind = tokFloat
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		ok = digits()
	}
	if !ok || i < len(src) && (src[i] == '.' || isNameStart(src[i])) {
		return l.fail(i, "Invalid number, expected digit but got %s", l.describeAt(i))
	}
	l.off = i
	return token{Kind: kind, Value: src[start:i], Pos: l.pos(start)}
}

func (l *lexer) describeAt(off int) string {
	if off >= len(l.src) {
		return "<EOF>"
	}
	r, _ := utf8.DecodeRuneInString(l.src[off:])
	return describeRune(r)
}

// string lexes a StringValue, or when block a """block string""" (spec
// 2.9.4): the first with its escape sequences decoded, the second with its
// indentation removed.
func (l *lexer) string(start int, block bool) token {
	src := l.src
	quote, kind := `"`, tokString
	if block {
		quote, kind = `"""`, tokBlockString
	}
	i := start + len(quote)
	var b *strings.Builder // allocated only when an escape needs decoding
	chunk := i
	// Lines inside a block string move the lexer's line counter, but the
	// token's position is its start.
	pos := l.pos(start)
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"' && strings.HasPrefix(src[i:], quote):
			v := src[chunk:i]
			if b != nil {
				b.WriteString(v)
				v = b.String()
			}
			if block {
				v = blockStringValue(v)
			}
			l.off = i + len(quote)
			return token{Kind: kind, Value: v, Pos: pos}
		case c == '\\' && block && !strings.HasPrefix(src[i:], `\"""`):
			i++
		case c == '\\':
			if b == nil {
				b = new(strings.Builder)
			}
			b.WriteString(src[chunk:i])
			n, ok := 4, true
			if block {
				b.WriteString(`"""`)
			} else if n, ok = l.escape(i, b); !ok {
				return token{Kind: tokEOF}
			}
			i += n
			chunk = i
		case (c == '\n' || c == '\r') && !block:
			return l.fail(i, "Unterminated string.")
		case c == '\n' || c == '\r':
			i = l.lineBreak(i)
		default:
			size, bad, ok := l.stringChar(i)
			if !ok {
				return bad
			}
			i += size
		}
	}
	return l.fail(i, "Unterminated string.")
}

// escapedChars are the characters a one-letter escape stands for, and
// escapeLetters those letters, in the same order.
const escapedChars, escapeLetters = "\"\\/\b\f\n\r\t", `"\/bfnrt`

// escape decodes the escape sequence at src[i] (a backslash) into b and
// returns its length in bytes.
func (l *lexer) escape(i int, b *strings.Builder) (int, bool) {
	src := l.src
	switch {
	case i+1 >= len(src):
		l.fail(i, "Unterminated string.")
		return 0, false
	case src[i+1] == 'u':
		return l.unicodeEscape(i, b)
	}
	k := strings.IndexByte(escapeLetters, src[i+1])
	if k < 0 {
		l.fail(i, "Invalid character escape sequence: %q", src[i:i+2])
		return 0, false
	}
	b.WriteByte(escapedChars[k])
	return 2, true
}

// unicodeEscape decodes \uXXXX, \u{X...} and surrogate pairs written as two
// consecutive fixed-width escapes (spec 2.9.4, October 2021).
func (l *lexer) unicodeEscape(i int, b *strings.Builder) (int, bool) {
	src := l.src
	var r rune
	var ok bool
	end := i + 6 // of the escape, or of the text an error quotes
	if i+2 < len(src) && src[i+2] == '{' {
		j := i + 3
		for j < len(src) && src[j] != '}' && hexVal(src[j]) >= 0 && r <= 0x10FFFF {
			r = r<<4 | rune(hexVal(src[j]))
			j++
		}
		end = j + 1
		ok = j < len(src) && src[j] == '}' && j > i+3 && r <= 0x10FFFF && !utf16.IsSurrogate(r)
	} else if r, ok = hex4(src, i+2); ok && utf16.IsSurrogate(r) {
		// A surrogate is valid only as the first half of a pair.
		lo, okLo := hex4(src, i+8)
		r = utf16.DecodeRune(r, lo)
		ok = okLo && src[i+6:i+8] == `\u` && r != utf8.RuneError
		if ok {
			end = i + 12
		}
	}
	if !ok {
		l.fail(i, "Invalid Unicode escape sequence: %q", src[i:min(end, len(src))])
		return 0, false
	}
	b.WriteRune(r)
	return end - i, true
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 32)
	return rune(n), err == nil
}

// hexVal is the value of the hex digit c, or -1.
func hexVal(c byte) int {
	i := strings.IndexByte("0123456789abcdefABCDEF", c)
	return i - 6*(i/16) // A to F follow a to f
}

// stringChar checks the source character at i inside a string (a SourceCharacter,
// spec 2.1.1, and valid UTF-8) and returns its size; when it is not one, ok is false
// and bad is the error token to return.
func (l *lexer) stringChar(i int) (size int, bad token, ok bool) {
	c := l.src[i]
	switch {
	case c < 0x20 && c != '\t':
		return 0, l.fail(i, "Invalid character within String: %s", describeRune(rune(c))), false
	case c < utf8.RuneSelf:
		return 1, token{}, true
	}
	r, size := utf8.DecodeRuneInString(l.src[i:])
	if r == utf8.RuneError && size == 1 {
		return 0, l.fail(i, "Invalid UTF-8 byte 0x%02X within String", c), false
	}
	return size, token{}, true
}

var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// blockStringValue removes the common indentation and the leading and
// trailing blank lines of a raw block string.
func blockStringValue(raw string) string {
	lines := strings.Split(lineBreaks.Replace(raw), "\n")
	blank := func(s string) bool { return strings.TrimLeft(s, " \t") == "" }
	common := -1
	for _, line := range lines[1:] {
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		if indent < len(line) && (common < 0 || indent < common) {
			common = indent
		}
	}
	for i := 1; common > 0 && i < len(lines); i++ {
		lines[i] = lines[i][min(common, len(lines[i])):]
	}
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
