package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is the reference: encoding/json with HTML escaping off, without the
// newline Encode adds.
func encodingJSON(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var samples = []string{
	"", "plain ASCII", `"quoted" \ back\slash /`, "<a href='x'>&amp;</a>",
	"\x00\x01\b\t\n\v\f\r\x1b\x1f\x7f", "café 日本 😀", "line\u2028sep\u2029para",
	"bad \xff byte", "cut \xe6\x97", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 past U+10FFFF",
	"ends in \xc3",
}

func TestAppendIsEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := Append(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("Append(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

func TestAppendKeepsWhatIsBefore(t *testing.T) {
	if got := string(Append([]byte(`{"k":`), "<v>")); got != `{"k":"<v>"` {
		t.Errorf("got %s", got)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Append(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}
