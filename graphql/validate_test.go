package graphql

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// repeatFields returns "{ f(0) f(1) … }" with n fields made by field(i).
func repeatFields(n int, field func(i int) string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		b.WriteString(" ")
		b.WriteString(field(i))
	}
	b.WriteString(" }")
	return b.String()
}

// TestValidationErrorLimit checks graphql-js's maxErrors: after MaxErrors
// errors validation stops, with one more error saying so.
func TestValidationErrorLimit(t *testing.T) {
	s, _ := newTestSchema(t)
	tests := []struct {
		name, query string
		want        int // errors before the final one; -1: no final error
	}{
		{"99 unknown fields", repeatFields(99, func(i int) string { return fmt.Sprintf("nope%d", i) }), -1},
		{"100 unknown fields", repeatFields(100, func(i int) string { return fmt.Sprintf("nope%d", i) }), -1},
		{"101 unknown fields", repeatFields(101, func(i int) string { return fmt.Sprintf("nope%d", i) }), 100},
		{"1000 unknown fields", repeatFields(1000, func(i int) string { return fmt.Sprintf("nope%d", i) }), 100},
		// 300 fields with one response name and different arguments: 44,850
		// conflicting pairs, of which only the first are even looked for.
		{"300 conflicting fields", repeatFields(300, func(i int) string { return fmt.Sprintf("user(id: %d) { id }", i) }), 100},
		// The same inside one field: one conflict whose reason would list
		// every conflicting pair of subfields.
		{"conflicting subfields", "{ a: user(id: 1) { x: id x: name } a: user(id: 1) " +
			repeatFields(300, func(i int) string { return fmt.Sprintf("x: echo(text: \"%d\")", i) }) + " }", -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseDoc(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			errs := s.validate(doc)
			last := errs[len(errs)-1].Message
			switch {
			case tt.want == -1:
				if last == tooManyErrors || len(errs) > 100 {
					t.Errorf("%d errors, the last %q; want them all, and no final error", len(errs), last)
				}
			case tt.want == -2:
				if last != tooManyErrors || len(errs) > 101 {
					t.Errorf("%d errors, the last %q; want at most 100, then %q", len(errs), last, tooManyErrors)
				}
			default:
				if len(errs) != tt.want+1 || last != tooManyErrors {
					t.Errorf("%d errors, the last %q; want %d, then %q", len(errs), last, tt.want, tooManyErrors)
				}
			}
			// Each conflict found is a few dozen bytes, whatever its depth.
			if n := len(ErrorList(errs).Error()); n > 64<<10 {
				t.Errorf("%d bytes of errors", n)
			}
		})
	}
}

// TestFieldComparisonLimit checks that overlap checking stops after
// MaxFieldComparisons steps, valid document or not, and says why.
func TestFieldComparisonLimit(t *testing.T) {
	s, _ := newTestSchema(t)
	s.Limits.MaxFieldComparisons = 1000
	const refusal = "Query is too complex to validate: checking that its fields can be merged takes more than 1000 comparisons."
	tests := []struct {
		name, query, want string
	}{
		// n fields with one response name, written differently, are n(n-1)/2
		// pairs to compare; these pairs cost 2 steps each (the pair, and one
		// response name looked up in the other's subfields).
		{"20 different fields", repeatFields(20, func(i int) string { return fmt.Sprintf("user(id: 1) { a%d: id }", i) }), ""},
		{"40 different fields", repeatFields(40, func(i int) string { return fmt.Sprintf("user(id: 1) { a%d: id }", i) }), refusal},
		// Fields written alike are compared once, so they cost about a step
		// each (their numbering).
		{"200 identical fields", repeatFields(200, func(int) string { return "user(id: 1) { id name }" }), ""},
		{"46 identical fields", repeatFields(46, func(int) string { return "__typename" }), ""},
		// Fragments compared pairwise count too.
		{"fragments", repeatFields(60, func(i int) string { return fmt.Sprintf("...F%d", i) }) + fragmentsOnQuery(60), refusal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseDoc(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			errs := s.validate(doc)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", ErrorList(errs))
				}
				return
			}
			if len(errs) != 1 || errs[0].Message != tt.want {
				t.Fatalf("got %v, want the single error %q", ErrorList(errs), tt.want)
			}
		})
	}
}

// fragmentsOnQuery defines fragments F0…F(n-1) on Query, each selecting a
// few fields that the others select too.
func fragmentsOnQuery(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\nfragment F%d on Query { __typename a: __typename b: __typename }", i)
	}
	return b.String()
}

// TestOverlapClasses checks that comparing fields by classes of fields
// written alike reports what graphql-js's pairwise comparison does: the same
// errors, each with its locations in graphql-js's order.
func TestOverlapClasses(t *testing.T) {
	s, _ := newTestSchema(t)
	tests := []struct {
		name, query string
		want        []string // each error's locations, as line:column
	}{
		// Classes {1, 3} and {2, 4}, interleaved: each pair across them
		// conflicts, earlier field first.
		{"interleaved", "{\n x: echo(text: \"a\")\n x: echo(text: \"b\")\n x: echo(text: \"a\")\n x: echo(text: \"b\")\n}",
			[]string{"[2:2 3:2]", "[2:2 5:2]", "[3:2 4:2]", "[4:2 5:2]"}},
		// Fields written alike whose subfields conflict conflict with each
		// other too.
		{"alike but conflicting inside", "{\n a: user(id: 1) { x: id x: name }\n a: user(id: 1) { x: id x: name }\n}",
			[]string{"[2:19 2:25]", "[2:2 2:19 2:25 3:2 3:25 3:19]", "[3:19 3:25]"}},
		{"alike and mergeable", "{\n a: user(id: 1) { id }\n a: user(id: 1) { id }\n a: user(id: 1) { id }\n}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseDoc(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range validate(s, doc, []ruleFunc{overlappingFieldsCanBeMergedRule}) {
				var locs []string
				for _, l := range e.Locations {
					locs = append(locs, l.String())
				}
				got = append(got, fmt.Sprint(locs))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// BenchmarkOverlapManyArguments validates five fields of one response name
// with 1,300 arguments each, differing in the last ones: comparing their
// arguments must not be quadratic (it took 36 ms, now about 5).
func BenchmarkOverlapManyArguments(b *testing.B) {
	s, _ := newTestSchema(b)
	doc, err := parseDoc(repeatFields(5, func(f int) string {
		var args strings.Builder
		for i := range 1300 {
			fmt.Fprintf(&args, "a%d: %d ", i, min(i, 1299-f))
		}
		return "x: echo(" + args.String() + ")"
	}))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.validate(doc)
	}
}
