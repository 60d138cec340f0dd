package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

var checkCases = []struct {
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
	{in: `{"\u0061":1,"a":2}`, dupKey: "a"},           // escapes are decoded before comparing
	{in: `{"a\"":1,"a\\":2,"a\"":3}`, dupKey: `a"`},   // an escaped quote does not end the key
	{in: `{"a":"\\","b":"x\"y:","b":1}`, dupKey: "b"}, // nor does a quote after an escaped backslash end it early
	{in: `{"a" : "b:" , "b" :1}`},                     // a value followed by text that looks like a colon
	{in: manyKeysObject(40, "last")},                  // past manyKeys the keys are in a map
	{in: manyKeysObject(40, "k7"), dupKey: "k7"},
	{in: manyKeysObject(40, "K7"), dupKey: "K7"},   // folded there too
	{in: `{"v":` + manyKeysObject(40, "K7") + `}`}, // but not below the top
	{in: `{"v":` + manyKeysObject(40, "k7") + `}`, dupKey: "k7"},
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
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

func TestUnmarshal(t *testing.T) {
	for _, tc := range checkCases {
		unmarshalAgreesWithCheck(t, []byte(tc.in))
	}
	// A value of the wrong type is decoding's error, found before any key is checked.
	var s string
	if _, ok := errors.AsType[*json.UnmarshalTypeError](Unmarshal([]byte(`{"a":1,"a":2}`), &s)); !ok {
		t.Error("Unmarshal of an object with a repeated key into a string: want encoding/json's type error")
	}
}

// unmarshalAgreesWithCheck: for valid JSON, Unmarshal reports what Check does
// (having decoded it); for other text, the syntax error json.Unmarshal gives.
func unmarshalAgreesWithCheck(t *testing.T, data []byte) {
	t.Helper()
	var raw json.RawMessage // takes any valid value without a type error
	got := Unmarshal(data, &raw)
	if !json.Valid(data) {
		if _, ok := errors.AsType[*json.SyntaxError](got); !ok {
			t.Errorf("Unmarshal(%q) = %v, want json.Unmarshal's syntax error", data, got)
		}
		return
	}
	want := Check(data)
	g, _ := errors.AsType[*Error](got)
	w, _ := errors.AsType[*Error](want)
	if (got == nil) != (want == nil) || (g == nil) != (w == nil) || g != nil && *g != *w {
		t.Errorf("Unmarshal(%q) = %v, Check says %v", data, got, want)
	}
	if got == nil && !bytes.Equal(raw, bytes.TrimSpace(data)) {
		t.Errorf("Unmarshal(%q) decoded %q", data, raw)
	}
}

// manyKeysObject is an object with keys k0 to k(n-1), then last.
func manyKeysObject(n int, last string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, "%q:%d,", "k"+strconv.Itoa(i), i)
	}
	fmt.Fprintf(&b, "%q:0}", last)
	return b.String()
}

func TestDuplicateOffset(t *testing.T) {
	in := `{"name":"a",  "name":"b"}`
	var dup *Error
	if err := Check([]byte(in)); !errors.As(err, &dup) || dup.Offset != int64(len(`{"name":"a",  "name"`)) {
		t.Fatalf("Check(%s) = %v, want the offset after the second key", in, err)
	}
}

// FuzzFold holds foldCase to encoding/json's notion of equal names: bytes.EqualFold.
func FuzzFold(f *testing.F) {
	for _, s := range [][2]string{{"name", "NAME"}, {"k", "\u212a"}, {"s", "\u017f"}, {"é", "É"}, {"a", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := foldCase(a) == foldCase(b), bytes.EqualFold([]byte(a), []byte(b)); got != want {
			t.Errorf("foldCase(%q) == foldCase(%q) is %v, bytes.EqualFold says %v", a, b, got, want)
		}
	})
}

// FuzzCheckValid holds the byte scanner for valid JSON to the token reader.
func FuzzCheckValid(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a\\":"\"","a\\\"":{"b":[1,"c",{"c":2,"C":3}]}}`,
		`{"Q":1,"q":2}`, `[{"k":1},{"k":2,"\u006b":3}]`, manyKeysObject(20, "k3"), manyKeysObject(20, "\u212a3")} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		got, want := checkValid(data), checkTokens(data)
		var g, w *Error
		if errors.As(got, &g) != errors.As(want, &w) || (got == nil) != (want == nil) || g != nil && *g != *w {
			t.Fatalf("checkValid(%q) = %v, checkTokens says %v", data, got, want)
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
		unmarshalAgreesWithCheck(t, data)
		err := Check(data)
		var dup *Error
		if errors.As(err, &dup) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // a number too large for a float64 is still valid JSON
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

// BenchmarkCheck compares Check with the token reader it replaced for valid
// JSON, on a GraphQL request body and on a 270 KB one.
func BenchmarkCheck(b *testing.B) {
	small := []byte(`{"query":"{ user(id: 7) { id name email } }","variables":{"id":7}}`)
	large := []byte(`{"query":"` + strings.Repeat("query O { user(id: 1) { id id id id } } ", 6800) + `","operationName":"O0"}`)
	for _, in := range []struct {
		name string
		data []byte
	}{{"small", small}, {"270KB", large}} {
		for _, f := range []struct {
			name  string
			check func([]byte) error
		}{{"Check", Check}, {"tokens", checkTokens}} {
			b.Run(in.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := f.check(in.data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
