// Package jsonscan decodes a JSON document that is one object of lists of flat
// records, the shape of the service's dataset file, without reflection: the caller
// says which keys each object has and reads each value into its field with the
// Scanner's token readers.
//
// It accepts exactly what encoding/json accepts decoding into structs with unknown
// fields disallowed, and gives the same values: keys match a field exactly or else
// case-insensitively with Unicode folding, null leaves a value as it is, strings with
// escapes or invalid UTF-8 are decoded by encoding/json itself, and Unmarshal hands
// the raw value to the field's own UnmarshalJSON. It refuses three things more:
//
//   - a key repeated in one object, in any letter case, where encoding/json would
//     keep the last value and drop the first without a word;
//   - a string value with an unpaired surrogate escape ("\ud800"), which names no
//     character and which encoding/json would read as U+FFFD;
//   - arrays and objects nested deeper than jsonkeys.MaxDepth, counted from the
//     document's top, as in a request body.
//
// FuzzDecode holds it to encoding/json. Every error is one line that says where:
// the value's place (Loc) and a byte offset into the document, as in
// "users[3].email must be a string, not number (byte 812)"; Describe words
// encoding/json's errors the same way.
package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"quartet/internal/jsonkeys"
)

// Loc says where a value sits, for error messages only, so it is turned into text only
// when there is an error: "users[3].email", "users", or for the zero Loc the
// document's top object, which its Scanner names.
type Loc struct {
	list  string // "" for the top object itself
	i     int    // -1 for the list itself
	field string
}

// With returns the place of field in the record at l.
func (l Loc) With(field string) Loc { l.field = field; return l }

// open is how many arrays and objects of the document are open around the value at l.
func (l Loc) open() int {
	switch {
	case l.list == "":
		return 0
	case l.i < 0:
		return 1 // the top object
	case l.field == "":
		return 2 // and the list
	}
	return 3 // and the record
}

// Scanner reads JSON values from a document, one after the other. Its methods
// read the value at the current position and leave the position just past it.
type Scanner struct {
	data    []byte
	pos     int
	name    string // the document, in messages about its top object
	segment int    // elements per segment of a list (segmentElems; tests make it tiny)
}

// New returns a Scanner at the start of data. name is what messages call the
// document's top object ("dataset").
func New(data []byte, name string) *Scanner {
	return &Scanner{data: data, name: name, segment: segmentElems}
}

// where names the place at in a message.
func (d *Scanner) where(at Loc) string {
	switch {
	case at.list == "":
		return d.name
	case at.i < 0:
		return at.list
	case at.field == "":
		return fmt.Sprintf("%s[%d]", at.list, at.i)
	}
	return fmt.Sprintf("%s[%d].%s", at.list, at.i, at.field)
}

// End checks that nothing but white space follows the value read last.
func (d *Scanner) End() error {
	if d.space(); d.pos < len(d.data) {
		return fmt.Errorf("unexpected data after the %s object (byte %d)", d.name, d.pos)
	}
	return nil
}

func (d *Scanner) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next returns the next byte after white space, or 0 at the end.
func (d *Scanner) next() byte {
	d.space()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *Scanner) syntax(want string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("malformed JSON: unexpected end of input, expecting %s", want)
	}
	return fmt.Errorf("malformed JSON at byte %d: expecting %s, found %q", d.pos, want, d.data[d.pos])
}

// kind names the JSON kind of the value at pos, for type errors.
func (d *Scanner) kind() string {
	switch d.next() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// null consumes a null literal if one is next.
func (d *Scanner) null() bool {
	if d.next() == 'n' && strings.HasPrefix(string(d.data[d.pos:min(d.pos+4, len(d.data))]), "null") {
		d.pos += 4
		return true
	}
	return false
}

// Object reads an object, the value at, whose keys name fields (at most 64), calling
// field with the field a key names (spelt as in fields), the position at its value;
// field must read that value. A key that names none of fields is an error, as is a field named
// twice in any letter case: encoding/json would let the last one win, and a document
// that says two things of one record, or holds two lists of one kind, would lose one
// of them without a word. A null is no object and no error, as for encoding/json.
func (d *Scanner) Object(at Loc, fields []string, field func(name string) error) error {
	return d.object(at, fields, false, field)
}

// object is Object; with anyKey, every key is passed to field, with name "" where
// it names none of fields.
func (d *Scanner) object(at Loc, fields []string, anyKey bool, field func(name string) error) error {
	if d.null() {
		return nil
	}
	if d.next() != '{' {
		return d.valueTypeError(at, "an object")
	}
	d.pos++
	if d.next() == '}' {
		d.pos++
		return nil
	}
	var seen uint64 // the fields named so far, a bit each
	for {
		if d.next() != '"' {
			return d.syntax("a string key")
		}
		start := d.pos
		key, err := d.key()
		if err != nil {
			return err
		}
		name := ""
		if i := fieldIndex(key, fields); i >= 0 {
			if seen&(1<<i) != 0 {
				return fmt.Errorf("%s: repeated key %q (byte %d)", d.where(at), key, start)
			}
			seen |= 1 << i
			name = fields[i]
		}
		if d.next() != ':' {
			return d.syntax("':'")
		}
		d.pos++
		d.space()
		if name == "" && !anyKey {
			return fmt.Errorf("json: unknown field %q (byte %d)", key, d.pos)
		}
		if err := field(name); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.syntax("',' or '}'")
		}
	}
}

