package graphql

import (
	"cmp"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func postBody(h *Handler, accept, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHandlerBatchRefusals: arrays are refused while batching is off, and when
// empty or over the cap, as a request error before anything runs.
func TestHandlerBatchRefusals(t *testing.T) {
	s, _ := newTestSchema(t)
	one := `{"query":"{ __typename }"}`
	for _, tc := range []struct {
		name     string
		maxBatch int
		body     string
		want     string
	}{
		{"off", 0, "[" + one + "]", "Batched requests (a JSON array of operations) are not accepted by this server; send one operation per request."},
		{"empty", 3, "[]", "The batch is an empty array; it must hold at least one operation."},
		{"over the cap", 3, "[" + strings.Repeat(one+",", 3) + one + "]", "The batch holds 4 operations; at most 3 are accepted in one request."},
		{"not JSON", 3, "[" + one, "The request body is not a JSON array of operations: unexpected end of JSON input."},
		// The array's levels count: its operations' variables may nest one level
		// less than a lone operation's.
		{"nested too deep", 3, `[{"query":"{ __typename }","variables":{"v":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}]`,
			"The request body is not a JSON array of operations: arrays and objects nested deeper than 64 levels at byte 105."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(s)
			h.MaxBatch = tc.maxBatch
			for _, accept := range []string{"", mediaGraphQLResponse} {
				wantAnswer(t, postBody(h, accept, tc.body), 400, `{"errors":[{"message":`+strconvQuote(tc.want)+`,"extensions":{"code":"BAD_USER_INPUT"}}]}`)
			}
		})
	}
	h := NewHandler(s)
	h.MaxBatch, h.MaxBytes = 3, 64
	wantAnswer(t, postBody(h, "", "["+one+","+one+","+one+"]"), 413, `{"errors":[{"message":"The request body is larger than 64 bytes.","extensions":{"code":"BAD_USER_INPUT"}}]}`)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHandlerBatchAsIfAlone: each operation of a batch is answered exactly as it
// would be if sent alone (its data or errors, its limits, its persisted query),
// the answers in order in one array, status 200.
func TestHandlerBatchAsIfAlone(t *testing.T) {
	s, _ := newTestSchema(t)
	s.Limits.MaxDepth = 3
	deep := "{ user(id: 1) { posts { user { posts { id } } } } }"
	ops := []string{
		`{"query":"{ user(id: 1) { name } }"}`,
		`{"query":"query Who($id: Int!) { user(id: $id) { name } }","variables":{"id":2}}`,
		`{"query":"` + deep + `"}`, // over the depth limit, as it would be alone
		`{"query":"{"}`,
		`{"query":"{ user(id: 3) { name } }","extensions":` + apqExtensions(sha256Hex("{ user(id: 3) { name } }")) + `}`,
		`{"extensions":` + apqExtensions(sha256Hex("{ __typename }")) + `}`, // an unknown hash
		`{"variables":{}}`,
		`{"query":"{ __typename }","query":"mutation { x }"}`,
		`{"query":"mutation { deleteUser(id: 99) }"}`,
		`7`,
		`{"query":"{ echo(text: \"\ud800\") }"}`, // refused as alone, in its own answer
	}
	var want []string
	for i, op := range ops {
		w := postBody(NewHandler(s), "", op)
		// A body that is not an operation is told apart by its place in the batch.
		want = append(want, strings.Replace(strings.TrimSuffix(w.Body.String(), "\n"),
			"The request body is not", "Operation "+strconv.Itoa(i)+" of the batch is not", 1))
	}
	h := NewHandler(s)
	h.MaxBatch = len(ops)
	for _, accept := range []string{"", mediaGraphQLResponse} {
		w := postBody(h, accept, "["+strings.Join(ops, ",\n")+"]")
		got := strings.TrimSuffix(w.Body.String(), "\n")
		if w.Code != 200 {
			t.Errorf("Accept %q: status %d, want 200", accept, w.Code)
		}
		if wantCT := cmp.Or(accept, mediaJSON) + "; charset=utf-8"; w.Header().Get("Content-Type") != wantCT {
			t.Errorf("Accept %q: Content-Type %q, want %q", accept, w.Header().Get("Content-Type"), wantCT)
		}
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(got), &items); err != nil {
			t.Fatalf("answer is not a JSON array: %v\n%s", err, got)
		}
		if len(items) != len(ops) {
			t.Fatalf("%d answers for %d operations:\n%s", len(items), len(ops), got)
		}
		for i := range ops {
			if string(items[i]) != want[i] {
				t.Errorf("operation %d %s\n in the batch %s\n        alone %s", i, ops[i], items[i], want[i])
			}
		}
	}
	if !strings.Contains(want[0], `"Alice"`) || !strings.Contains(want[2], "depth") || !strings.Contains(want[5], codePersistedQueryNotFound) ||
		!strings.Contains(want[9], "Operation 9 of the batch is not a JSON object") || !strings.Contains(want[10], "unpaired surrogate") {
		t.Errorf("the operations do not test what they are meant to: %q", want)
	}
	// The batch registered the persisted query it carried, as a lone request does.
	wantAnswer(t, postBody(h, "", `{"extensions":`+apqExtensions(sha256Hex("{ user(id: 3) { name } }"))+`}`), 200, `{"data":{"user":{"name":"Carol"}}}`)
}

// TestHandlerBatchAnswerBounded: a batch's array is bounded as one answer is; past
// Limits.MaxResponseBytes the operations left do not run.
func TestHandlerBatchAnswerBounded(t *testing.T) {
	s, _ := newTestSchema(t)
	s.Limits.MaxResponseBytes = 40
	h := NewHandler(s)
	h.MaxBatch = 3
	one := `{"query":"{ __typename }"}`
	w := postBody(h, "", "["+one+","+one+","+one+"]")
	var answers []struct {
		Data   map[string]any
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &answers); err != nil || w.Code != 200 || len(answers) != 3 {
		t.Fatalf("%d %s (%v)", w.Code, w.Body, err)
	}
	if answers[0].Data == nil || answers[1].Data == nil {
		t.Errorf("the first two operations, within the bound, did not run: %s", w.Body)
	}
	if e := answers[2].Errors; answers[2].Data != nil || len(e) != 1 || e[0].Extensions["code"] != CodeResponseTooLarge ||
		e[0].Message != "Operation 2 of the batch did not run: the answers before it passed 40 bytes." {
		t.Errorf("the third operation, past the bound: %s", w.Body)
	}
}
