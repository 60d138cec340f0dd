package graphql

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// manifestOf is an Apollo persisted query manifest of queries, ids as its generator writes them.
func manifestOf(queries ...string) []byte {
	var ops []string
	for i, q := range queries {
		body, _ := json.Marshal(q)
		ops = append(ops, `{"id":"`+sha256Hex(q)+`","name":"Op`+strconv.Itoa(i)+`","type":"query","body":`+string(body)+`}`)
	}
	return []byte(`{"format":"apollo-persisted-query-manifest","version":1,"operations":[` + strings.Join(ops, ",") + `]}`)
}

// TestPinManifestRefuses: a manifest that is not Apollo's, whose ids are not the
// hashes of their bodies, or whose operations do not validate against the schema
// is refused whole, pinning nothing.
func TestPinManifestRefuses(t *testing.T) {
	s, _ := newTestSchema(t)
	tooMany := `{"format":"apollo-persisted-query-manifest","version":1,"operations":[` +
		strings.TrimSuffix(strings.Repeat(`{"id":"x","body":"{ __typename }"},`, maxManifestOperations+1), ",") + `]}`
	for _, tc := range []struct{ name, manifest, want string }{
		{"not JSON", `{`, "not a persisted query manifest: unexpected end of JSON input"},
		{"another format", `{"format":"relay","version":1,"operations":[]}`, `format "relay" version 1, want apollo-persisted-query-manifest version 1`},
		{"id not the hash", `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"` + sha256Hex("{ a }") + `","name":"A","body":"{ __typename }"}]}`,
			`operation 0 (A): id "` + sha256Hex("{ a }") + `" is not the SHA-256 of its body`},
		{"invalid operation", string(manifestOf(apqQuery, "{ nope }")), `operation 1 (Op1): Cannot query field "nope" on type "Query". at 1:3`},
		{"too many", tooMany, "10001 operations, at most 10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newPersistedQueries(defaultPersistedQueryBytes)
			n, err := c.PinManifest(s, []byte(tc.manifest))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %s", err, tc.want)
			}
			if n != 0 || c.Len() != 0 {
				t.Errorf("%d pinned, %d held after a refused manifest", n, c.Len())
			}
		})
	}
}

// TestHandlerPersistedOnly: with PersistedOnly, only the manifest's operations
// run, named by their hash; a document alone, an unknown hash, or a document sent
// with its own hash are refused with the codes of Apollo's router, and nothing is
// learnt from them.
func TestHandlerPersistedOnly(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	h.PersistedOnly = true
	if n, err := h.PersistedQueries.PinManifest(s, manifestOf(apqQuery)); n != 1 || err != nil {
		t.Fatalf("PinManifest: %d, %v", n, err)
	}
	pinned := json.RawMessage(apqExtensions(sha256Hex(apqQuery)))
	other := "{ user(id: 2) { name } }"
	otherExt := json.RawMessage(apqExtensions(sha256Hex(other)))
	const (
		idRequired = `{"errors":[{"message":"This server runs only persisted operations: send the operation's SHA-256 in extensions.persistedQuery, not its document.","extensions":{"code":"PERSISTED_QUERY_ID_REQUIRED"}}]}`
		notInList  = `{"errors":[{"message":"The persisted operation is not in this server's list of allowed operations.","extensions":{"code":"PERSISTED_QUERY_NOT_IN_LIST"}}]}`
	)
	for _, accept := range []string{"", mediaGraphQLResponse} {
		wantAnswer(t, apqPost(h, accept, map[string]any{"extensions": pinned}), 200, apqData)
		wantAnswer(t, apqPost(h, accept, map[string]any{"query": apqQuery, "extensions": pinned}), 200, apqData)
		wantAnswer(t, apqPost(h, accept, map[string]any{"query": apqQuery}), 400, idRequired)
		wantAnswer(t, apqPost(h, accept, map[string]any{"query": other, "extensions": otherExt}), 400, notInList)
		wantAnswer(t, apqPost(h, accept, map[string]any{"extensions": otherExt}), 400, notInList)
		wantAnswer(t, apqPost(h, accept, map[string]any{"extensions": json.RawMessage(apqExtensions("nothex"))}), 400, notInList)
	}
	wantAnswer(t, apqGet(h, url.Values{"extensions": {string(pinned)}}), 200, apqData)
	wantAnswer(t, apqGet(h, url.Values{"query": {apqQuery}}), 400, idRequired)
	if n := h.PersistedQueries.Len(); n != 1 {
		t.Errorf("%d queries held, want the 1 pinned: a refused document was learnt", n)
	}

	// In a batch, each operation is held to the same rule.
	h.MaxBatch = 3
	body, _ := json.Marshal([]map[string]any{{"extensions": pinned}, {"query": apqQuery}, {"extensions": otherExt}})
	wantAnswer(t, postBody(h, "", string(body)), 200, "["+apqData+","+idRequired+","+notInList+"]")
}

