package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// decodeWithStdlib is the reference: testkit.DecodeStrict into a Dataset.
func decodeWithStdlib(data []byte) (*Dataset, error) { return testkit.DecodeStrict[Dataset](data) }

// datasetSeeds are the documents the dataset decoders are held to encoding/json on.
var datasetSeeds = testkit.DatasetSeeds

// TestDecodeDatasetMatchesEncodingJSON holds the record decoders, with package
// jsonscan under them, to encoding/json: both accept the same inputs, with the same
// values (jsonscan's FuzzDecode fuzzes the scanner the same way).
func TestDecodeDatasetMatchesEncodingJSON(t *testing.T) {
	for _, seed := range append(datasetSeeds, string(demoJSON)) {
		checkAgainstStdlib(t, []byte(seed))
	}
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

// TestDecodeLongDataset holds the decoder to encoding/json on a dataset long enough
// to make many of jsonscan.List's segments, and on its broken variants.
func TestDecodeLongDataset(t *testing.T) {
	for _, in := range testkit.LongDatasetInputs() {
		checkAgainstStdlib(t, in)
	}
}

// A dataset read from a file, into a buffer of the file's size, decodes as it does
// from memory, and an empty file is refused as empty input.
func TestReadDatasetFromFile(t *testing.T) {
	text := `{"users":[{"id":1,"name":"Zoë O'Brien","email":"zoe@x.io","createdAt":"2024-01-01T09:00:00+02:00"},` +
		`{"id":2,"name":"A \"quoted\" \\ name \u00e9","email":"b@x.io"}],` +
		`"products":[{"id":1,"name":"Lamp ☃","price":19.99,"category":"Home","isActive":true}],` +
		`"orders":[{"id":1,"productId":1,"customerName":"Ødegård","quantity":2,"orderDate":"2024-02-03T04:05:06Z"}]}`
	for _, text := range []string{text, string(testkit.Dataset(20000, 10))} {
		got, err := ReadDataset(openFileWith(t, []byte(text)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ReadDataset(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("from the file:\n%+v\nfrom memory:\n%+v", got, want)
		}
	}
	if _, err := ReadDataset(openFileWith(t, []byte(" \n"))); err == nil || err.Error() != "empty input: expected a JSON object" {
		t.Errorf("an empty file: %v", err)
	}
}

// openFileWith writes data to a new file and opens it for reading; the file is
// closed when the test ends.
func openFileWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ds.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A dataset is held to what a request body is held to: invalid UTF-8, which a REST
// body is refused for, is refused with its byte rather than stored as U+FFFD.
func TestReadDatasetRefusesInvalidUTF8(t *testing.T) {
	for _, tt := range []struct{ json, want string }{
		{"{\"users\":[{\"id\":1,\"name\":\"A\xff\",\"email\":\"a@x.io\"}]}", "not valid UTF-8 (byte 27)"},
		{"{\"posts\":[{\"id\":1,\"userId\":1,\"title\":\"T\",\"content\":\"\xc3\"}]}", "not valid UTF-8 (byte 52)"},
	} {
		if _, err := ReadDataset(strings.NewReader(tt.json)); err == nil || err.Error() != tt.want {
			t.Errorf("%q: err = %v, want %q", tt.json, err, tt.want)
		}
	}
}

// -load reads a file: a directory or a device (/dev/zero would be read without end) is
// refused before anything is read.
func TestReadDatasetRefusesAFileThatIsNotRegular(t *testing.T) {
	for path, want := range map[string]string{t.TempDir(): "is a directory", os.DevNull: "is a device"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := ReadDataset(f); err == nil || err.Error() != "not a regular file" {
			t.Errorf("%s (%s): err = %v, want %q", path, want, err, "not a regular file")
		}
	}
}

// Times are kept to the whole second on every surface, whatever fraction a dataset
// gives: the store holds what a create would have held.
func TestLoadKeepsTimesToTheSecond(t *testing.T) {
	ds, err := ReadDataset(strings.NewReader(`{"users":[{"id":1,"name":"A","email":"a@x.io","createdAt":"2024-01-01T00:00:00.75+01:00"}],` +
		`"posts":[{"id":1,"userId":1,"title":"T","createdAt":"2024-01-01T00:00:00.5Z"}],` +
		`"comments":[{"id":1,"postId":1,"authorId":1,"text":"x","createdAt":"2024-01-01T00:00:00.5Z"}],` +
		`"products":[{"id":1,"name":"P","price":1,"createdDate":"2024-01-01T00:00:00.5Z"}],` +
		`"orders":[{"id":1,"productId":1,"quantity":1,"orderDate":"2024-01-01T00:00:00.999999999Z"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	if err := s.Load(ds); err != nil {
		t.Fatal(err)
	}
	u, _ := s.User(1)
	p, _ := s.Post(1)
	pr, _ := s.Product(1)
	times := []time.Time{u.CreatedAt, p.CreatedAt, s.Comments()[0].CreatedAt, pr.CreatedDate, s.Orders()[0].OrderDate}
	want := []string{"2023-12-31T23:00:00Z", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"}
	for i, at := range times {
		if got := at.Format(time.RFC3339Nano); got != want[i] {
			t.Errorf("time %d: %s, want %s", i, got, want[i])
		}
	}
}

// A file of null holds no dataset, as an empty one does not: starting empty from it
// would hide a file written wrong, so both are refused.
func TestReadDatasetRefusesNull(t *testing.T) {
	for text, want := range map[string]string{" null\n": "null input: expected a JSON object", "\n": "empty input: expected a JSON object"} {
		if _, err := ReadDataset(strings.NewReader(text)); err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %q", text, err, want)
		}
	}
}

// Every surface writes a time as JSON does, in UTC, which has room for the years 0 to
// 9999 only: a dataset time outside them in UTC, which would make the user's REST
// answer empty and the first snapshot of -data fail, is refused where it stands.
func TestReadDatasetRefusesTimesJSONCannotWrite(t *testing.T) {
	user := func(at string) string {
		return `{"users":[{"id":1,"name":"A","email":"a@x.io","createdAt":"` + at + `"}]}`
	}
	for at, want := range map[string]string{
		"9999-12-31T23:59:59-05:00": `users[0].createdAt: "9999-12-31T23:59:59-05:00" is outside the years 0000 to 9999 in UTC (byte 58)`,
		"0000-01-01T00:59:59+01:00": `users[0].createdAt: "0000-01-01T00:59:59+01:00" is outside the years 0000 to 9999 in UTC (byte 58)`,
		"9999-12-31T23:59:59Z":      "",
		"0000-01-01T00:00:00+00:00": "",
	} {
		_, err := ReadDataset(strings.NewReader(user(at)))
		if got := fmt.Sprint(err); want == "" && err != nil || want != "" && got != want {
			t.Errorf("%s: err = %v, want %q", at, err, want)
		}
	}
	orders := `{"products":[{"id":1,"name":"P","price":1}],"orders":[{"id":1,"productId":1,"quantity":1,"orderDate":"9999-12-31T23:00:00-01:00"}]}`
	if _, err := ReadDataset(strings.NewReader(orders)); err == nil || !strings.HasPrefix(err.Error(), "orders[0].orderDate: ") {
		t.Errorf("an order date past 9999: err = %v", err)
	}
}