// fieldIndex returns the index of the field of fields that key names, or -1 for none.
// Keys match as encoding/json matches them: exactly, or else case-insensitively with
// Unicode folding ("ſ" is an "s"). The exact pass is the common case and compares
// bytes only.
func fieldIndex(key []byte, fields []string) int {
	for i, f := range fields {
		if string(key) == f {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(string(key), f) {
			return i
		}
	}
	return -1
}

// array reads an array, calling elem for each element with pos at it.
func (d *Scanner) array(at Loc, elem func(i int) error) error {
	if more, err := d.openArray(at); !more || err != nil {
		return err
	}
	return d.elements(elem)
}

// openArray reads the start of an array, and reports whether an element follows (pos
// is then at it) or the array was empty.
func (d *Scanner) openArray(at Loc) (more bool, err error) {
	if d.next() != '[' {
		return false, d.valueTypeError(at, "an array")
	}
	d.pos++
	if d.next() == ']' {
		d.pos++
		return false, nil
	}
	return true, nil
}

// elements reads an array's elements from pos, an element, calling elem for each with
// pos at it, numbered from 0, and leaves pos just past the array.
func (d *Scanner) elements(elem func(i int) error) error {
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.syntax("',' or ']'")
		}
	}
}

// stringToken returns the raw bytes of the string at pos, quotes included, and
// whether it is plain: without escapes and valid UTF-8, so that it is its own value
// (names in any script are; sending them to encoding/json cost a fifth of a large load).
func (d *Scanner) stringToken() ([]byte, bool, error) {
	data, start := d.data, d.pos
	pos := start + 1 // past the opening quote
	escaped, ascii := false, true
	for {
		for pos < len(data) && plainText[data[pos]] {
			pos++
		}
		if pos >= len(data) {
			d.pos = pos
			return nil, false, d.syntax("'\"'")
		}
		switch c := data[pos]; {
		case c == '"':
			d.pos = pos + 1
			tok := data[start:d.pos]
			return tok, !escaped && (ascii || utf8.Valid(tok[1:len(tok)-1])), nil
		case c == '\\':
			escaped = true
			pos++
			if pos >= len(data) {
				d.pos = pos
				return nil, false, d.syntax("an escape")
			}
			switch data[pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				pos++
			case 'u':
				for k := 1; k <= 4; k++ {
					if pos+k >= len(data) || !isHex(data[pos+k]) {
						d.pos = pos + k
						return nil, false, d.syntax("a hex digit")
					}
				}
				pos += 5
			default:
				d.pos = pos
				return nil, false, d.syntax("an escape")
			}
		case c < 0x20:
			d.pos = pos
			return nil, false, d.syntax("a character in a string")
		default: // part of a multi-byte character
			ascii = false
			pos++
		}
	}
}

// plainText marks the bytes that stand for themselves in a string: printable ASCII
// other than the quote and the backslash.
var plainText = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// key reads an object key. A plain key is returned as it is in data, so matching it
// allocates nothing. Escapes and invalid UTF-8 are decoded by encoding/json itself,
// so both agree on every odd case (replacement characters; an unpaired surrogate
// escape makes a key no field has).
func (d *Scanner) key() ([]byte, error) {
	tok, plain, err := d.stringToken()
	if err != nil {
		return nil, err
	}
	if plain {
		return tok[1 : len(tok)-1], nil
	}
	s, err := unquote(tok)
	return []byte(s), err
}

// unquote decodes a string token with escapes or invalid UTF-8.
func unquote(tok []byte) (string, error) {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return s, nil
}

// String reads a string into dst, a copy that does not refer to the document.
// Escapes and invalid UTF-8 are decoded by encoding/json itself (replacement
// characters), but an unpaired surrogate escape is refused.
func (d *Scanner) String(at Loc, dst *string) error {
	if d.null() {
		return nil
	}
	if d.next() != '"' {
		return d.valueTypeError(at, "a string")
	}
	start := d.pos
	tok, plain, err := d.stringToken()
	if err != nil {
		return err
	}
	if plain {
		*dst = string(tok[1 : len(tok)-1])
		return nil
	}
	if i := jsonkeys.LoneSurrogate(tok[1 : len(tok)-1]); i >= 0 {
		return fmt.Errorf("%s: unpaired surrogate escape %s names no character (byte %d)", d.where(at), tok[1+i:1+i+6], start+1+i)
	}
	s, err := unquote(tok)
	if err == nil {
		*dst = s
	}
	return err
}

