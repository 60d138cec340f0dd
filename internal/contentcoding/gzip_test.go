package contentcoding

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"gzip, deflate, br, zstd"}, true},
		{[]string{"br", "gzip"}, true}, // two header lines
		{[]string{"br"}, false},
		{[]string{"identity"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=0.5"}, true},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},          // named beats "*"
		{[]string{"gzip;q=0, *"}, false},          // in either order
		{[]string{"*;q=0, gzip"}, true},           // likewise
		{[]string{"gzip;q=0.5, identity"}, false}, // identity preferred by name
		{[]string{"gzip, identity;q=0.5"}, true},
		{[]string{"gzip;q=1, identity;q=1"}, true},
		{[]string{"gzip;q=2"}, false},   // out of range: ignored
		{[]string{"gzip;q=abc"}, false}, // malformed: ignored
		{[]string{" , ,gzip"}, true},
		{[]string{"gzipped"}, false},
	}
	for _, tt := range tests {
		if got := acceptsGzip(tt.header); got != tt.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// TestGzipNegotiation: Gzip adds Accept-Encoding to Vary (after what is there)
// whenever the answer could have been encoded, and returns a writer only for a
// client that accepts gzip; HEAD and upgrades are never encoded nor say so.
func TestGzipNegotiation(t *testing.T) {
	for _, c := range []struct {
		method, upgrade, accept string
		vary                    []string
		encode                  bool
	}{
		{"GET", "", "gzip", []string{"Origin", "Accept-Encoding"}, true},
		{"GET", "", "br", []string{"Origin", "Accept-Encoding"}, false},
		{"POST", "", "", []string{"Origin", "Accept-Encoding"}, false},
		{"HEAD", "", "gzip", []string{"Origin"}, false},
		{"GET", "websocket", "gzip", []string{"Origin"}, false},
	} {
		r := httptest.NewRequest(c.method, "/", nil)
		if c.upgrade != "" {
			r.Header.Set("Upgrade", c.upgrade)
		}
		if c.accept != "" {
			r.Header.Set("Accept-Encoding", c.accept)
		}
		w := httptest.NewRecorder()
		w.Header().Set("Vary", "Origin")
		g := Gzip(w, r)
		if (g != nil) != c.encode || strings.Join(w.Header()["Vary"], ",") != strings.Join(c.vary, ",") {
			t.Errorf("%s upgrade=%q Accept-Encoding %q: writer %v, Vary %q; want %v, %q", c.method, c.upgrade, c.accept, g != nil, w.Header()["Vary"], c.encode, c.vary)
		}
	}
	w := httptest.NewRecorder()
	Gzip(w, httptest.NewRequest("GET", "/", nil))
	if got := w.Header()["Vary"]; len(got) != 1 || got[0] != "Accept-Encoding" {
		t.Errorf("Vary alone: %q", got)
	}
}

// TestGzipResponseFlush checks that a flush sends everything written so far in a
// form the client can decode at once: a streamed answer streams encoded.
func TestGzipResponseFlush(t *testing.T) {
	rec := httptest.NewRecorder()
	g := &GzipWriter{w: rec}
	g.Header().Set("Content-Type", "application/json")
	first := bytes.Repeat([]byte("a"), 2*GzipMinBytes)
	g.Write(first)
	g.Flush()
	if !rec.Flushed {
		t.Error("the flush did not reach the response writer")
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(zr, got); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("after the flush the client reads %d bytes, %v", len(got), err)
	}
	g.Write([]byte("b"))
	g.Close()
	if zr, err = gzip.NewReader(rec.Body); err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(zr)
	if err != nil || string(whole) != string(first)+"b" {
		t.Errorf("after Close: %d bytes, %v", len(whole), err)
	}
}

// TestGzipResponseSmallFlush checks that an answer flushed before it is large enough
// goes out as it is, and that a 204 and an answer of a type gzip cannot shrink are
// never encoded.
func TestGzipResponseSmallFlush(t *testing.T) {
	rec := httptest.NewRecorder()
	g := &GzipWriter{w: rec}
	g.Header().Set("Content-Type", "application/json")
	g.Write([]byte("[1,"))
	g.Flush()
	g.Write(bytes.Repeat([]byte("2,"), GzipMinBytes))
	g.Close()
	if rec.Header().Get("Content-Encoding") != "" || !strings.HasPrefix(rec.Body.String(), "[1,2,") {
		t.Errorf("flushed small: encoding %q, body %.10q", rec.Header().Get("Content-Encoding"), rec.Body.String())
	}

	rec = httptest.NewRecorder()
	g = &GzipWriter{w: rec}
	g.WriteHeader(http.StatusNoContent)
	g.Close()
	if rec.Code != http.StatusNoContent || rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("204: %d %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}

	rec = httptest.NewRecorder()
	g = &GzipWriter{w: rec}
	g.Header().Set("Content-Type", "image/png")
	g.Write(make([]byte, 4*GzipMinBytes))
	g.Close()
	if rec.Header().Get("Content-Encoding") != "" || rec.Body.Len() != 4*GzipMinBytes {
		t.Errorf("png: encoding %q, %d bytes", rec.Header().Get("Content-Encoding"), rec.Body.Len())
	}

	rec = httptest.NewRecorder()
	g = &GzipWriter{w: rec}
	g.Header().Set("Content-Type", "application/json")
	g.Header().Set("Content-Encoding", "br")
	g.Write(make([]byte, 4*GzipMinBytes))
	g.Close()
	if rec.Header().Get("Content-Encoding") != "br" || rec.Body.Len() != 4*GzipMinBytes {
		t.Errorf("already encoded: encoding %q, %d bytes", rec.Header().Get("Content-Encoding"), rec.Body.Len())
	}
}

// failingWriter is a response writer whose client has gone: every body write fails.
type failingWriter struct{ *httptest.ResponseRecorder }

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// TestGzipCloseReportsATruncatedAnswer checks that Close reports a gzip stream that
// could not be written whole, so that the request's log line can say so.
func TestGzipCloseReportsATruncatedAnswer(t *testing.T) {
	g := &GzipWriter{w: failingWriter{httptest.NewRecorder()}}
	g.Header().Set("Content-Type", "application/json")
	g.Write(bytes.Repeat([]byte("a"), 2*GzipMinBytes))
	if err := g.Close(); err == nil {
		t.Error("Close of a gzip answer whose writes failed: no error")
	}
	ok := &GzipWriter{w: httptest.NewRecorder()}
	ok.Header().Set("Content-Type", "application/json")
	ok.Write(bytes.Repeat([]byte("a"), 2*GzipMinBytes))
	if err := ok.Close(); err != nil {
		t.Errorf("Close of a whole gzip answer: %v", err)
	}
}
