// Package jsonscan decodes a JSON document that is one object of lists of flat
// records, the dataset file's shape, without reflection: the caller names each
// object's keys and reads each value with the Scanner's token readers.
//
// It accepts exactly what encoding/json accepts decoding into structs with
// unknown fields disallowed, with the same values (FuzzDecode holds it to that),
// and refuses three things more: a key repeated in one object in any letter
// case, an unpaired surrogate escape in a string value, and nesting past
// jsonkeys.MaxDepth. Every error is one line that says where, as in
// "users[3].email must be a string, not number (byte 812)"; Describe words
// encoding/json's errors the same way.
package jsonscan

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"quartet/internal/jsonkeys"
)

// Loc says where a value sits, turned into text only for an error:
// "users[3].email", "users", or for the zero Loc the document's top object.
type Loc struct {
	list  string // "" for the top object itself
	i     int    // -1 for the list itself
	field string
}

// With is the place of field in the record at l.
func (l Loc) With(field string) Loc { l.field = field; return l }

// open is how many arrays and objects are open around the value at l.
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

// Scanner reads JSON values from a document: each method reads the value at the
// position and leaves the position just past it.
type Scanner struct {
	data    []byte
	pos     int
	name    string // the document, in messages about its top object
	segment int    // elements per segment of a list (segmentElems; tests make it tiny)
}

// New returns a Scanner at the start of data; messages call its top object name.
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

// End checks that only white space follows.
func (d *Scanner) End() error {
	if d.next(); d.pos < len(d.data) {
		return fmt.Errorf("unexpected data after the %s object (byte %d)", d.name, d.pos)
	}
	return nil
}

// next skips white space and returns the next byte, or 0 at the end.
func (d *Scanner) next() byte {
	for ; d.pos < len(d.data); d.pos++ {
		if c := d.data[d.pos]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func (d *Scanner) syntax(want string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("malformed JSON: unexpected end of input, expecting %s", want)
	}
	return fmt.Errorf("malformed JSON at byte %d: expecting %s, found %q", d.pos, want, d.data[d.pos])
}

// kindOf names the JSON kind of a value by its first byte; "" stands for a number.
var kindOf = [256]string{'{': "object", '[': "array", '"': "string", 't': "bool", 'f': "bool", 'n': "null"}

// literal consumes lit if it is next.
func (d *Scanner) literal(lit string) bool {
	if string(d.data[d.pos:min(d.pos+len(lit), len(d.data))]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (d *Scanner) null() bool { return d.next() == 'n' && d.literal("null") }

// Object reads the object at, calling field with the field (of at most 64) each
// key names, spelt as in fields, at its value, which field must read. A key naming
// none of fields is an error, as is a field named twice in any letter case (where
// encoding/json would drop one without a word). A null is no object and no error.
func (d *Scanner) Object(at Loc, fields []string, field func(name string) error) error {
	return d.object(at, fields, false, field)
}

// object is Object; with anyKey, a key naming none of fields passes "" to field.
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
		d.next()
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

// fieldIndex returns the index of the field key names, or -1: exactly, or else
// case-insensitively with Unicode folding ("ſ" is an "s"), as encoding/json does.
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

// openArray reads the start of an array and reports whether an element follows.
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

// elements calls elem for each element from pos on and leaves pos past the array.
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

// stringToken returns the string at pos, quotes included, and whether it is plain
// (no escapes, valid UTF-8), so its own value without encoding/json's help.
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

// plainText marks printable ASCII other than the quote and the backslash.
var plainText = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// key reads an object key: a plain one as it is in data, allocating nothing, any
// other decoded by encoding/json itself, so both agree on every odd case.
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

func unquote(tok []byte) (string, error) {
	var s string
	err := json.Unmarshal(tok, &s) // leaves s empty when it fails
	return s, err
}

// String reads a string into dst, a copy; escapes and invalid UTF-8 are decoded by
// encoding/json, but an unpaired surrogate escape is refused.
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

// valueTypeError reports a value of the wrong kind, unless it has a syntax error.
func (d *Scanner) valueTypeError(at Loc, want string) error {
	start := d.pos
	kind := cmp.Or(kindOf[d.next()], "number")
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

// Int64 reads an integer into dst, refusing a fraction, an exponent or an
// overflow, as encoding/json does.
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

// smallInt parses an integer of up to 18 digits, which cannot overflow; ok is
// false for anything else, left to strconv.
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
	switch {
	case d.literal("true"):
		*dst = true
	case d.literal("false"):
		*dst = false
	default:
		return d.valueTypeError(at, "a boolean")
	}
	return nil
}

// Unmarshal hands the raw value, null included, to dst's UnmarshalJSON.
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

// skip consumes one well-formed value, the value at, inside open arrays and
// objects; jsonkeys.MaxDepth, counted from the top, bounds the recursion.
func (d *Scanner) skip(at Loc, open int) error {
	switch c := d.next(); {
	case (c == '{' || c == '[') && open == jsonkeys.MaxDepth:
		return fmt.Errorf("%s: %w", d.where(at), &jsonkeys.DepthError{Offset: int64(d.pos)})
	case c == '{':
		return d.object(Loc{list: "value"}, nil, true, func(string) error { return d.skip(at, open+1) })
	case c == '[':
		if more, err := d.openArray(at); !more || err != nil {
			return err
		}
		return d.elements(func(int) error { return d.skip(at, open+1) })
	case c == '"':
		_, _, err := d.stringToken()
		return err
	case c == 't' || c == 'f' || c == 'n':
		if d.literal("true") || d.literal("false") || d.literal("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.numberToken()
		return err
	}
	return d.syntax("a value")
}

// Describe words an error of encoding/json as this package words its own.
func Describe(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		want := typeName(typ.Type.Kind().String())
		if typ.Field != "" {
			return fmt.Errorf("%s must be %s, not %s (byte %d)", typ.Field, want, typ.Value, typ.Offset)
		}
		return fmt.Errorf("expected %s, not %s (byte %d)", want, typ.Value, typ.Offset)
	case errors.Is(err, io.EOF):
		return errors.New("empty input: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
	}
	return err
}

func typeName(goKind string) string { // the JSON kind a Go kind is decoded from
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
