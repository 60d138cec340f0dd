// Package jsonkeys checks a JSON text for what encoding/json accepts without a
// word and the service refuses, in every JSON a client sends:
//
//   - a repeated object key, where encoding/json keeps the last: a request body
//     with two "query" keys, or with "name" and "Name", means different things to
//     different parsers (RFC 8259 section 4 leaves the meaning open);
//   - arrays and objects nested deeper than MaxDepth: each level costs its reader
//     memory, and no request needs more than a few;
//   - a \u escape of a surrogate that is not half of a pair, such as "\ud800":
//     it names no character, and encoding/json stores U+FFFD in its place.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest in JSON a client sends:
// REST bodies, GraphQL request bodies and variables, WebSocket messages, OData
// batches, dataset files. The deepest any of them needs is four (an OData
// batch: the body, its requests, a request, its headers); a REST body is one
// flat object, GraphQL variables sit at the second level and the schema has no
// input objects. 64 leaves room for what may come, and bounds what a reader
// builds before it refuses a text to a few kilobytes.
const MaxDepth = 64

// Error reports a repeated key: Key is its text, Offset the byte offset just
// after it in the input.
type Error struct {
	Key    string
	Offset int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("duplicate key %q at byte %d", e.Key, e.Offset)
}

// DepthError reports arrays and objects nested deeper than MaxDepth: Offset is
// the byte offset of the bracket that opens the level past it.
type DepthError struct {
	Offset int64
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("arrays and objects nested deeper than %d levels at byte %d", MaxDepth, e.Offset)
}

// SurrogateError reports a \u escape of a surrogate (U+D800 to U+DFFF) that is
// not half of a pair, a high one followed at once by a low one: Escape is its
// six bytes as written, Offset the byte offset of its backslash.
type SurrogateError struct {
	Escape string
	Offset int64
}

func (e *SurrogateError) Error() string {
	return fmt.Sprintf("unpaired surrogate escape %s at byte %d: it names no character", e.Escape, e.Offset)
}

// Refused reports whether err is one of this package's refusals (*Error,
// *DepthError, *SurrogateError) rather than a syntax error encoding/json would
// report too.
func Refused(err error) bool {
	var dup *Error
	var deep *DepthError
	var lone *SurrogateError
	return errors.As(err, &dup) || errors.As(err, &deep) || errors.As(err, &lone)
}

// Check reports the first refusal in the JSON text data: nesting deeper than
// MaxDepth, found before anything is built, and then the first repeated key or
// unpaired surrogate escape. In the outermost object, keys that differ only in
// letter case repeat each other too, because encoding/json matches them to the
// same struct field; deeper objects (a GraphQL request's variables, say) are
// read into maps, where case tells keys apart. A syntax error is returned as
// encoding/json reports it; data that is one valid value with no refusal gives
// nil; what follows that value is not read. The work is linear in len(data), and
// what it allocates is bounded by MaxDepth, not by the text's own depth.
func Check(data []byte) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	if json.Valid(data) {
		return checkValid(data)
	}
	return checkTokens(data, true) // words the syntax error, or reads the one value before trailing data
}

// Unmarshal is Check(data) and json.Unmarshal(data, v) together: a text nested
// too deeply is refused before anything is decoded; any other text is decoded,
// and the rest of Check follows when that succeeds. json.Unmarshal validates the
// whole of data before decoding any of it, so the check need not validate it
// again: for a large body that second validation was as long as the check itself.
func Unmarshal(data []byte, v any) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return checkValid(data)
}

// CheckDepth reports a *DepthError when the JSON text data nests arrays and
// objects deeper than MaxDepth in its first value, before any syntax error;
// otherwise nil, leaving syntax to the caller's decoder. It is for JSON that is
// decoded without the rest of Check. However deep data goes, it reads no more
// than MaxDepth levels of it with anything that allocates.
func CheckDepth(data []byte) error {
	off := deepBracket(data)
	if off < 0 {
		return nil
	}
	// The byte scan does not check syntax: the token reader confirms that the text
	// is well formed up to that bracket, and that the first value has not ended.
	if deep, ok := errors.AsType[*DepthError](checkTokens(data[:off+1], false)); ok {
		return deep
	}
	return nil
}

