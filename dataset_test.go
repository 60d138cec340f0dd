package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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
