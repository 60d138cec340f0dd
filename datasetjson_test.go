package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// decodeWithStdlib is the reference: encoding/json into a Dataset, unknown fields
// refused, one value only, no key repeated in an object (repeatedKey), and no
// unpaired surrogate escape (testkit's reference).
func decodeWithStdlib(data []byte) (*Dataset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ds Dataset
	if err := dec.Decode(&ds); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	if err := repeatedKey(data); err != nil {
		return nil, err
	}
	if testkit.HasLoneSurrogate(data) {
		return nil, errors.New("unpaired surrogate escape")
	}
	return &ds, nil
}

// repeatedKey reports the first key of the valid JSON text data that an earlier key
// of the same object matches as encoding/json matches keys to fields (EqualFold).
func repeatedKey(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type open struct {
		keys     []string // nil in an array
		inObject bool
		wantKey  bool
	}
	var stack []open
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].inObject {
			if key, ok := tok.(string); ok && stack[top].wantKey {
				for _, k := range stack[top].keys {
					if strings.EqualFold(k, key) {
						return fmt.Errorf("repeated key %q", key)
					}
				}
				stack[top].keys = append(stack[top].keys, key)
				stack[top].wantKey = false
				continue
			}
			stack[top].wantKey = true // the value read now ends here or in its own levels
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{inObject: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, open{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
	}
}

var datasetSeeds = []string{
	`{}`, `null`, `{"users":null}`, `{"users":[]}`, `[]`, `"x"`, `{"users":{}}`, `{"users":"x"}`,
	`{"users":[{"id":1,"name":"A","email":"a@x.io","createdAt":"2024-01-01T09:00:00Z"}]}`,
	`{"Users":[{"ID":1,"NAME":"A"}],"users":[{"id":2}]}`,
	`{"users":[{"id":1,"id":2}]}`, `{"users":[null,{"id":null,"name":null}]}`,
	`{"users":[{"id":1.5}]}`, `{"users":[{"id":1e2}]}`, `{"users":[{"id":-0}]}`, `{"users":[{"id":99999999999999999999}]}`,
	`{"users":[{"id":"1"}]}`, `{"users":[{"name":1}]}`, `{"users":[{"name":"a\u00e9\ud83d\ude00\n"}]}`,
	`{"users":[{"name":"\ud800"}]}`, "{\"users\":[{\"name\":\"\xff\"}]}", `{"users":[{"name":"a\x"}]}`,
	`{"products":[{"id":1,"price":19.99,"isActive":true,"createdDate":null}]}`, `{"products":[{"price":"1"}]}`,
	`{"products":[{"price":1.00001}]}`, `{"products":[{"isActive":1}]}`, `{"orders":[{"quantity":3,"orderDate":"bad"}]}`,
	`{"comments":[{"postId":1,"authorId":2,"text":"t"}],"posts":[{"userId":1,"title":"t","content":"c"}]}`,
	`{"nope":1}`, `{"users":[{"nope":{"a":[1,2]}}]}`, `{"users":[]} x`, `{"users":[] `, `{"users":[1,]}`,
	` { "users" : [ { "id" : 1 } ] } `, `{"users":[{"id":01}]}`, `{"users":[{"id":-}]}`, `{"users":[{"id":1.}]}`,
	`{"users":[{"createdAt":"2024-01-01T09:00:00+02:00"}]}`, `{"users":[{"createdAt":1}]}`,
	`{"users":[{"name":"K"}],"uſers":[]}`, `{"uſers":[]}`,
	`{"users":[{"name":"\ud83d\ude00\udc00"}]}`, `{"users":[{"name":"\\ud800","email":"\\\udbff"}]}`,
	`{"users":[{"name":` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `}]}`,
	`{"users":[{"name":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}]}`,
	`{"users":[{"createdAt":{"a":` + strings.Repeat("[", 70) + `}}]}`,
}

func TestDecodeDatasetMatchesEncodingJSON(t *testing.T) {
	for _, seed := range append(datasetSeeds, string(demoJSON)) {
		checkAgainstStdlib(t, []byte(seed))
	}
}

// FuzzDecodeDataset holds the one-pass decoder to encoding/json: both accept the same
// inputs, with the same values.
func FuzzDecodeDataset(f *testing.F) {
	for _, seed := range datasetSeeds {
		f.Add([]byte(seed))
	}
	f.Add(demoJSON)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstStdlib(t, data)
		checkSegmentsAgree(t, data)
	})
}

func checkAgainstStdlib(t *testing.T, data []byte) {
	t.Helper()
	got, err := decodeDataset(data)
	want, wantErr := decodeWithStdlib(data)
	switch {
	case err == nil && wantErr != nil:
		t.Fatalf("%q: accepted, but encoding/json says %v", data, wantErr)
	case err != nil && wantErr == nil:
		t.Fatalf("%q: refused (%v), but encoding/json accepts it", data, err)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: decoded\n%+v\nencoding/json decoded\n%+v", data, got, want)
	}
}

// TestDecodeLongDataset decodes a dataset long enough to make many of decodeList's
// segments, with errors in the middle (one, or two in different segments), inside
// strings that look like element starts, and at the end, and holds it to
// encoding/json and to decoding in one segment.
func TestDecodeLongDataset(t *testing.T) {
	data := datasetFile(20000, 40)
	tricky := []byte(`{"users":[{"id":1,"name":"a},{\"id\":2},{","email":"x"},{"id":3,"name":"},{"},{"id":4}],` +
		`"products":[{"id":1,"name":"p"}],"users":[{"id":9},{"name":"},{\"name\":1}"}]}`)
	wrongType := bytes.Replace(data, []byte(`{"id": 5000,`), []byte(`{"id": "5000",`), 1)
	unknownField := bytes.Replace(data, []byte(`{"id": 15000,`), []byte(`{"id": 15000, "nope": 1,`), 1)
	both := bytes.Replace(wrongType, []byte(`{"id": 15000,`), []byte(`{"id": 15000, "nope": 1,`), 1)
	inputs := [][]byte{data, tricky, wrongType, unknownField, both}
	for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) - 3} {
		broken := bytes.Clone(data)
		broken[cut] = '!'
		inputs = append(inputs, broken, data[:cut])
	}
	for _, in := range inputs {
		checkAgainstStdlib(t, in)
		checkSegmentsAgree(t, in)
	}
}

// checkSegmentsAgree holds decoding in segments of any size to decoding each list
// in one segment: the same values, or the same error, word for word.
func checkSegmentsAgree(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := decodeDatasetIn(data, len(data)+1)
	for _, segment := range []int{1, 2, 3, 7, segmentElems} {
		got, err := decodeDatasetIn(data, segment)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("segments of %d: got %v, %v; in one segment %v", segment, err, got == nil, wantErr)
		}
	}
}
