package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

var checkCases = []struct {
	in      string
	dupKey  string // "" when the input has no repeated key
	invalid bool
	deepAt  int64 // the offset of the bracket past MaxDepth; 0 for none
	loneAt  int64 // the offset of an unpaired surrogate escape; 0 for none
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
	// Nesting: MaxDepth levels pass, one more is refused at its bracket, however
	// deep the text goes on (past encoding/json's own limit of 10,000 too), unless
	// a syntax error comes first; brackets in strings do not count.
	{in: nested("[", MaxDepth) + nested("]", MaxDepth)},
	{in: nested(`{"a":`, MaxDepth) + "1" + nested("}", MaxDepth)},
	{in: nested("[", MaxDepth+1) + nested("]", MaxDepth+1), deepAt: MaxDepth},
	{in: nested(`{"a":`, MaxDepth+1) + "1" + nested("}", MaxDepth+1), deepAt: 5 * MaxDepth},
	{in: nested(`{"a":`, 20000) + "1" + nested("}", 20000), deepAt: 5 * MaxDepth},
	{in: nested(`[1,{"a":`, 40), deepAt: 8 * 32},    // two levels a repeat: the 33rd repeat's bracket
	{in: nested("[", MaxDepth+1), deepAt: MaxDepth}, // unfinished, but too deep first
	{in: nested("[", MaxDepth) + "x" + nested("[", 10), invalid: true},
	{in: "[x" + nested("[", 100), invalid: true},
	{in: `{"a":1,"a":` + nested("[", 100), deepAt: 11 + MaxDepth - 1}, // refused for its depth before anything is read
	{in: `{"a":"` + nested("[", 100) + `"}`},
	{in: `["\"` + nested("[", 100) + `","\\"]`},
	{in: `{} ` + nested("[", 100)}, // Check reads one value
	// Surrogate escapes: a high one followed by a low one is a character, any other
	// is refused at its backslash, in keys too, and before a later repeated key.
	{in: `{"a":"\ud83d\ude00","b":"\uD83D\uDE00"}`},
	{in: `{"a":"\ud800"}`, loneAt: 6},
	{in: `{"a":"\udc00"}`, loneAt: 6},
	{in: `{"a":"x\ud800y"}`, loneAt: 7},
	{in: `{"a":"\ud83d\ud83d\ude00"}`, loneAt: 6},
	{in: `{"a":"\ud83d\ude00\ude00"}`, loneAt: 18},
	{in: `{"a":"\ud800\u0041"}`, loneAt: 6},
	{in: `{"a":"\ud800\n"}`, loneAt: 6},
	{in: `{"a":"\\ud800"}`}, // an escaped backslash, then text
	{in: `{"a":"\\\ud800"}`, loneAt: 8},
	{in: `{"a":"\n\ud800"}`, loneAt: 8},
	{in: `{"\ud800":1}`, loneAt: 2},
	{in: `["x","\udfff"]`, loneAt: 6},
	{in: `"\ud800"`, loneAt: 1},
	{in: `{"a":"\ud800","a":1}`, loneAt: 6},
	{in: `{"a":1,"a":"\ud800"}`, dupKey: "a"},
	{in: `{"a":"\u00e9\ud7ff\ue000\uffff"}`},
}

// nested is s repeated n times.
func nested(s string, n int) string { return strings.Repeat(s, n) }

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		err := Check([]byte(tc.in))
		var dup *Error
		var deep *DepthError
		var lone *SurrogateError
		switch {
		case tc.deepAt != 0:
			if !errors.As(err, &deep) || deep.Offset != tc.deepAt {
				t.Errorf("Check(%.80s) = %v, want nesting past %d at byte %d", tc.in, err, MaxDepth, tc.deepAt)
			}
		case tc.loneAt != 0:
			if !errors.As(err, &lone) || lone.Offset != tc.loneAt || lone.Escape != tc.in[tc.loneAt:tc.loneAt+6] {
				t.Errorf("Check(%s) = %v, want an unpaired surrogate at byte %d", tc.in, err, tc.loneAt)
			}
		case tc.dupKey != "":
			if !errors.As(err, &dup) || dup.Key != tc.dupKey {
				t.Errorf("Check(%s) = %v, want duplicate key %q", tc.in, err, tc.dupKey)
			}
		case tc.invalid:
			if err == nil || Refused(err) {
				t.Errorf("Check(%.80s) = %v, want a syntax error", tc.in, err)
			}
		case err != nil:
			t.Errorf("Check(%.80s) = %v, want nil", tc.in, err)
		}
	}
}

// TestCheckDepth: CheckDepth refuses exactly what Check refuses for its depth,
// repeated keys and surrogates aside.
func TestCheckDepth(t *testing.T) {
	for _, tc := range checkCases {
		_, deep := errors.AsType[*DepthError](CheckDepth([]byte(tc.in)))
		if want := tc.deepAt != 0; deep != want {
			t.Errorf("CheckDepth(%.80s): refused %v, want %v", tc.in, deep, want)
		}
	}
	if err := CheckDepth([]byte(`{"a":1,"a":2,"b":` + nested("[", 100))); err == nil {
		t.Error("CheckDepth passed a deep text after a repeated key")
	}
}

