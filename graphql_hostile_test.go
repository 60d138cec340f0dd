package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"quartet/graphql"
	"quartet/internal/admission"
	"quartet/internal/testkit"
)

// The hostile GraphQL attacks on answer size, replayed against the real HTTP
// server on a store of 20,000 users: each is refused within the bounds
// docs/limits.md states, and what the README shows still runs under the defaults.

// hostileUsers is the store size of bench's hostile check (bench/README).
const hostileUsers = 20000

// hostileStore returns the store of hostileUsers users with two posts each
// and two comments on every post, by other users. It is made once and
// shared: the tests only read it, but for one README example's update of
// user 2's name.
func hostileStore(t testing.TB) *Store {
	t.Helper()
	testkit.SkipIfShort(t, "builds a store of 20,000 users with their posts and comments")
	s, err := sharedHostileStore()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var sharedHostileStore = sync.OnceValues(func() (*Store, error) {
	ds := &Dataset{}
	at := fixedTime.Add(-time.Hour)
	for i := range int64(hostileUsers) {
		id := i + 1
		ds.Users = append(ds.Users, User{ID: id, Name: fmt.Sprintf("User %d", id), Email: fmt.Sprintf("user%d@example.com", id), CreatedAt: at})
		for j := range int64(2) {
			pid := 2*i + j + 1
			ds.Posts = append(ds.Posts, Post{ID: pid, UserID: id, Title: fmt.Sprintf("Post %d", pid), Content: "Some words about something.", CreatedAt: at})
			for k := range int64(2) {
				author := (id+k)%hostileUsers + 1
				ds.Comments = append(ds.Comments, Comment{ID: 2*pid + k - 1, PostID: pid, AuthorID: author, Text: "A comment on it.", CreatedAt: at})
			}
		}
	}
	s := NewStore()
	s.clock = func() time.Time { return fixedTime }
	return s, s.Load(ds)
})

// graphqlAnswer is the part of a GraphQL response these tests read.
type graphqlAnswer struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// postGraphQL posts a GraphQL request and returns the status, the decoded answer and
// the answer's size.
func postGraphQL(t *testing.T, base, accept string, req map[string]any) (int, graphqlAnswer, int) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, _ := http.NewRequest("POST", base+"/graphql", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var a graphqlAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("answer is not JSON: %v: %.200s", err, raw)
	}
	return resp.StatusCode, a, len(raw)
}

// aliasAttack is the audit's document: 30 aliases of an 8-deep selection that
// fans out through four lists (2.8 KB, under every limit but cost).
func aliasAttack(comment string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range 30 {
		fmt.Fprintf(&b, " a%d: users { posts { comments { author { posts { comments { author { name email } } } } } } }", i)
	}
	b.WriteString(" }\n#" + comment)
	return b.String()
}

// TestGraphQLCostAttackRefused sends the 30-alias attack, with a different
// trailing comment each time so that no cached document helps: every request
// is refused with COST_LIMIT_EXCEEDED and the estimated cost over the limit (it
// took 38 s to answer before the cost bound), with no data, so before anything is
// resolved, and the heap does not grow.
func TestGraphQLCostAttackRefused(t *testing.T) {
	ts := newTestServer(t, hostileStore(t))
	if q := aliasAttack("0"); len(q) < 2700 || len(q) > 3000 {
		t.Fatalf("the attack is %d bytes, not the audit's 2.8 KB", len(q))
	}
	before := testkit.LiveHeap()
	for i := range 20 {
		accept, wantStatus := "", http.StatusOK
		if i%2 == 1 {
			accept, wantStatus = "application/graphql-response+json", http.StatusBadRequest
		}
		status, a, _ := postGraphQL(t, ts.URL, accept, map[string]any{"query": aliasAttack(fmt.Sprint(i))})
		if status != wantStatus || a.Data != nil || len(a.Errors) != 1 {
			t.Fatalf("request %d: status %d, %d errors, data %s; want %d, one error, no data", i, status, len(a.Errors), a.Data, wantStatus)
		}
		e := a.Errors[0]
		cost, _ := e.Extensions["cost"].(float64)
		if e.Extensions["code"] != graphql.CodeCostLimitExceeded || cost <= float64(graphql.DefaultLimits.MaxCost) {
			t.Fatalf("request %d: extensions %v", i, e.Extensions)
		}
		if want := fmt.Sprintf("estimated cost is %.0f, over the limit of %d", cost, graphql.DefaultLimits.MaxCost); !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not say %q", e.Message, want)
		}
	}
	if grew := testkit.LiveHeap() - before; grew > 8<<20 {
		t.Errorf("heap grew by %d bytes over 20 refused requests", grew)
	}
}

