package main

import (
	"bytes"
	"fmt"
	"testing"
)

// datasetFile returns a dataset file of the shape the service is started with: users
// with names and emails, and products, in id order.
func datasetFile(users, products int) []byte {
	first := []string{"Ann", "Carl", "Dana", "Eve", "Ivo", "Kai", "Lena", "Milo", "Nora", "Otto", "Rosa", "Sven"}
	last := []string{"Berg", "Dubois", "Jones", "Khan", "Novak", "Silva", "Smith"}
	var b bytes.Buffer
	b.WriteString(`{"users":[`)
	for i := 1; i <= users; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "%s %s %d", "email": "user%d@example.com", "createdAt": "2024-01-01T00:00:00Z"}`,
			i, first[i*7%len(first)], last[i*13%len(last)], i, i)
	}
	b.WriteString(`],"products":[`)
	for i := 1; i <= products; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "Lamp Desk %d", "price": %d.%02d, "category": "%c", "createdDate": "2024-01-01T00:00:00Z", "isActive": %t}`,
			i, i, i%2000, i%100, 'A'+i%3, i%10 != 0)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkReadDataset measures decoding a dataset of 100,000 users and 10,000 products.
func BenchmarkReadDataset(b *testing.B) {
	data := datasetFile(100_000, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadDataset(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures filling a store from a decoded dataset of 100,000 users and
// 10,000 products: checks, tables and the sorted user indexes.
func BenchmarkLoad(b *testing.B) {
	data := datasetFile(100_000, 10_000)
	for b.Loop() {
		b.StopTimer()
		ds, err := ReadDataset(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := NewStore().Load(ds); err != nil {
			b.Fatal(err)
		}
	}
}
