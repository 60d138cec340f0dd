package graphql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"quartet/internal/testkit"
)

func TestDocumentCache(t *testing.T) {
	s, _ := newTestSchema(t)
	q := "{ users { name } }"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if r := s.Execute(context.Background(), Request{Query: q}); len(r.Errors) > 0 {
					t.Error(ErrorList(r.Errors))
				}
			}
		}()
	}
	wg.Wait()
	p1, p2 := s.prepare(q), s.prepare(q)
	if p1 != p2 {
		t.Error("a repeated query was prepared twice")
	}
}

// TestDocumentCacheKeepsValidOnly checks that documents with errors are not
// kept, so that a comment varied per request cannot fill the cache with
// them, and that valid ones are.
func TestDocumentCacheKeepsValidOnly(t *testing.T) {
	s, _ := newTestSchema(t)
	for _, tt := range []struct {
		name, query string
		keep        bool
	}{
		{"valid", "{ users { name } }", true},
		{"syntax error", "{ users { name }", false},
		{"parse limit", "{ __typename" + strings.Repeat(" @skip(if: false)", 201) + " }", false},
		{"limit", "{" + strings.Repeat(" __typename", 2001) + " }", false},
		{"validation error", "{ users { nope } }", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k := range 100 {
				q := fmt.Sprintf("%s #%d", tt.query, k)
				s.Execute(context.Background(), Request{Query: q})
				if _, kept := s.cache.get(q); kept != tt.keep {
					t.Fatalf("kept %v, want %v", kept, tt.keep)
				}
			}
		})
	}
}

// TestDocumentSize checks that the estimate of a cached document's memory is
// not below what it really holds, parsed, validated and executed once, for
// documents of several kinds.
func TestDocumentSize(t *testing.T) {
	testkit.SkipIfShort(t, "measures the heap of thousands of cached documents")
	kinds := []struct {
		name string
		doc  func(k int) string
	}{
		{"small", func(k int) string { return fmt.Sprintf("{ user(id: %d) { name createdAt } }", k) }},
		{"introspection", func(k int) string {
			return fmt.Sprintf("query Q%d { __schema { types { name fields { name args { name type { name ofType { name } } } } } } }", k)
		}},
		{"aliases", func(k int) string {
			return fmt.Sprintf("#%d\n", k) + repeatFields(100, func(i int) string { return fmt.Sprintf("a%d: user(id: %d) { id name posts { title } }", i, i) })
		}},
		{"a field repeated", func(k int) string {
			return fmt.Sprintf("#%d\n", k) + repeatFields(1900, func(int) string { return "__typename" })
		}},
		{"nested fields", func(k int) string {
			return fmt.Sprintf("#%d\n", k) + repeatFields(400, func(int) string { return "users { id name email createdAt }" })
		}},
		{"a long list", func(k int) string { return fmt.Sprintf("#%d\n{ echo(list: [%s]) }", k, strings.Repeat(" 1", 10000)) }},
		{"a long string", func(k int) string { return fmt.Sprintf("{ echo(text: \"%d%s\") }", k, strings.Repeat("\\n", 100000)) }},
		{"fragments", func(k int) string {
			return fmt.Sprintf("{ ...F0 } #%d\n", k) +
				"fragment F0 on Query { users { ...U } search(text: \"o\") { ... on User { ...U } ... on Post { title user { ...U } } } }\n" +
				"fragment U on User { id name posts { id comments { text author { name } } } }"
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			s, _ := newTestSchema(t)
			s.Limits.MaxCost = 0 // the memory of large documents is what is measured
			s.cache = newLRU[string, *preparedDocument](1 << 40)
			// Costs are worked out and kept with each document, but none is
			// refused: some of these documents cost more than the default allows.
			s.Limits.MaxCost = 1 << 62
			const n = 20
			var estimate int64
			before := testkit.LiveHeap()
			for k := range n {
				q := kind.doc(k)
				if r := s.Execute(context.Background(), Request{Query: q}); len(r.Errors) > 0 {
					t.Fatal(ErrorList(r.Errors))
				}
				if _, ok := s.cache.get(q); !ok {
					t.Fatal("not cached")
				}
			}
			estimate = s.cache.cost()
			held := testkit.LiveHeap() - before
			if held > estimate {
				t.Errorf("%d documents hold %d bytes, estimated %d", n, held, estimate)
			}
			runtime.KeepAlive(s)
		})
	}
}
