package graphql

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandlerMessagesNameNoGoType: what a client reads names GraphQL and JSON
// things, never this server's Go types.
func TestHandlerMessagesNameNoGoType(t *testing.T) {
	s, _ := newTestSchema(t)
	s.SetResolver("Query", "users", func(p ResolveParams) (any, error) { return 42, nil })
	resp := s.Execute(context.Background(), Request{Query: "{ users { id } }"})
	b, _ := json.Marshal(resp)
	const want = `{"errors":[{"message":"Expected Iterable, but did not find one for field \"users\".","locations":[{"line":1,"column":3}],"path":["users"]}],"data":null}` // users is [User!]!
	if string(b) != want {
		t.Errorf("a resolver's non-list for a list:\n got %s\nwant %s", b, want)
	}
	for _, body := range []string{`{"query":1}`, `{"operationName":{}}`, `[]`, `"query"`, `{"query":"{ __typename }","variables":"x"}`} {
		r := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		NewHandler(s).ServeHTTP(w, r)
		if got := w.Body.String(); strings.Contains(got, "Go ") || strings.Contains(got, "httpParams") || strings.Contains(got, "json:") {
			t.Errorf("%s: %s", body, got)
		}
	}
}
