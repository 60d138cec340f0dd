// Package jsonkeys refuses, in every JSON a client sends, what encoding/json
// accepts without a word: a repeated object key (different parsers read it
// differently), nesting past MaxDepth (each level costs memory), and a \u escape
// of a surrogate not half of a pair ("\ud800" names no character).
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest in JSON a client sends
// (bodies, variables, WebSocket messages, OData batches, dataset files). The
// deepest any needs is four (an OData batch); 64 leaves room and bounds what a
// reader builds before it refuses a text to a few kilobytes.
const MaxDepth = 64

// Error reports a repeated key; Offset is just after it.
type Error struct {
	Key    string
	Offset int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("duplicate key %q at byte %d", e.Key, e.Offset)
}

// DepthError reports nesting past MaxDepth; Offset is the bracket that opens it.
type DepthError struct {
	Offset int64
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("arrays and objects nested deeper than %d levels at byte %d", MaxDepth, e.Offset)
}

// SurrogateError reports a \u escape of a surrogate that is not half of a pair:
// Escape is its six bytes as written, Offset that of its backslash.
type SurrogateError struct {
	Escape string
	Offset int64
}

func (e *SurrogateError) Error() string {
	return fmt.Sprintf("unpaired surrogate escape %s at byte %d: it names no character", e.Escape, e.Offset)
}

// Refused reports whether err is one of this package's refusals rather than a
// syntax error encoding/json would report too.
func Refused(err error) bool {
	var dup *Error
	var deep *DepthError
	var lone *SurrogateError
	return errors.As(err, &dup) || errors.As(err, &deep) || errors.As(err, &lone)
}

// Check reports the first refusal in the JSON text data: nesting past MaxDepth,
// found before anything is built, then the first repeated key or unpaired
// surrogate escape. In the outermost object keys differing only in letter case
// repeat each other (encoding/json matches them to one struct field); deeper
// objects are read into maps, where case tells keys apart. A syntax error is
// encoding/json's; what follows the first value is not read. The work is linear
// in len(data), and what it allocates is bounded by MaxDepth.
func Check(data []byte) error { return check(data, true) }

// Unmarshal is Check(data) and json.Unmarshal(data, v) together; it skips
// Check's json.Valid, since json.Unmarshal validates the whole text first.
func Unmarshal(data []byte, v any) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return checkValid(data, true)
}

// CheckExact is Check with letter case telling keys apart in every object, the
// outermost too: for JSON read into maps alone (a JWT's header and claims).
func CheckExact(data []byte) error { return check(data, false) }

// check is Check, with checkValid's fold.
func check(data []byte, fold bool) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	if json.Valid(data) {
		return checkValid(data, fold)
	}
	return checkTokens(data, true, fold) // words the syntax error, or checks the value before trailing data
}

// CheckDepth reports a *DepthError when data's first value nests past MaxDepth
// before any syntax error, otherwise nil, leaving syntax to the caller.
func CheckDepth(data []byte) error {
	off := deepBracket(data)
	if off < 0 {
		return nil
	}
	// The byte scan checks no syntax: the token reader confirms the text is well
	// formed up to that bracket, and the first value has not ended.
	if deep, ok := errors.AsType[*DepthError](checkTokens(data[:off+1], false, false)); ok {
		return deep
	}
	return nil
}

// deepBracket returns the offset of the first '{' or '[' that opens level
// MaxDepth+1, or -1, counting brackets outside strings and checking nothing else.
func deepBracket(data []byte) int {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			if i = StringEnd(data, i) - 1; i < 0 {
				return -1 // the text ends inside a string
			}
		case '{', '[':
			if depth++; depth > MaxDepth {
				return i
			}
		case '}', ']':
			depth--
		}
	}
	return -1
}

// manyKeys is how many keys an object has before they go into a map.
const manyKeys = 16

// checkValid is Check for data json.Valid accepts. There a string is a key
// exactly when an object is innermost and a colon follows, so every string is
// skipped with a byte search (and one for a backslash, for surrogates). fold
// makes the outermost object's keys repeat each other in any letter case.
func checkValid(data []byte, fold bool) error {
	stack := make([]openValue, 0, 8)
	keys := make([][]byte, 0, 16) // the keys of the open objects, the innermost's last
	for i := 0; i < len(data); {
		switch data[i] {
		case '{', '[':
			if len(stack) == MaxDepth {
				return &DepthError{Offset: int64(i)}
			}
			stack = append(stack, openValue{isObj: data[i] == '{', first: len(keys)})
			i++
		case '}', ']':
			keys = keys[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil
			}
			i++
		case '"':
			end := StringEnd(data, i)
			escaped := false
			if b := bytes.IndexByte(data[i+1:end-1], '\\'); b >= 0 {
				escaped = true
				from := i + 1 + b
				if lone := LoneSurrogate(data[from : end-1]); lone >= 0 {
					at := from + lone
					return &SurrogateError{Escape: string(data[at : at+6]), Offset: int64(at)}
				}
			}
			top := len(stack) - 1
			if top < 0 || !stack[top].isObj || !followedByColon(data, end) {
				i = end
				continue
			}
			key := data[i+1 : end-1]
			if escaped || !utf8.Valid(key) {
				// encoding/json decodes escapes, and turns each invalid byte into U+FFFD.
				var s string
				_ = json.Unmarshal(data[i:end], &s) // valid, so it decodes
				key = []byte(s)
			}
			o := &stack[top]
			if dup := o.add(key, keys[o.first:], fold && top == 0); dup {
				return &Error{Key: string(key), Offset: int64(end)}
			}
			keys = append(keys, key)
			i = end
		default:
			i++ // a number, a literal, a comma, a colon or a space
		}
	}
	return nil
}

