package odata

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestEntityETag: a single entity carries a strong ETag, the same in the header
// and in @odata.etag (not in odata.metadata=none); it changes when any property
// of the record changes and only then; If-None-Match naming it (weakly too, or
// "*") answers 304 without a body, and any other tag the entity.
func TestEntityETag(t *testing.T) {
	m, ps, os := newTestModel()
	products, _ := testData()
	get := func(_ context.Context, key int64) (any, bool) {
		for _, x := range products {
			if x.(*product).ID == key {
				return x, true
			}
		}
		return nil, false
	}
	one := &Route{Set: ps, Settings: Settings{Allowed: OptSelect}, Get: get, ETag: true, Metadata: "/api/$metadata"}
	svc := &Service{Model: m, Root: "/api/", Sets: map[string]SetRoutes{
		ps.Name: {List: &Route{Set: ps, List: func(context.Context) []any { return products }}, Entity: one},
		os.Name: {List: &Route{Set: os}, Entity: &Route{Set: os}},
	}}
	do := func(path, inm string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		rec := httptest.NewRecorder()
		svc.ServeHTTP(rec, req)
		return rec
	}
	first := do("/api/Products(1)", "")
	tag := first.Header().Get("ETag")
	var body struct {
		ETag string `json:"@odata.etag"`
	}
	json.Unmarshal(first.Body.Bytes(), &body)
	if first.Code != 200 || len(tag) != 34 || tag[0] != '"' || body.ETag != tag {
		t.Fatalf("GET: %d, ETag %q, @odata.etag %q", first.Code, tag, body.ETag)
	}
	if other := do("/api/Products(2)", "").Header().Get("ETag"); other == tag {
		t.Errorf("products 1 and 2 share the ETag %s", tag)
	}
	var noneBody map[string]any
	if none := do("/api/Products(1)?$format=application/json;odata.metadata=none", ""); none.Header().Get("ETag") != tag || json.Unmarshal(none.Body.Bytes(), &noneBody) != nil || noneBody["@odata.etag"] != nil {
		t.Errorf("odata.metadata=none: ETag %q, body %s", none.Header().Get("ETag"), none.Body)
	}
	for _, tt := range []struct {
		inm  string
		want int
	}{
		{tag, http.StatusNotModified},
		{"W/" + tag, http.StatusNotModified},
		{`"x", ` + tag, http.StatusNotModified},
		{"*", http.StatusNotModified},
		{`"x"`, http.StatusOK},
	} {
		rec := do("/api/Products(1)?$select=name", tt.inm)
		if rec.Code != tt.want || tt.want == http.StatusNotModified && (rec.Body.Len() != 0 || rec.Header().Get("ETag") != tag) {
			t.Errorf("If-None-Match %s: %d %q, want %d", tt.inm, rec.Code, rec.Body, tt.want)
		}
	}
	// If-Match (RFC 9110 section 13.1.1) is checked strongly and before If-None-Match:
	// a GET whose If-Match fails is 412 in the OData error format, not the entity.
	for _, tt := range []struct {
		im, inm string
		want    int
	}{
		{tag, "", http.StatusOK},
		{`"x", ` + tag, "", http.StatusOK},
		{"*", "", http.StatusOK},
		{tag, tag, http.StatusNotModified},
		{`"x"`, "", http.StatusPreconditionFailed},
		{"W/" + tag, "", http.StatusPreconditionFailed},
		{`"x"`, tag, http.StatusPreconditionFailed},
	} {
		req := httptest.NewRequest("GET", "/api/Products(1)", nil)
		req.Header.Set("If-Match", tt.im)
		if tt.inm != "" {
			req.Header.Set("If-None-Match", tt.inm)
		}
		rec := httptest.NewRecorder()
		svc.ServeHTTP(rec, req)
		var e struct{ Error struct{ Code string } }
		if rec.Code != tt.want || tt.want == http.StatusPreconditionFailed && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != "PreconditionFailed") {
			t.Errorf("If-Match %s, If-None-Match %q: %d %s, want %d", tt.im, tt.inm, rec.Code, rec.Body, tt.want)
		}
	}
	// The record changes: its tag does, and the old one no longer matches.
	p := products[0].(*product)
	old := p.Name
	p.Name += "!"
	changed := do("/api/Products(1)", tag)
	p.Name = old
	if changed.Code != http.StatusOK || changed.Header().Get("ETag") == tag {
		t.Errorf("after a change: %d, ETag %s (was %s)", changed.Code, changed.Header().Get("ETag"), tag)
	}
	if again := do("/api/Products(1)", "").Header().Get("ETag"); again != tag {
		t.Errorf("the record put back has ETag %s, want %s again", again, tag)
	}
}
