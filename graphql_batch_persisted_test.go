package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket/wsjson"
)

// pinnedQuery is the operation of the manifest the tests below pin.
const pinnedQuery = "query Pinned { user(id: 1) { name } }"

// writeManifest writes an Apollo persisted query manifest of queries (ids as its
// generator makes them) and returns its path.
func writeManifest(t *testing.T, queries ...string) string {
	t.Helper()
	type op struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
		Body string `json:"body"`
	}
	m := struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		Operations []op   `json:"operations"`
	}{Format: "apollo-persisted-query-manifest", Version: 1}
	for _, q := range queries {
		sum := sha256.Sum256([]byte(q))
		m.Operations = append(m.Operations, op{ID: hex.EncodeToString(sum[:]), Name: "Op", Type: "query", Body: q})
	}
	data, _ := json.Marshal(m)
	file := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestRunRefusesGraphQLBatchAndPersistedFlags: out-of-range batch caps, persisted-only
// without a list, and a manifest that cannot be read or does not fit the schema stop
// the service at start-up, each with a one-line reason.
func TestRunRefusesGraphQLBatchAndPersistedFlags(t *testing.T) {
	dir := t.TempDir()
	invalid := writeManifest(t, "{ nope }")
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxManifestBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	free := []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(free, "-graphql-batch-max", "-1"), "-graphql-batch-max must be between 0 (no batching) and 100"},
		{append(free, "-graphql-batch-max", "101"), "-graphql-batch-max must be between 0 (no batching) and 100"},
		{append(free, "-graphql-persisted-only"), "-graphql-persisted-only needs -graphql-persisted-queries, the file of the operations to allow"},
		{append(free, "-graphql-persisted-queries", filepath.Join(dir, "none.json")), "-graphql-persisted-queries: " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{append(free, "-graphql-persisted-queries", big), "-graphql-persisted-queries: " + big + " is larger than 16777216 bytes"},
		{append(free, "-graphql-persisted-queries", invalid), "-graphql-persisted-queries " + invalid + `: operation 0 (Op): Cannot query field "nope" on type "Query". at 1:3`},
	} {
		err := run(t.Context(), tt.args, envFrom(nil), io.Discard, io.Discard)
		if err == nil || err.Error() != tt.want {
			t.Errorf("run %v:\n got %v\nwant %s", tt.args, err, tt.want)
		}
	}
}

// TestGraphQLBatchAndPersistedOnlyServed: the flags reach the GraphQL endpoint of
// the running service: a batch within -graphql-batch-max is answered in order and
// one over it refused; with -graphql-persisted-only the pinned operation runs by its
// hash from the first request, and a document is refused, over HTTP and WebSocket.
func TestGraphQLBatchAndPersistedOnlyServed(t *testing.T) {
	cfg := testConfig()
	cfg.graphqlBatchMax = 2
	cfg.graphqlPQFile = writeManifest(t, pinnedQuery)
	cfg.graphqlPQOnly = true
	a, _ := startApp(t, cfg)
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+a.httpAddr+"/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSuffix(string(b), "\n")
	}
	byHash := `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + sha256Of(pinnedQuery) + `"}}}`
	const alice = `{"data":{"user":{"name":"Alice Johnson"}}}`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"pinned by hash", byHash, 200, alice},
		{"batch of two", "[" + byHash + `,{"query":"{ __typename }"}]`, 200,
			"[" + alice + `,{"errors":[{"message":"This server runs only persisted operations: send the operation's SHA-256 in extensions.persistedQuery, not its document.","extensions":{"code":"PERSISTED_QUERY_ID_REQUIRED"}}]}]`},
		{"batch over the cap", "[" + byHash + "," + byHash + "," + byHash + "]", 400,
			`{"errors":[{"message":"The batch holds 3 operations; at most 2 are accepted in one request.","extensions":{"code":"BAD_USER_INPUT"}}]}`},
		{"a document", `{"query":"{ __typename }"}`, 400,
			`{"errors":[{"message":"This server runs only persisted operations: send the operation's SHA-256 in extensions.persistedQuery, not its document.","extensions":{"code":"PERSISTED_QUERY_ID_REQUIRED"}}]}`},
	} {
		if status, got := post(tc.body); status != tc.status || got != tc.want {
			t.Errorf("%s: %d %s\nwant %d %s", tc.name, status, got, tc.status, tc.want)
		}
	}

	// The WebSocket side holds to the same list: a subscription not in it is refused.
	c := dialSubscription(t, a.httpAddr, "subscription { onUserCreated { id } }")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var msg struct {
		Type    string `json:"type"`
		Payload []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"payload"`
	}
	if err := wsjson.Read(ctx, c, &msg); err != nil || msg.Type != "error" || len(msg.Payload) != 1 || msg.Payload[0].Extensions["code"] != "PERSISTED_QUERY_NOT_IN_LIST" {
		t.Errorf("a subscription not in the list: %+v %v", msg, err)
	}
}
