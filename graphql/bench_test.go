package graphql

import (
	"context"
	"testing"

	"quartet/internal/jsonkeys"
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

// BenchmarkDecodeParams is what decoding the usual POST body costs, by the plain path
// and by the general one.
func BenchmarkDecodeParams(b *testing.B) {
	body := []byte(`{"query":"{ user(id: 7) { id name email } }"}`)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p httpParams
			decodeParams(body, &p)
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p httpParams
			jsonkeys.Unmarshal(body, &p)
		}
	})
}
