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
					k = fold(key)
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

// fold maps keys that encoding/json would match to the same struct field to
// the same string: each rune becomes the smallest rune of its case-folding
// orbit, as encoding/json folds names (so the Kelvin sign folds with K).
func fold(s string) string {
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