// TestDeepTextAllocatesLittle: however deep a text goes, what refusing it
// allocates is bounded by MaxDepth. Without the bound, the token reader made a
// frame and a map for each of the 175,000 levels of a 1 MiB text: 87 MB.
func TestDeepTextAllocatesLittle(t *testing.T) {
	n := (1<<20 - 1) / len(`{"a":}`)
	data := []byte(nested(`{"a":`, n) + "1" + nested("}", n))
	for name, f := range map[string]func() error{
		"Check":      func() error { return Check(data) },
		"CheckDepth": func() error { return CheckDepth(data) },
		"Unmarshal":  func() error { var v any; return Unmarshal(data, &v) },
	} {
		var err error
		if got := testkit.BytesAllocated(func() { err = f() }); got > 64<<10 {
			t.Errorf("%s of a 1 MiB text nested %d deep allocated %d bytes", name, n, got)
		}
		if _, ok := errors.AsType[*DepthError](err); !ok {
			t.Errorf("%s of a text nested %d deep = %v, want a *DepthError", name, n, err)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for in, want := range map[string]int{
		``: -1, `abc`: -1, `\ud800`: 0, `a\\\udc00`: 3, `\ud800\udc00`: -1, `\n\t\u0041`: -1,
		`\ud800\ud800\udc00`: 0, `\u12`: -1, `\ud800\u12`: 0, `\`: -1, `\\`: -1, `\ud8`: -1,
	} {
		if got := LoneSurrogate([]byte(in)); got != want {
			t.Errorf("LoneSurrogate(%s) = %d, want %d", in, got, want)
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
	want := Check(data)
	if !json.Valid(data) {
		if g, ok := errors.AsType[*DepthError](got); ok {
			if w, ok := errors.AsType[*DepthError](want); !ok || *g != *w {
				t.Errorf("Unmarshal(%.80q) = %v, Check says %v", data, got, want)
			}
		} else if _, ok := errors.AsType[*json.SyntaxError](got); !ok {
			t.Errorf("Unmarshal(%.80q) = %v, want json.Unmarshal's syntax error", data, got)
		}
		return
	}
	if (got == nil) != (want == nil) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Errorf("Unmarshal(%.80q) = %v, Check says %v", data, got, want)
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
		`{"Q":1,"q":2}`, `[{"k":1},{"k":2,"\u006b":3}]`, manyKeysObject(20, "k3"), manyKeysObject(20, "\u212a3"),
		nested("[", MaxDepth+1) + nested("]", MaxDepth+1), `{"a":[{"b":` + nested(`{"c":`, MaxDepth) + `1` + nested("}", MaxDepth+2) + `]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		got, want := checkValid(data, true), checkTokens(data, true, true)
		if _, lone := errors.AsType[*SurrogateError](got); lone {
			return // the token reader sees decoded strings; FuzzCheck holds this to a reference
		}
		if g, ok := errors.AsType[*DepthError](got); ok {
			if w, ok := errors.AsType[*DepthError](want); !ok || *g != *w {
				t.Fatalf("checkValid(%q) = %v, checkTokens says %v", data, got, want)
			}
			return
		}
		var g, w *Error
		if errors.As(got, &g) != errors.As(want, &w) || (got == nil) != (want == nil) || g != nil && *g != *w {
			t.Fatalf("checkValid(%q) = %v, checkTokens says %v", data, got, want)
		}
	})
}

// FuzzCheck: Check never panics, refuses exactly the texts encoding/json finds
// invalid (for one value), nested deeper than MaxDepth, or with an unpaired
// surrogate escape (by testkit's references), and when it passes an object,
// decoding it into a map loses no key.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":2,"c":3}]}}`, `{"Q":1,"q":2}`, `[]`, `{"a":`, `{"a":"\ud800"}`,
		`{"a":"\ud83d\ude00\udc00"}`, `{"a":"\\ud800","b":"\\\udfff"}`, nested(`{"a":`, MaxDepth+1) + "1" + nested("}", MaxDepth+1)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		unmarshalAgreesWithCheck(t, data)
		err := Check(data)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // a number too large for a float64 is still valid JSON
		var v any
		decErr := dec.Decode(&v)
		first := data[:dec.InputOffset()] // the one value Check reads, when it decodes
		if _, dup := errors.AsType[*Error](err); dup {
			return
		}
		if _, deep := errors.AsType[*DepthError](err); deep {
			if decErr == nil && testkit.JSONDepth(data) <= MaxDepth {
				t.Fatalf("Check(%.80q) = %v, but it nests %d deep", data, err, testkit.JSONDepth(data))
			}
			return
		}
		if _, lone := errors.AsType[*SurrogateError](err); lone {
			if decErr != nil || !testkit.HasLoneSurrogate(first) {
				t.Fatalf("Check(%q) = %v, but the reference finds no unpaired surrogate (decoding: %v)", data, err, decErr)
			}
			return
		}
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
			if testkit.JSONDepth(data) > MaxDepth || testkit.HasLoneSurrogate(first) {
				t.Fatalf("Check(%q) passed a text too deep or with an unpaired surrogate", data)
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
		}{{"Check", Check}, {"tokens", func(data []byte) error { return checkTokens(data, true, true) }}} {
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

// BenchmarkNested measures Check on a 1 MiB text of objects nested about 175,000 deep.
func BenchmarkNested(b *testing.B) {
	n := (1<<20 - 1) / len(`{"a":}`)
	data := []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if Check(data) == nil {
			b.Fatal("accepted")
		}
	}
}