// TestHandlerPinnedWithoutPersistedOnly: pinned operations are known from the
// first request (no PERSISTED_QUERY_NOT_FOUND round trip) and are never
// forgotten, however many other queries pass through the cache; other
// documents still run and register as usual.
func TestHandlerPinnedWithoutPersistedOnly(t *testing.T) {
	s, _ := newTestSchema(t)
	h := NewHandler(s)
	h.PersistedQueries = newPersistedQueries(16 * 1024) // room for a few entries only
	if _, err := h.PersistedQueries.PinManifest(s, manifestOf(apqQuery)); err != nil {
		t.Fatal(err)
	}
	pinned := json.RawMessage(apqExtensions(sha256Hex(apqQuery)))
	wantAnswer(t, apqPost(h, "", map[string]any{"extensions": pinned}), 200, apqData)
	for i := range 200 {
		q := "{ user(id: 1) { a" + strconv.Itoa(i) + ": name } }"
		w := apqPost(h, "", map[string]any{"query": q, "extensions": json.RawMessage(apqExtensions(sha256Hex(q)))})
		if w.Code != 200 || !strings.Contains(w.Body.String(), "Alice") {
			t.Fatalf("query %d: %d %s", i, w.Code, w.Body)
		}
	}
	if n := h.PersistedQueries.Len(); n >= 200 {
		t.Fatalf("%d held: the cache is not bounded, so the test proves nothing", n)
	}
	wantAnswer(t, apqPost(h, "", map[string]any{"extensions": pinned}), 200, apqData)
	wantAnswer(t, apqPost(h, "", map[string]any{"query": "{ user(id: 2) { name } }"}), 200, `{"data":{"user":{"name":"Bob"}}}`)
}

// TestWebSocketPersistedOnly: over WebSocket, where clients send documents, a
// persisted-only server runs a document only if it is one of the pinned ones.
func TestWebSocketPersistedOnly(t *testing.T) {
	s, _ := newTestSchema(t)
	pinned := newPersistedQueries(defaultPersistedQueryBytes)
	if _, err := pinned.PinManifest(s, manifestOf(apqQuery)); err != nil {
		t.Fatal(err)
	}
	ws := NewWebSocketHandler(s, WebSocketOptions{PersistedOnly: pinned})
	srv := httptest.NewServer(ws)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wsWait)
		defer cancel()
		ws.Shutdown(ctx)
		srv.Close()
	})
	c := dialWS(t, "ws"+strings.TrimPrefix(srv.URL, "http"), "graphql-transport-ws")
	defer c.CloseNow()
	wsSend(t, c, `{"type":"connection_init"}`)
	if got := wsMustRecv(t, c); got != `{"type":"connection_ack"}` {
		t.Fatalf("init: %s", got)
	}
	query, _ := json.Marshal(apqQuery)
	wsSend(t, c, `{"id":"1","type":"subscribe","payload":{"query":`+string(query)+`}}`)
	for _, want := range []string{`{"id":"1","type":"next","payload":` + apqData + `}`, `{"id":"1","type":"complete"}`} {
		if got := wsMustRecv(t, c); got != want {
			t.Errorf("pinned document:\n got %s\nwant %s", got, want)
		}
	}
	wsSend(t, c, `{"id":"2","type":"subscribe","payload":{"query":"{ user(id: 2) { name } }"}}`)
	const want = `{"id":"2","type":"error","payload":[{"message":"The persisted operation is not in this server's list of allowed operations.","extensions":{"code":"PERSISTED_QUERY_NOT_IN_LIST"}}]}`
	if got := wsMustRecv(t, c); got != want {
		t.Errorf("another document:\n got %s\nwant %s", got, want)
	}
}
