package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"quartet/graphql"
	"quartet/internal/testkit"
	"quartet/userpb"
)

// TestSchemaKeepsTheContract checks that every type, field and argument of the
// contract's schema (testdata/contract/schema.graphql, frozen) is in schema.graphql
// with the same type: extras are welcome, changes are not.
func TestSchemaKeepsTheContract(t *testing.T) {
	contract, err := os.ReadFile(filepath.Join("testdata", "contract", "schema.graphql"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := graphql.ParseSchema(string(contract))
	if err != nil {
		t.Fatalf("the contract's schema: %v", err)
	}
	got := newGraphQLSchema(NewStore(), nil, discardLogger(), 12)
	for _, wt := range want.Types() {
		if strings.HasPrefix(wt.Name, "__") {
			continue
		}
		gt := got.Type(wt.Name)
		if gt == nil || gt.Kind != wt.Kind {
			t.Errorf("type %s missing or of another kind", wt.Name)
			continue
		}
		for _, wf := range wt.Fields {
			gf := gt.Field(wf.Name)
			if gf == nil || gf.Type.String() != wf.Type.String() {
				t.Errorf("%s.%s: want %s", wt.Name, wf.Name, wf.Type)
				continue
			}
			if len(gf.Args) != len(wf.Args) {
				t.Errorf("%s.%s: %d arguments, want %d", wt.Name, wf.Name, len(gf.Args), len(wf.Args))
			}
			for i, wa := range wf.Args {
				if i < len(gf.Args) && (gf.Args[i].Name != wa.Name || gf.Args[i].Type.String() != wa.Type.String()) {
					t.Errorf("%s.%s(%s: %s): got %s: %s", wt.Name, wf.Name, wa.Name, wa.Type, gf.Args[i].Name, gf.Args[i].Type)
				}
			}
		}
	}
}

// TestGraphQLIntrospectionRoundTrip asks the running service the standard introspection
// query and has graphql-js build a client schema from the answer and print it: the
// result must be schema.graphql as graphql-js prints it.
func TestGraphQLIntrospectionRoundTrip(t *testing.T) {
	testkit.RequireNode(t, filepath.Join("graphql", "testdata", "js"), "graphql")
	jsDir, _ := filepath.Abs(filepath.Join("graphql", "testdata", "js"))
	node := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("node", append([]string{filepath.Join(jsDir, "check.mjs")}, args...)...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("node %v: %v\n%s", args, err, ee.Stderr)
			}
			t.Fatal(err)
		}
		return string(out)
	}
	ts := newTestServer(t, newTestStore(t))
	body, _ := json.Marshal(map[string]string{"query": node("query")})
	resp, err := http.Post(ts.URL+"/graphql", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	result, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	file := filepath.Join(t.TempDir(), "introspection.json")
	os.WriteFile(file, result, 0o644)
	printed := node("print", file)
	wantSDL, _ := filepath.Abs("schema.graphql")
	if want := node("sdl", wantSDL); printed != want {
		t.Errorf("graphql-js printed a different schema from the introspection result\n--- got\n%s\n--- want\n%s", printed, want)
	}
}

// createUserOnEverySurface creates the users Rest over REST, Grpc over gRPC and Gql
// over GraphQL, in that order.
func createUserOnEverySurface(t *testing.T, a *app) {
	t.Helper()
	resp, err := http.Post("http://"+a.httpAddr+"/api/users", "application/json", strings.NewReader(`{"name":"Rest","email":"rest@example.com"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("REST create: %v %v", resp, err)
	}
	resp.Body.Close()
	stream, err := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr)).CreateUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(&userpb.CreateUserRequest{Name: "Grpc", Email: "grpc@example.com"})
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Post("http://"+a.httpAddr+"/graphql", "application/json", strings.NewReader(`{"query":"mutation { createUser(name: \"Gql\", email: \"gql@example.com\") { id } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestOnUserCreatedFromEverySurface subscribes to onUserCreated and creates a user over
// REST, gRPC and GraphQL: each arrives, in order, with exactly the selected fields.
func TestOnUserCreatedFromEverySurface(t *testing.T) {
	a, _ := startApp(t, testConfig())
	schema := newGraphQLSchema(a.store, nil, discardLogger(), 12)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events, err := schema.Subscribe(ctx, graphql.Request{Query: "subscription { onUserCreated { name id } }"})
	if err != nil {
		t.Fatal(err)
	}
	createUserOnEverySurface(t, a)
	for i, want := range []string{
		`{"data":{"onUserCreated":{"name":"Rest","id":7}}}`,
		`{"data":{"onUserCreated":{"name":"Grpc","id":8}}}`,
		`{"data":{"onUserCreated":{"name":"Gql","id":9}}}`,
	} {
		select {
		case ev := <-events:
			got, _ := json.Marshal(ev)
			if string(got) != want {
				t.Errorf("event %d = %s, want %s", i, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d did not arrive", i)
		}
	}
}

func TestGraphQLAuth(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	a, logs := startApp(t, cfg)
	post := func(token, query string) string {
		req, _ := http.NewRequest("POST", "http://"+a.httpAddr+"/graphql", strings.NewReader(`{"query":`+strconvQuote(query)+`}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	mutation := `mutation { createUser(name: "A", email: "a@example.com") { id } }`
	if got := post("", mutation); !strings.Contains(got, `"code":"UNAUTHENTICATED"`) || !strings.Contains(got, `"message":"token missing"`) {
		t.Errorf("no token: %s", got)
	}
	if got := post("garbage", mutation); !strings.Contains(got, `"code":"UNAUTHENTICATED"`) {
		t.Errorf("bad token: %s", got)
	}
	if got := post(testToken(t, "read"), mutation); !strings.Contains(got, `"code":"FORBIDDEN"`) {
		t.Errorf("no write scope: %s", got)
	}
	if got := post(testToken(t, "write"), mutation); got != `{"data":{"createUser":{"id":7}}}` {
		t.Errorf("write scope: %s", got)
	}
	if got := post("", `{ user(id: 7) { name } }`); got != `{"data":{"user":{"name":"A"}}}` {
		t.Errorf("reads stay open: %s", got)
	}
	if !regexp.MustCompile(`method=POST path=/graphql status=200 .* sub=alice`).MatchString(logs.String()) {
		t.Errorf("no log line naming the GraphQL caller:\n%s", logs)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSlowSubscriberEndsWithError: a subscriber that stops reading does not hold up
// writers; once it is more than the buffer behind, its stream ends with an error.
func TestSlowSubscriberEndsWithError(t *testing.T) {
	store := newTestStore(t)
	schema := newGraphQLSchema(store, nil, discardLogger(), 12)
	events, err := schema.Subscribe(t.Context(), graphql.Request{Query: "subscription { onUserCreated { id } }"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, subscribersReach(store, 1))
	for i := range subscriptionBuffer + 10 { // nobody reads meanwhile; these must not block
		if _, err := store.CreateUser("U", fmt.Sprintf("u%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var last *graphql.Response
	for resp := range events {
		n++
		last = resp
	}
	if last == nil || len(last.Errors) != 1 || !strings.Contains(last.Errors[0].Message, "fell behind") {
		t.Fatalf("after %d events the last was %+v, want the fell-behind error", n, last)
	}
	if n < subscriptionBuffer || n > subscriptionBuffer+3 {
		t.Errorf("%d events before the end, want about the buffer (%d)", n, subscriptionBuffer)
	}
}
