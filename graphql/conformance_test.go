package graphql

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

type conformanceFile struct {
	Schemas []struct {
		ID  string `json:"id"`
		SDL string `json:"sdl"`
	} `json:"schemas"`
	Tests []struct {
		Name   string `json:"name"`
		Rule   string `json:"rule"`
		Schema string `json:"schema"`
		Query  string `json:"query"`
		Errors []struct {
			Message   string     `json:"message"`
			Locations []Position `json:"locations"`
		} `json:"errors"`
	} `json:"tests"`
}

func locationKey(locs []Position) string { return fmt.Sprint(locs) }

// TestValidationConformance runs graphql-js's validation cases, each with the
// single rule it was written for, and requires the same validity, the same
// number of errors and the same locations (messages may differ).
func TestValidationConformance(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "conformance", "graphql", "validation-tests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cf conformanceFile
	if err := json.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*Schema{}
	for _, s := range cf.Schemas {
		sch, err := ParseSchema(s.SDL)
		if err != nil {
			t.Fatalf("schema %s: %v\n%s", s.ID, err, s.SDL)
		}
		// graphql-js's test schema defines CustomScalar with a parseLiteral
		// that accepts nothing; SDL cannot say that, so bind it here.
		if sch.Type("CustomScalar") != nil {
			sch.SetScalar("CustomScalar", ScalarFuncs{ParseLiteral: func(v *Value) (any, error) {
				return nil, fmt.Errorf("Expected value of type \"CustomScalar\", found %s.", printLiteral(v))
			}})
		}
		schemas[s.ID] = sch
	}
	if len(cf.Tests) != 407 {
		t.Errorf("expected 407 cases, found %d", len(cf.Tests))
	}
	passed := 0
	for _, tc := range cf.Tests {
		rule := rulesByName[tc.Rule]
		if rule == nil {
			t.Errorf("%s: rule %s not implemented", tc.Name, tc.Rule)
			continue
		}
		doc, err := parseDoc(tc.Query)
		if err != nil {
			t.Errorf("%s: parse: %v", tc.Name, err)
			continue
		}
		got := validate(schemas[tc.Schema], doc, []ruleFunc{rule})
		var want, have []string
		for _, e := range tc.Errors {
			want = append(want, locationKey(e.Locations))
		}
		for _, e := range got {
			have = append(have, locationKey(e.Locations))
		}
		sort.Strings(want)
		sort.Strings(have)
		if fmt.Sprint(want) != fmt.Sprint(have) {
			var msgs []string
			for _, e := range got {
				msgs = append(msgs, e.Error())
			}
			var wantMsgs []string
			for _, e := range tc.Errors {
				wantMsgs = append(wantMsgs, fmt.Sprintf("%s %v", e.Message, e.Locations))
			}
			t.Errorf("%s [%s]\nquery: %s\nwant: %q\ngot:  %q", tc.Name, tc.Rule, tc.Query, wantMsgs, msgs)
			continue
		}
		passed++
	}
	t.Logf("%d/%d validation cases agree", passed, len(cf.Tests))
}
