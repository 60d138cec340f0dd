package jsonscan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// A document of the dataset's shape, for the tests: the same lists, keys and kinds of
// value as the service's dataset file.
type (
	testDoc struct {
		Users    []testUser    `json:"users"`
		Posts    []testPost    `json:"posts"`
		Comments []testComment `json:"comments"`
		Products []testProduct `json:"products"`
		Orders   []testOrder   `json:"orders"`
	}
	testUser struct {
		ID        int64     `json:"id"`
		Name      string    `json:"name"`
		Email     string    `json:"email"`
		CreatedAt time.Time `json:"createdAt"`
	}
	testPost struct {
		ID        int64     `json:"id"`
		UserID    int64     `json:"userId"`
		Title     string    `json:"title"`
		Content   string    `json:"content"`
		CreatedAt time.Time `json:"createdAt"`
	}
	testComment struct {
		ID        int64     `json:"id"`
		PostID    int64     `json:"postId"`
		AuthorID  int64     `json:"authorId"`
		Text      string    `json:"text"`
		CreatedAt time.Time `json:"createdAt"`
	}
	testProduct struct {
		ID          int64     `json:"id"`
		Name        string    `json:"name"`
		Price       price     `json:"price"`
		Category    string    `json:"category"`
		CreatedDate time.Time `json:"createdDate"`
		IsActive    bool      `json:"isActive"`
	}
	testOrder struct {
		ID           int64     `json:"id"`
		UserID       int64     `json:"userId"`
		ProductID    int64     `json:"productId"`
		CustomerName string    `json:"customerName"`
		OrderDate    time.Time `json:"orderDate"`
		Quantity     int64     `json:"quantity"`
	}
)

// price is a number with at most four fractional digits, kept as written: an
// Unmarshaler that refuses some numbers, as the service's Decimal does.
type price string

func (p *price) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, `"eE`) {
		return fmt.Errorf("price %s is not a decimal number", s)
	}
	if _, frac, ok := strings.Cut(s, "."); ok && len(frac) > 4 {
		return fmt.Errorf("%s has more than 4 decimal places", s)
	}
	*p = price(s)
	return nil
}

// decode decodes a testDoc with lists in segments of segment elements.
func decode(data []byte, segment int) (*testDoc, error) {
	d := New(data, "dataset")
	d.segment = segment
	var doc testDoc
	err := d.Object(Loc{}, keysOf(testDoc{}), func(name string) error {
		switch name {
		case "users":
			return List(d, name, &doc.Users, decodeRecord[testUser])
		case "posts":
			return List(d, name, &doc.Posts, decodeRecord[testPost])
		case "comments":
			return List(d, name, &doc.Comments, decodeRecord[testComment])
		case "products":
			return List(d, name, &doc.Products, decodeRecord[testProduct])
		case "orders":
			return List(d, name, &doc.Orders, decodeRecord[testOrder])
		}
		return fmt.Errorf("no list %s", name)
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		return nil, err
	}
	return &doc, nil
}

// decodeRecord decodes a record as a caller of the package does, with a token reader
// for each field's kind, found by reflection so that the test's records are
// declarations only.
func decodeRecord[T any](d *Scanner, at Loc, rec *T) error {
	v := reflect.ValueOf(rec).Elem()
	keys := keysOf(*rec)
	return d.Object(at, keys, func(name string) error {
		switch p := v.Field(slices.Index(keys, name)).Addr().Interface().(type) {
		case *int64:
			return d.Int64(at.With(name), p)
		case *string:
			return d.String(at.With(name), p)
		case *bool:
			return d.Bool(at.With(name), p)
		case json.Unmarshaler:
			return d.Unmarshal(at.With(name), p)
		}
		return fmt.Errorf("no reader for %s", name)
	})
}

// keysOf returns the JSON keys of the struct v's fields, in order.
func keysOf(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("json")
	}
	return keys
}

// decodeWithStdlib is the reference: testkit.DecodeStrict into a testDoc.
func decodeWithStdlib(data []byte) (*testDoc, error) { return testkit.DecodeStrict[testDoc](data) }

var seeds = testkit.DatasetSeeds

