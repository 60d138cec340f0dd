package graphql

import (
	"context"
	"testing"
)

const benchQuery = "{ users { name posts(limit: 2) { title comments { text author { name } } } } }"

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseDoc(benchQuery); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s, _ := newTestSchema(b)
	doc, err := parseDoc(benchQuery)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.validate(doc); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkExecute measures a cached query: the document is parsed and
// validated once, then every iteration executes it and writes the JSON.
func BenchmarkExecute(b *testing.B) {
	s, _ := newTestSchema(b)
	req := Request{Query: benchQuery}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, req); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}