// LoneSurrogate returns the index in s, a JSON string's text between its quotes
// (or a tail of it starting outside any escape), of the first \u escape of a
// surrogate not half of a pair (a high one followed at once by a low one), or -1.
func LoneSurrogate(s []byte) int {
	for i := 0; ; {
		b := bytes.IndexByte(s[i:], '\\')
		if b < 0 {
			return -1
		}
		i += b
		r, ok := uEscape(s, i)
		switch {
		case !ok:
			i = min(i+2, len(s)) // another escape, or a malformed one: not this function's to judge
		case r < 0xd800 || r > 0xdfff:
			i += 6
		case r >= 0xdc00:
			return i // a low surrogate with no high one before it
		default:
			if low, ok := uEscape(s, i+6); ok && 0xdc00 <= low && low <= 0xdfff {
				i += 12
				continue
			}
			return i // a high surrogate with no low one after it
		}
	}
}

// uEscape decodes the \uXXXX escape at s[i:], if there is one.
func uEscape(s []byte, i int) (rune, bool) {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return 0, false
	}
	r, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16)
	return rune(r), err == nil
}

// openValue is an object or array that checkValid or checkTokens is inside.
type openValue struct {
	isObj   bool
	wantKey bool                // checkTokens': a key or the end comes next
	first   int                 // index in the keys of the open objects of the object's first key
	set     map[string]struct{} // the keys, once there are more than manyKeys
}

// add reports whether key repeats an earlier key (in any letter case with fold),
// and keeps it in the object's set, if any.
func (o *openValue) add(key []byte, earlier [][]byte, fold bool) (dup bool) {
	if o.set == nil && len(earlier) < manyKeys {
		return slices.ContainsFunc(earlier, func(k []byte) bool {
			return fold && bytes.EqualFold(k, key) || !fold && bytes.Equal(k, key)
		})
	}
	name := func(k []byte) string {
		if fold {
			return foldCase(string(k))
		}
		return string(k)
	}
	if o.set == nil {
		o.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range earlier {
			o.set[name(k)] = struct{}{}
		}
	}
	k := name(key)
	if _, dup := o.set[k]; dup {
		return true
	}
	o.set[k] = struct{}{}
	return false
}

// StringEnd returns the index just after the closing quote of the string that
// starts at data[i], or -1 when the text ends first.
func StringEnd(data []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		escapes := 0
		for data[q-1-escapes] == '\\' {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// followedByColon reports whether the first byte from i on that is not JSON
// white space is a colon.
func followedByColon(data []byte, i int) bool {
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

// checkTokens is Check by json.Decoder's tokens, for data that is not one valid
// JSON text: encoding/json's syntax error, a nesting past MaxDepth before it, or
// a check of the value before trailing data. keys false ignores repeated keys;
// fold is checkValid's.
func checkTokens(data []byte, keys, fold bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are not looked at; this keeps them from being parsed
	stack := make([]openValue, 0, 8)
	var names [][]byte // the keys of the open objects, the innermost's last
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return io.ErrUnexpectedEOF // EOF before the value ended, or no value at all
		}
		if err != nil {
			return err
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].isObj && stack[top].wantKey {
			if key, ok := tok.(string); ok {
				stack[top].wantKey = false
				if !keys {
					continue
				}
				o, name := &stack[top], []byte(key)
				if o.add(name, names[o.first:], fold && top == 0) {
					return &Error{Key: key, Offset: dec.InputOffset()}
				}
				names = append(names, name)
				continue
			}
		}
		if top >= 0 && stack[top].isObj {
			stack[top].wantKey = true // after this value, a key or the end
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == MaxDepth {
				return &DepthError{Offset: dec.InputOffset() - 1} // just after the bracket
			}
			isObj := tok == json.Delim('{')
			stack = append(stack, openValue{isObj: isObj, wantKey: isObj, first: len(names)})
		case json.Delim('}'), json.Delim(']'):
			names = names[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			// The value is complete and valid: its strings are checked for surrogates.
			if !keys {
				return nil
			}
			return checkValid(data[:dec.InputOffset()], fold)
		}
	}
}

// foldCase maps keys encoding/json matches to one struct field to one string:
// each rune becomes the smallest of its case-folding orbit (the Kelvin sign is K).
func foldCase(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				r = next
				break
			}
			r = next
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