// demo returns the service's demo dataset, a seed of the right shape throughout.
func demo(t testing.TB) []byte {
	data, err := os.ReadFile(filepath.Join("..", "..", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, seed := range append(seeds, string(demo(t))) {
		checkAgainstStdlib(t, []byte(seed))
		checkSegmentsAgree(t, []byte(seed))
	}
}

// FuzzDecode holds the scanner to encoding/json: both accept the same inputs, with
// the same values, and lists decoded in segments of any size give what one pass
// gives.
func FuzzDecode(f *testing.F) {
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	f.Add(demo(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstStdlib(t, data)
		checkSegmentsAgree(t, data)
	})
}

func checkAgainstStdlib(t *testing.T, data []byte) {
	t.Helper()
	got, err := decode(data, segmentElems)
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

// checkSegmentsAgree holds decoding in segments of any size to decoding each list
// in one segment: the same values, or the same error, word for word.
func checkSegmentsAgree(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := decode(data, len(data)+1)
	for _, segment := range []int{1, 2, 3, 7, segmentElems} {
		got, err := decode(data, segment)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("segments of %d: got %v, %v; in one segment %v", segment, err, got == nil, wantErr)
		}
	}
}

// TestDecodeLongList holds a document long enough to make many of List's segments,
// and its broken variants, to encoding/json and to decoding in one segment.
func TestDecodeLongList(t *testing.T) {
	testkit.SkipIfShort(t, "decodes 13 documents of 2 MB eight ways each, about 10 s under -race")
	for _, in := range testkit.LongDatasetInputs() {
		checkAgainstStdlib(t, in)
		checkSegmentsAgree(t, in)
	}
}

// TestErrors holds each error's wording: where the value is, and at which byte.
func TestErrors(t *testing.T) {
	tests := []struct{ json, want string }{
		{``, "malformed JSON: unexpected end of input, expecting a value"},
		{`[]`, "dataset must be an object, not array (byte 0)"},
		{`{"users":[`, "malformed JSON: unexpected end of input, expecting a value"},
		{`{"users":[{"id":1}`, "malformed JSON: unexpected end of input, expecting ',' or ']'"},
		{`{"users" [`, `malformed JSON at byte 9: expecting ':', found '['`},
		{`{"usres":[]}`, `json: unknown field "usres" (byte 9)`},
		{`{"users":[{"id":1,"x":2}]}`, `json: unknown field "x" (byte 22)`},
		{`{"users":{}}`, "users must be an array, not object (byte 9)"},
		{`{"users":[{"id":"1"}]}`, "users[0].id must be an integer, not string (byte 16)"},
		{`{"users":[{"id":1.5}]}`, "users[0].id must be an integer, not 1.5 (byte 16)"},
		{`{"users":[{},{"name":true}]}`, "users[1].name must be a string, not bool (byte 21)"},
		{`{"products":[{"isActive":"yes"}]}`, "products[0].isActive must be a boolean, not string (byte 25)"},
		{`{"products":[{"id":1,"price":1.23456}]}`, "products[0].price: 1.23456 has more than 4 decimal places (byte 29)"},
		{`{"users":[{"createdAt":"noon"}]}`, `users[0].createdAt: parsing time "noon" as "2006-01-02T15:04:05Z07:00": cannot parse "noon" as "2006" (byte 23)`},
		{`{} {}`, "unexpected data after the dataset object (byte 3)"},
		{`{"users":[],"Users":[]}`, `dataset: repeated key "Users" (byte 12)`},
		{`{"users":[{"name":"A","NAME":"C"}]}`, `users[0]: repeated key "NAME" (byte 22)`},
		{`{"users":[{"name":"Zo\ud800e"}]}`, `users[0].name: unpaired surrogate escape \ud800 names no character (byte 21)`},
		{`{"users":[{"name":"a` + "\x01" + `"}]}`, `malformed JSON at byte 20: expecting a character in a string, found '\x01'`},
		{`{"users":[{"name":"\q"}]}`, `malformed JSON at byte 20: expecting an escape, found 'q'`},
		{`{"users":[{"id":-x}]}`, `malformed JSON at byte 17: expecting a digit, found 'x'`},
		{`{"users":[{"name":` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `}]}`, "users[0].name must be a string, not array (byte 18)"},
		{`{"users":[{"name":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}]}`, "users[0].name: arrays and objects nested deeper than 64 levels at byte 79"},
		{`{"users":[{"createdAt":{"a":` + strings.Repeat("[", 20000) + `}}]}`, "users[0].createdAt: arrays and objects nested deeper than 64 levels at byte 88"},
	}
	for _, tt := range tests {
		_, err := decode([]byte(tt.json), segmentElems)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: err = %v, want %q", tt.json, err, tt.want)
		}
	}
}

// TestStringsAreCopies checks that no decoded string refers to the document, which
// its caller may reuse or unmap.
func TestStringsAreCopies(t *testing.T) {
	data := []byte(`{"users":[{"name":"plain","email":"\u00e9sc\"aped"}]}`)
	doc, err := decode(data, segmentElems)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'X'
	}
	if u := doc.Users[0]; u.Name != "plain" || u.Email != `ésc"aped` {
		t.Errorf("after the document changed: %+v", u)
	}
}

func TestDescribe(t *testing.T) {
	var v struct {
		N int      `json:"n"`
		F float64  `json:"f"`
		L []string `json:"l"`
	}
	tests := []struct{ json, want string }{
		{``, "empty input: expected a JSON object"},
		{`{"n":`, "malformed JSON: unexpected end of input"},
		{`{"n":x}`, "malformed JSON at byte 6: invalid character 'x' looking for beginning of value"},
		{`{"n":"1"}`, "n must be an integer, not string (byte 8)"},
		{`{"f":true}`, "f must be a number, not bool (byte 9)"},
		{`{"l":{}}`, "l must be an array, not object (byte 6)"},
		{`[1]`, "expected an object, not array (byte 1)"},
	}
	for _, tt := range tests {
		err := Describe(json.NewDecoder(strings.NewReader(tt.json)).Decode(&v))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: %v, want %q", tt.json, err, tt.want)
		}
	}
}