// TestGraphQLCostOverWebSocket subscribes over a WebSocket with a selection
// over the cost limit: the subscription is refused with an error message
// carrying COST_LIMIT_EXCEEDED, and the socket stays usable.
func TestGraphQLCostOverWebSocket(t *testing.T) {
	a, _ := startApp(t, testConfig())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c := dialGraphQLSocket(t, ctx, a.httpAddr)
	defer c.CloseNow()
	var msg struct {
		Type    string
		ID      string
		Payload []struct {
			Message    string
			Extensions map[string]any
		}
	}
	wsjson.Write(ctx, c, map[string]any{"type": "connection_init"})
	if err := wsjson.Read(ctx, c, &msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("ack: %+v %v", msg, err)
	}
	costly := "subscription { onUserCreated { posts { comments { author { posts { comments { author { posts { comments { text } } } } } } } } } }"
	for _, id := range []string{"1", "2"} {
		wsjson.Write(ctx, c, map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": costly}})
		if err := wsjson.Read(ctx, c, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Type != "error" || msg.ID != id || len(msg.Payload) != 1 || msg.Payload[0].Extensions["code"] != graphql.CodeCostLimitExceeded {
			t.Errorf("subscribe %s: %+v", id, msg)
		}
	}
}

// TestGraphQLAnswerSizeBound sends what the cost bound lets through but the
// store makes large: two aliases of every user with their posts, comments
// and authors come to about 23 MB on this store (one is 11 MB). The execution
// stops at the default 16 MiB and answers one error, and the heap is given back.
func TestGraphQLAnswerSizeBound(t *testing.T) {
	ts := newTestServer(t, hostileStore(t))
	one := "users { name email posts { title content comments { text author { name email } } } }"
	q := "{ a: " + one + " b: " + one + " }"
	before := testkit.LiveHeap()
	status, a, size := postGraphQL(t, ts.URL, "", map[string]any{"query": q})
	if status != http.StatusOK || string(a.Data) != "null" || len(a.Errors) != 1 || a.Errors[0].Extensions["code"] != graphql.CodeResponseTooLarge {
		t.Fatalf("status %d, %d errors (%v), data %.100s", status, len(a.Errors), a.Errors, a.Data)
	}
	if size > 1000 {
		t.Errorf("the refusal is %d bytes", size)
	}
	if grew := testkit.LiveHeap() - before; grew > 8<<20 {
		t.Errorf("heap grew by %d bytes after the stopped execution", grew)
	}
}

// TestGraphQLLimitOptions checks that the server's options reach the schema:
// a cost limit of 100 and an answer limit of 64 KiB.
func TestGraphQLLimitOptions(t *testing.T) {
	ts := httptest.NewServer(NewServer(hostileStore(t), slog.New(slog.DiscardHandler), serverOptions{graphqlMaxCost: 100, graphqlMaxBytes: 64 << 10}))
	t.Cleanup(ts.Close)
	for _, tt := range []struct{ query, code string }{
		{"{ users { id } }", graphql.CodeResponseTooLarge},       // cost 51, about 200 KB
		{"{ users { id name } }", graphql.CodeCostLimitExceeded}, // cost 101
		{"{ user(id: 7) { name posts { title } } }", ""},         // cost 13
	} {
		_, a, _ := postGraphQL(t, ts.URL, "", map[string]any{"query": tt.query})
		code := ""
		if len(a.Errors) > 0 {
			code, _ = a.Errors[0].Extensions["code"].(string)
		}
		if code != tt.code {
			t.Errorf("%s: code %q, want %q (%v)", tt.query, code, tt.code, a.Errors)
		}
	}
}

// TestGraphQLLimitFlags checks that the two flags refuse what is not a positive
// number.
func TestGraphQLLimitFlags(t *testing.T) {
	free := []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}
	for _, args := range [][]string{
		{"-graphql-max-cost", "0"},
		{"-graphql-max-response-bytes", "-1"},
	} {
		err := run(t.Context(), append(free, args...), envFrom(nil), io.Discard, io.Discard)
		if err == nil || err.Error() != "-graphql-max-cost and -graphql-max-response-bytes must be positive" {
			t.Errorf("run %v: err = %v", args, err)
		}
	}
}

// TestGraphQLReadmeExamplesWithinLimits runs the README's GraphQL examples, the
// editor's introspection query and graphql-js's standard one on the large store
// under the default limits: none is refused.
func TestGraphQLReadmeExamplesWithinLimits(t *testing.T) {
	ts := newTestServer(t, hostileStore(t))
	editor, err := os.ReadFile(filepath.Join("graphql", "editor", "editor.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)const INTROSPECTION_QUERY = `(.*?)`").FindSubmatch(editor)
	if m == nil {
		t.Fatal("no INTROSPECTION_QUERY in graphql/editor/editor.js")
	}
	requests := []map[string]any{
		// README "GraphQL": the first two are POSTed, the third is a GET.
		{"query": "{ users { name posts(limit: 1) { title comments { text author { name } } } } }"},
		{"query": `mutation ($id: Int!) { updateUser(id: $id, name: "Bobby") { id name email } }`, "variables": map[string]any{"id": 2}},
		{"query": "{ user(id: 1) { name createdAt } }"},
		// bench/README.md ("Scenarios and targets").
		{"query": "{ users { name posts(limit: 2) { title comments { text } } } }"},
		{"query": string(m[1]), "operationName": "IntrospectionQuery"},
		{"query": graphqlJSIntrospectionQuery, "operationName": "IntrospectionQuery"},
	}
	for _, req := range requests {
		status, a, size := postGraphQL(t, ts.URL, "", req)
		if status != http.StatusOK || len(a.Errors) != 0 || len(a.Data) < 20 {
			t.Errorf("%.60s: status %d, errors %v, %d bytes", req["query"], status, a.Errors, size)
		}
	}
	// The GET of the README.
	resp, err := http.Get(ts.URL + "/graphql?query=" + url.QueryEscape("{ user(id: 1) { name createdAt } }"))
	if err != nil {
		t.Fatal(err)
	}
	var a graphqlAnswer
	json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(a.Errors) != 0 {
		t.Errorf("GET: %d %v", resp.StatusCode, a.Errors)
	}
}

// graphqlJSIntrospectionQuery is what graphql-js 16's getIntrospectionQuery
// returns with every option on (descriptions, specifiedByUrl,
// directiveIsRepeatable, schemaDescription, inputValueDeprecation), which
// clients such as GraphiQL send.
const graphqlJSIntrospectionQuery = `
    query IntrospectionQuery {
      __schema {
        description
        queryType { name }
        mutationType { name }
        subscriptionType { name }
        types {
          ...FullType
        }
        directives {
          name
          description
          isRepeatable
          locations
          args(includeDeprecated: true) {
            ...InputValue
          }
        }
      }
    }

    fragment FullType on __Type {
      kind
      name
      description
      specifiedByURL
      
      fields(includeDeprecated: true) {
        name
        description
        args(includeDeprecated: true) {
          ...InputValue
        }
        type {
          ...TypeRef
        }
        isDeprecated
        deprecationReason
      }
      inputFields(includeDeprecated: true) {
        ...InputValue
      }
      interfaces {
        ...TypeRef
      }
      enumValues(includeDeprecated: true) {
        name
        description
        isDeprecated
        deprecationReason
      }
      possibleTypes {
        ...TypeRef
      }
    }

    fragment InputValue on __InputValue {
      name
      description
      type { ...TypeRef }
      defaultValue
      isDeprecated
      deprecationReason
    }

    fragment TypeRef on __Type {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
                ofType {
                  kind
                  name
                  ofType {
                    kind
                    name
                    ofType {
                      kind
                      name
                      ofType {
                        kind
                        name
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  `

// TestGraphQLWebSocketUnreadAnswersBound: the service counts what waits for a
// WebSocket whose client does not read in the client's answers budget
// (-client-answer-bytes): pongs of a ping flood pile up to it, no further,
// and the socket is then closed with 1013 after them.
func TestGraphQLWebSocketUnreadAnswersBound(t *testing.T) {
	cfg := testConfig()
	cfg.admission.ClientAnswerBytes = admission.AnswerGrace
	a, logs := startApp(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := dialGraphQLSocket(t, ctx, a.httpAddr)
	defer c.CloseNow()
	c.SetReadLimit(-1)
	wsjson.Write(ctx, c, map[string]any{"type": "connection_init"})
	if _, msg, err := c.Read(ctx); err != nil || string(msg) != `{"type":"connection_ack"}` {
		t.Fatalf("ack: %s %v", msg, err)
	}
	for _, id := range []string{"a", "b"} { // with two operations every message is queued
		wsjson.Write(ctx, c, map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": "subscription { onUserCreated { id } }"}})
	}
	ping := []byte(`{"type":"ping","payload":{"s":"` + strings.Repeat("x", 256<<10) + `"}}`)
	go func() { // until the server stops reading
		for c.Write(ctx, websocket.MessageText, ping) == nil {
		}
	}()
	testkit.Eventually(t, func() error {
		if !strings.Contains(logs.String(), "answer bytes waiting to be read refused") {
			return fmt.Errorf("no refusal logged")
		}
		return nil
	})
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Errorf("the socket ended with %v, want close 1013", err)
			}
			break
		}
		if !strings.HasPrefix(string(msg), `{"type":"pong"`) {
			t.Fatalf("message %.40s", msg)
		}
	}
}

// dialGraphQLSocket opens a graphql-transport-ws socket to /graphql at httpAddr.
func dialGraphQLSocket(t *testing.T, ctx context.Context, httpAddr string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws://"+httpAddr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
