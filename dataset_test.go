package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A dataset read from a file is decoded from the file mapped into memory, which is
// unmapped afterwards: every value must be a copy. Reading each one after the unmap
// (DeepEqual does) would crash the test if one still pointed into the file.
func TestReadDatasetFromFileOwnsItsValues(t *testing.T) {
	text := `{"users":[{"id":1,"name":"Zoë O'Brien","email":"zoe@x.io","createdAt":"2024-01-01T09:00:00+02:00"},` +
		`{"id":2,"name":"A \"quoted\" \\ name \u00e9","email":"b@x.io"}],` +
		`"products":[{"id":1,"name":"Lamp ☃","price":19.99,"category":"Home","isActive":true}],` +
		`"orders":[{"id":1,"productId":1,"customerName":"Ødegård","quantity":2,"orderDate":"2024-02-03T04:05:06Z"}]}`
	_, f := openFileWith(t, []byte(text))
	_, unmap, ok := mapFile(f)
	if !ok {
		t.Fatal("a regular file was not mapped")
	}
	unmap()
	got, err := ReadDataset(f)
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

// A file that shrinks while it is decoded is an error, not a crash.
func TestReadDatasetFileShrinks(t *testing.T) {
	path, f := openFileWith(t, datasetFile(20000, 10))
	data, unmap, ok := mapFile(f)
	if !ok {
		t.Fatal("a regular file was not mapped")
	}
	defer unmap()
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	ds, err := decodeMapped(data)
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("got %v, %v; want the file-changed error", ds != nil, err)
	}
}

// openFileWith writes data to a new file and opens it for reading; the file is
// closed when the test ends.
func openFileWith(t *testing.T, data []byte) (path string, f *os.File) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ds.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f
}
