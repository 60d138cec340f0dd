package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in      string
		dupKey  string // "" when the input has no repeated key
		invalid bool
	}{
		{in: `{"name":"a","email":"b"}`},
		{in: `{"name":"a","name":"b"}`, dupKey: "name"},
		{in: `{"name":"a","Name":"b"}`, dupKey: "Name"},
		{in: `{"kelvin":1,"\u212aelvin":2}`, dupKey: "\u212aelvin"}, // K and the Kelvin sign fold together
		{in: `{"query":"{a}","variables":{"a":1,"A":2}}`},           // case tells keys apart below the top
		{in: `{"query":"{a}","variables":{"a":1,"a":2}}`, dupKey: "a"},
		{in: `{"a":{"b":1},"c":{"b":2}}`}, // the same key in two objects
		{in: `[{"a":1},{"a":2}]`},         // objects in an array are separate
		{in: `[{"a":1,"a":2}]`, dupKey: "a"},
		{in: `{"a":[{"x":1}],"b":{"x":{"x":1}}}`},
		{in: `{"a":"x","b":["a","a"],"c":"a"}`}, // string values that look like keys
		{in: `{"a":1`, invalid: true},
		{in: `{"a":1} {"a":2}`}, // Check reads one value; callers refuse trailing data
		{in: `"a"`},
		{in: ``, invalid: true},
	} {
		err := Check([]byte(tc.in))
		var dup *Error
		switch {
		case tc.dupKey != "":
			if !errors.As(err, &dup) || dup.Key != tc.dupKey {
				t.Errorf("Check(%s) = %v, want duplicate key %q", tc.in, err, tc.dupKey)
			}
		case tc.invalid:
			if err == nil || errors.As(err, &dup) {
				t.Errorf("Check(%s) = %v, want a syntax error", tc.in, err)
			}
		case err != nil:
			t.Errorf("Check(%s) = %v, want nil", tc.in, err)
		}
	}
}

func TestDuplicateOffset(t *testing.T) {
	in := `{"name":"a",  "name":"b"}`
	var dup *Error
	if err := Check([]byte(in)); !errors.As(err, &dup) || dup.Offset != int64(len(`{"name":"a",  "name"`)) {
		t.Fatalf("Check(%s) = %v, want the offset after the second key", in, err)
	}
}

// FuzzFold holds fold to encoding/json's notion of equal names: bytes.EqualFold.
func FuzzFold(f *testing.F) {
	for _, s := range [][2]string{{"name", "NAME"}, {"k", "\u212a"}, {"s", "\u017f"}, {"é", "É"}, {"a", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := fold(a) == fold(b), bytes.EqualFold([]byte(a), []byte(b)); got != want {
			t.Errorf("fold(%q) == fold(%q) is %v, bytes.EqualFold says %v", a, b, got, want)
		}
	})
}

// FuzzCheck: Check never panics, refuses exactly the texts encoding/json finds
// invalid (for one value), and when it passes an object, decoding it into a map
// loses no key.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":2,"c":3}]}}`, `{"Q":1,"q":2}`, `[]`, `{"a":`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		var dup *Error
		if errors.As(err, &dup) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var v any
		decErr := dec.Decode(&v)
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		if (err == nil) != (decErr == nil) {
			t.Fatalf("Check(%q) = %v, but decoding says %v", data, err, decErr)
		}
		if err == nil {
			if m, ok := v.(map[string]any); ok && countTopKeys(t, data) != len(m) {
				t.Fatalf("Check(%q) passed, but decoding merged keys", data)
			}
		}
	})
}

// countTopKeys counts the keys of the outermost object of data, a valid JSON text.
func countTopKeys(t *testing.T, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, _ := dec.Token()
	if tok != json.Delim('{') {
		t.Fatal("not an object")
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
