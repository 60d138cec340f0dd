// Package jsonkeys finds the repeated object keys that encoding/json accepts
// silently, keeping the last. A request body with two "query" keys, or with
// "name" and "Name", means different things to different parsers (RFC 8259
// section 4 leaves the meaning open), so the service refuses such bodies.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// Error reports a repeated key: Key is its text, Offset the byte offset just
// after it in the input.
type Error struct {
	Key    string
	Offset int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("duplicate key %q at byte %d", e.Key, e.Offset)
}

// Check reports the first key in the JSON text data that repeats an earlier
// key of the same object. In the outermost object, keys that differ only in
// letter case repeat each other too, because encoding/json matches them to the
// same struct field; deeper objects (a GraphQL request's variables, say) are
// read into maps, where case tells keys apart. A syntax error is returned as
// encoding/json reports it; data that is one valid value with unique keys
// gives nil; what follows that value is not read. The work is linear in
// len(data).
func Check(data []byte) error {
	if json.Valid(data) {
		return checkValid(data)
	}
	return checkTokens(data) // words the syntax error, or reads the one value before trailing data
}

// Unmarshal is json.Unmarshal(data, v) followed by Check(data) when it
// succeeds. json.Unmarshal validates the whole of data before decoding any of
// it, so the check need not validate it again: for a large body that second
// validation was as long as the check itself.
func Unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return checkValid(data)
}

// manyKeys is the number of keys an object has before its keys are looked up
// in a map rather than compared one by one.
const manyKeys = 16

// checkValid is Check for data that json.Valid accepts. In valid JSON a string
// is a key exactly when an object is the innermost open value and a colon
// follows it, so only the keys need reading, and every string is skipped with a
// byte search; json.Decoder's tokens cost several times more.
func checkValid(data []byte) error {
	stack := make([]openValue, 0, 8)
	keys := make([][]byte, 0, 16) // the keys of the open objects, the innermost's last
	for i := 0; i < len(data); {
		switch data[i] {
		case '{', '[':
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
			top := len(stack) - 1
			if top < 0 || !stack[top].isObj || !followedByColon(data, end) {
				i = end
				continue
			}
			key := data[i+1 : end-1]
			if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
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
// JSON text: it reports encoding/json's own syntax error, or checks the one
// value before trailing data.
func checkTokens(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are not looked at; this keeps them from being parsed
	// One frame per open object or array: the keys seen so far (nil for an
	// array) and whether the next token of an object is a key.
	type frame struct {
		keys    map[string]struct{}
		isObj   bool
		wantKey bool
	}
	var stack []frame
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
				k := key
				if top == 0 {
					k = foldCase(key)
				}
				if _, dup := stack[top].keys[k]; dup {
					return &Error{Key: key, Offset: dec.InputOffset()}
				}
				stack[top].keys[k] = struct{}{}
				stack[top].wantKey = false
				continue
			}
		}
		if top >= 0 && stack[top].isObj {
			stack[top].wantKey = true // after this value, a key or the end
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]struct{}{}, isObj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return nil // the one value is complete; what follows is the caller's
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