// deepBracket returns the offset of the first '{' or '[' that opens level
// MaxDepth+1, or -1. It counts the brackets outside strings, a string ending at
// the next quote not escaped, without checking anything else, so in a text that
// is well formed up to that bracket it counts exactly. It allocates nothing.
func deepBracket(data []byte) int {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			q := i
			for {
				next := bytes.IndexByte(data[q+1:], '"')
				if next < 0 {
					return -1 // the text ends inside a string
				}
				q += 1 + next
				k := q - 1
				for data[k] == '\\' { // stops at the opening quote at the latest
					k--
				}
				if (q-1-k)%2 == 0 {
					break
				}
			}
			i = q
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

// manyKeys is the number of keys an object has before its keys are looked up
// in a map rather than compared one by one.
const manyKeys = 16

// checkValid is Check for data that json.Valid accepts. In valid JSON a string
// is a key exactly when an object is the innermost open value and a colon
// follows it, so only the keys need reading, and every string is skipped with a
// byte search (and a second one for a backslash, which a surrogate escape
// needs); json.Decoder's tokens cost several times more.
func checkValid(data []byte) error {
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
			end := stringEnd(data, i)
			escaped := false
			if b := bytes.IndexByte(data[i+1:end-1], '\\'); b >= 0 {
				escaped = true
				from := i + 1 + b // the first escape: LoneSurrogate starts at one
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
			if dup := o.add(key, keys[o.first:], top == 0); dup {
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

// LoneSurrogate returns the index in s of the first \u escape of a surrogate
// that is not half of a pair (a high surrogate's escape followed at once by a
// low one's), or -1. s is the text of a JSON string between its quotes, as
// written, or a tail of it that starts outside any escape. encoding/json decodes
// such an escape as U+FFFD; strconv and the GraphQL lexer refuse it.
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
			i = min(i+2, len(s)) // another escape, or one that is not well formed: not this function's to judge
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
	var r rune
	for _, c := range s[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// openValue is an object or array that checkValid is inside.
type openValue struct {
	isObj bool
	first int                 // index in checkValid's keys of the object's first key
	set   map[string]struct{} // the keys, once there are more than manyKeys
}

// add reports whether key repeats one of the object's earlier keys, in any
// letter case when fold is set, and keeps it in the object's set, if any.
func (o *openValue) add(key []byte, earlier [][]byte, fold bool) (dup bool) {
	if o.set == nil && len(earlier) < manyKeys {
		for _, k := range earlier {
			if fold && bytes.EqualFold(k, key) || !fold && bytes.Equal(k, key) {
				return true
			}
		}
		return false
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

// stringEnd returns the index just after the closing quote of the string that
// starts at data[i], in valid JSON.
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; {
		q := j + bytes.IndexByte(data[j:], '"')
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
// JSON text: it reports encoding/json's own syntax error, or a nesting past
// MaxDepth before it, or checks the one value before trailing data. keys false
// leaves repeated keys alone (CheckDepth). It stops at the first level past
// MaxDepth, so its frames are bounded.
func checkTokens(data []byte, keys bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are not looked at; this keeps them from being parsed
	// One frame per open object or array: the keys seen so far (nil for an array,
	// and until an object's first key) and whether the next token of an object is
	// a key.
	type frame struct {
		keys    map[string]struct{}
		isObj   bool
		wantKey bool
	}
	stack := make([]frame, 0, 8)
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
				k := key
				if top == 0 {
					k = foldCase(key)
				}
				if _, dup := stack[top].keys[k]; dup {
					return &Error{Key: key, Offset: dec.InputOffset()}
				}
				if stack[top].keys == nil {
					stack[top].keys = map[string]struct{}{}
				}
				stack[top].keys[k] = struct{}{}
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
			stack = append(stack, frame{isObj: isObj, wantKey: isObj})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			// The one value is complete; what follows is the caller's. Its strings
			// are looked at as a valid text's are (it is one), for surrogates.
			if !keys {
				return nil
			}
			return checkValid(data[:dec.InputOffset()])
		}
	}
}

// foldCase maps keys that encoding/json would match to the same struct field to
// the same string: each rune becomes the smallest rune of its case-folding
// orbit, as encoding/json folds names (so the Kelvin sign folds with K).
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
