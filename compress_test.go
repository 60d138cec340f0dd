package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"quartet/internal/contentcoding"
)

// getEncoded sends a request with the given Accept-Encoding (none if "") and returns
// the answer with its body decoded, and whether it came gzip-encoded.
func getEncoded(t *testing.T, method, url, acceptEncoding, body string) (*http.Response, []byte, bool) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding) // set by hand: the transport then leaves the body encoded
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" {
		return resp, raw, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	decoded, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s %s: the gzip stream is broken: %v", method, url, err)
	}
	return resp, decoded, true
}

// TestCompressionEverySurface checks that large answers of REST, GraphQL and OData
// come gzip-encoded to a client that accepts it, decode to exactly the plain answer,
// and that small answers, HEAD and clients without gzip get the plain answer; every
// one of them says Vary: Accept-Encoding.
func TestCompressionEverySurface(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	gql := `{"query":"{ a: users { id name email } b: users { id name email } c: users { id name email } }"}`
	tests := []struct {
		name, method, path, body string
		large                    bool
	}{
		{"REST page", "GET", "/api/users?pageSize=100", "", false}, // the demo data is small
		{"REST one", "GET", "/api/users/1", "", false},
		{"REST problem", "GET", "/api/users/999", "", false},
		{"GraphQL", "POST", "/graphql", gql, true},
		{"GraphQL small", "POST", "/graphql", `{"query":"{ user(id: 1) { name } }"}`, false},
		{"OData collection", "GET", "/api/products", "", true},
		{"OData metadata", "GET", "/api/$metadata", "", true},
		{"OData entity", "GET", "/api/products(1)", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, plain, encoded := getEncoded(t, tt.method, ts.URL+tt.path, "", tt.body)
			if encoded {
				t.Fatal("encoded for a client that did not ask for it")
			}
			if tt.large && len(plain) < contentcoding.GzipMinBytes {
				t.Fatalf("the answer has %d bytes: the test needs one of at least %d", len(plain), contentcoding.GzipMinBytes)
			}
			resp, decoded, encoded := getEncoded(t, tt.method, ts.URL+tt.path, "br, gzip", tt.body)
			if encoded != tt.large {
				t.Errorf("gzip-encoded: %v, want %v (%d bytes)", encoded, tt.large, len(plain))
			}
			if !bytes.Equal(decoded, plain) {
				t.Errorf("decoded answer differs from the plain one:\n%s\n%s", decoded, plain)
			}
			if got := resp.Header.Values("Vary"); !contains(got, "Accept-Encoding") {
				t.Errorf("Vary = %q", got)
			}
			if encoded && int(resp.ContentLength) == len(plain) {
				t.Errorf("Content-Length %d is the plain answer's", resp.ContentLength)
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		resp, _, encoded := getEncoded(t, "HEAD", ts.URL+"/api/users", "gzip", "")
		if encoded || resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD: status %d, encoded %v", resp.StatusCode, encoded)
		}
	})
	t.Run("refused by q=0", func(t *testing.T) {
		if _, _, encoded := getEncoded(t, "GET", ts.URL+"/api/users", "gzip;q=0, identity", ""); encoded {
			t.Error("encoded although gzip;q=0")
		}
	})
}

func contains(values []string, want string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(item) == want {
				return true
			}
		}
	}
	return false
}

// TestCompressionStreamedList checks a list long enough to be sent in many pieces
// (REST's full user list and an OData collection): the gzip stream decodes to the
// plain answer, whole.
func TestCompressionStreamedList(t *testing.T) {
	store := NewStore()
	names := make([]string, 3000)
	for i := range names {
		names[i] = fmt.Sprintf("user%04d", i)
	}
	products := make([]Product, 3000)
	for i := range products {
		products[i] = Product{ID: int64(i + 1), Name: fmt.Sprintf("product %d", i), Category: "tools", CreatedDate: fixedTime, IsActive: true}
	}
	if err := store.Load(&Dataset{Users: usersNamed(names...), Products: products}); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store)
	for _, path := range []string{"/api/users", "/api/products"} {
		_, plain, _ := getEncoded(t, "GET", ts.URL+path, "", "")
		if len(plain) < 4*responseChunk {
			t.Fatalf("%s has %d bytes: too short to stream", path, len(plain))
		}
		_, decoded, encoded := getEncoded(t, "GET", ts.URL+path, "gzip", "")
		if !encoded || !bytes.Equal(decoded, plain) {
			t.Errorf("%s: encoded %v; decoded %d bytes, plain %d", path, encoded, len(decoded), len(plain))
		}
	}
}

// TestCompressionLeavesWebSocketsAlone opens a GraphQL WebSocket with a client that
// accepts gzip: the upgrade works and frames arrive plain.
func TestCompressionLeavesWebSocketsAlone(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Accept-Encoding": {"gzip"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("upgrade answer encoded: %q", resp.Header.Get("Content-Encoding"))
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(msg), "connection_ack") {
		t.Errorf("read %q, %v", msg, err)
	}
}

// BenchmarkGzipList measures the full list of 1000 users (about 100 KB) answered to a
// client that accepts gzip, against the same answer plain.
func BenchmarkGzipList(b *testing.B) {
	srv := NewServer(benchStore(b, 1000, 0), slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{})
	for _, enc := range []string{"", "gzip"} {
		b.Run("accept="+enc, func(b *testing.B) {
			var bytes int
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("GET", "/api/users", nil)
				if enc != "" {
					r.Header.Set("Accept-Encoding", enc)
				}
				w := &discardResponse{header: http.Header{}}
				srv.ServeHTTP(w, r)
				bytes = w.bytes
			}
			b.ReportMetric(float64(bytes), "wire-bytes")
		})
	}
}

// TestCompressionPanic checks that a handler panicking with an answer held back
// gets the usual plain 500 problem, not a half-made gzip answer.
func TestCompressionPanic(t *testing.T) {
	srv := NewServer(newTestStore(t), slog.New(slog.DiscardHandler), serverOptions{})
	srv.mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"partial":`))
		panic("boom")
	})
	r := httptest.NewRequest("GET", "/boom", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError || w.Header().Get("Content-Encoding") != "" || !strings.Contains(w.Body.String(), "internal server error") {
		t.Errorf("%d %q %q", w.Code, w.Header().Get("Content-Encoding"), w.Body.String())
	}
}
