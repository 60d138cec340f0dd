package odata

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLongListIsStreamed serves a collection far longer than flushSize: the handler
// sends it in pieces without a Content-Length, and the bytes are exactly what
// ServeList encodes whole; a short list keeps its Content-Length.
func TestLongListIsStreamed(t *testing.T) {
	_, ps, _ := newTestModel()
	var many []any
	for i := 1; i <= 3000; i++ {
		many = append(many, &product{int64(i), "Product \"" + strconv.Itoa(i) + "\" ü", int64(i) * 100, "Cat",
			time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), i%2 == 0, nil})
	}
	rt := &Route{Set: ps, List: func(context.Context) []any { return many }, Metadata: "/api/$metadata",
		Settings: Settings{Allowed: OptSelect | OptFilter | OptOrderBy | OptCount | OptTop | OptSkip, MaxTop: 100}}
	srv := httptest.NewServer(rt.listHandler())
	defer srv.Close()
	for _, tt := range []struct {
		query  string
		stream bool
	}{
		{"", true},
		{"$count=true&$orderby=name desc&$select=id,name", true},
		{"$top=3", false},
		{"$filter=id eq 7", false},
	} {
		resp, err := http.Get(srv.URL + "/api/products?" + strings.ReplaceAll(tt.query, " ", "%20"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := rt.ServeList(context.Background(), strings.ReplaceAll(tt.query, " ", "%20"), "/api/$metadata")
		if resp.StatusCode != http.StatusOK || string(got) != string(want.Body) {
			t.Errorf("%q: status %d, %d bytes; ServeList has %d bytes", tt.query, resp.StatusCode, len(got), len(want.Body))
		}
		if streamed := resp.ContentLength < 0; streamed != tt.stream {
			t.Errorf("%q: Content-Length %d, streamed %v, want %v", tt.query, resp.ContentLength, streamed, tt.stream)
		}
		if ct, v := resp.Header.Get("Content-Type"), resp.Header.Get("OData-Version"); ct != jsonType || v != "4.0" {
			t.Errorf("%q: Content-Type %q, OData-Version %q", tt.query, ct, v)
		}
	}
}

// ServeList answers a collection request with the given raw query string, whole: what
// the streamed answer of serveList must add up to.
func (rt *Route) ServeList(ctx context.Context, rawQuery, metadata string) Response {
	q, err := parseQuery(rawQuery, rt.Set.Type, rt.Settings)
	if err != nil {
		return badRequest(err)
	}
	withCount := rt.AlwaysCount || q.count
	page, n, err := q.Evaluate(rt.List(ctx), rt.Restrict, withCount)
	if err != nil {
		return badRequest(err)
	}
	body, err := q.AppendCollection(nil, q.contextURL(metadata, rt.Set), page, n, withCount)
	if err != nil {
		return badRequest(err)
	}
	return Response{http.StatusOK, jsonType, body}
}

// listHandler serves rt's collection as the Service does.
func (rt *Route) listHandler() http.Handler { return http.HandlerFunc(rt.serveList) }