// valueTypeError reports a value of the wrong kind, after checking that it is at
// least well-formed JSON (a syntax error is the better message).
func (d *Scanner) valueTypeError(at Loc, want string) error {
	start := d.pos
	kind := d.kind()
	if err := d.skip(at, at.open()); err != nil {
		return err
	}
	return fmt.Errorf("%s must be %s, not %s (byte %d)", d.where(at), want, kind, start)
}

// numberToken returns the number literal at pos, checked against the JSON grammar.
func (d *Scanner) numberToken() ([]byte, error) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, d.syntax("a digit")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, d.syntax("a digit")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.syntax("a digit")
		}
	}
	return d.data[start:d.pos], nil
}

// Int64 reads an integer into dst. A number with a fraction or an exponent, or
// past int64, is refused, as encoding/json refuses it.
func (d *Scanner) Int64(at Loc, dst *int64) error {
	if d.null() {
		return nil
	}
	if c := d.next(); c != '-' && (c < '0' || c > '9') {
		return d.valueTypeError(at, "an integer")
	}
	start := d.pos
	tok, err := d.numberToken()
	if err != nil {
		return err
	}
	n, ok := smallInt(tok)
	if !ok {
		if n, err = strconv.ParseInt(string(tok), 10, 64); err != nil {
			return fmt.Errorf("%s must be an integer, not %s (byte %d)", d.where(at), tok, start)
		}
	}
	*dst = n
	return nil
}

// smallInt parses the common integer literal, up to 18 digits with an optional sign,
// which cannot overflow; ok is false for anything else, left to strconv.
func smallInt(tok []byte) (n int64, ok bool) {
	digits := tok
	if len(tok) > 0 && tok[0] == '-' {
		digits = tok[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(tok) {
		n = -n
	}
	return n, true
}

// Bool reads true or false into dst.
func (d *Scanner) Bool(at Loc, dst *bool) error {
	if d.null() {
		return nil
	}
	rest := d.data[d.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*dst = true
		d.pos += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*dst = false
		d.pos += 5
	default:
		return d.valueTypeError(at, "a boolean")
	}
	return nil
}

// Unmarshal hands the raw value, whatever its kind, null included, to dst's own
// UnmarshalJSON, as encoding/json does.
func (d *Scanner) Unmarshal(at Loc, dst json.Unmarshaler) error {
	start := d.pos
	if err := d.skip(at, at.open()); err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(d.data[start:d.pos]); err != nil {
		return fmt.Errorf("%s: %v (byte %d)", d.where(at), err, start)
	}
	return nil
}

// skip consumes one well-formed value of any kind, the value at, inside open arrays
// and objects. The document has no nesting below its records, so a value is skipped
// only to report its kind or to hand it to an Unmarshaler; it may nest no deeper than
// a request body may (jsonkeys.MaxDepth, counted from the document's top), which
// bounds the recursion.
func (d *Scanner) skip(at Loc, open int) error {
	switch c := d.next(); {
	case (c == '{' || c == '[') && open == jsonkeys.MaxDepth:
		return fmt.Errorf("%s: %w", d.where(at), &jsonkeys.DepthError{Offset: int64(d.pos)})
	case c == '{':
		return d.object(Loc{list: "value"}, nil, true, func(string) error { return d.skip(at, open+1) })
	case c == '[':
		return d.array(Loc{list: "value"}, func(int) error { return d.skip(at, open+1) })
	case c == '"':
		_, _, err := d.stringToken()
		return err
	case c == 't' || c == 'f':
		for _, lit := range []string{"true", "false"} {
			if strings.HasPrefix(string(d.data[d.pos:min(d.pos+len(lit), len(d.data))]), lit) {
				d.pos += len(lit)
				return nil
			}
		}
	case c == 'n':
		if d.null() {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.numberToken()
		return err
	}
	return d.syntax("a value")
}

// Describe turns an error of encoding/json into one line that says where, worded as
// this package words its own.
func Describe(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("%s must be %s, not %s (byte %d)", typ.Field, typeName(typ.Type.Kind().String()), typ.Value, typ.Offset)
		}
		return fmt.Errorf("expected %s, not %s (byte %d)", typeName(typ.Type.Kind().String()), typ.Value, typ.Offset)
	case errors.Is(err, io.EOF):
		return errors.New("empty input: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
	}
	return err
}

// typeName names the JSON kind a Go kind is decoded from.
func typeName(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "an integer"
	case strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "a boolean"
	case goKind == "slice":
		return "an array"
	case goKind == "struct", goKind == "map":
		return "an object"
	}
	return "of another type"
}
