package reqbody

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"quartet/internal/testkit"
)

func TestCheckJSON(t *testing.T) {
	const mergePatch = "application/merge-patch+json"
	for _, tc := range []struct {
		contentType, encoding, want string
		err                         error
	}{
		{"application/json", "", "application/json", nil},
		{"Application/JSON; charset=UTF-8", "", "application/json", nil},
		{"application/json;charset=utf-8", "identity", "application/json", nil},
		{"application/json", "gzip", "application/json", ErrEncoded},
		{"text/plain", "gzip", "application/json", ErrEncoded},
		{"", "", "application/json", ErrMediaType},
		{"text/plain", "", "application/json", ErrMediaType},
		{"application/evil+json", "", "application/json", ErrMediaType},
		{"application/json; charset", "", "application/json", ErrMediaType},
		{"application/json; charset=latin1", "", "application/json", ErrCharset},
		{mergePatch, "", mergePatch, nil},
		{mergePatch + "; charset=utf-8", "", mergePatch, nil},
		{"application/json", "", mergePatch, ErrMediaType},
		{mergePatch + "; charset=utf-16", "", mergePatch, ErrCharset},
	} {
		h := http.Header{}
		if tc.contentType != "" {
			h.Set("Content-Type", tc.contentType)
		}
		if tc.encoding != "" {
			h.Set("Content-Encoding", tc.encoding)
		}
		if err := CheckJSON(h, tc.want); err != tc.err {
			t.Errorf("CheckJSON(%q, encoding %q, want %q) = %v, want %v", tc.contentType, tc.encoding, tc.want, err, tc.err)
		}
	}
}

// TestReadOfDeclaredLength: a body of declared length past the first chunk is
// read into one buffer of its length; io.ReadAll grew one to it from 512 bytes,
// copying it several times (838 MB of the hostile check's 4.6 GB).
func TestReadOfDeclaredLength(t *testing.T) {
	const size = 256 << 10
	body := strings.Repeat("x", size)
	r := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
	var got []byte
	n := testkit.BytesAllocated(func() {
		var err error
		if got, err = Read(httptest.NewRecorder(), r, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	if n > size*3/2 {
		t.Errorf("reading a %d-byte body allocated %d bytes", size, n)
	}
	if string(got) != body {
		t.Errorf("read %d bytes, want the %d sent", len(got), size)
	}
}

// TestReadClaimsWhatArrives: a body declared at a megabyte of which ten bytes
// arrive before the client goes claims no more than the first chunk.
func TestReadClaimsWhatArrives(t *testing.T) {
	r := httptest.NewRequest("POST", "/graphql", io.MultiReader(strings.NewReader("0123456789"), iotest.ErrReader(io.ErrUnexpectedEOF)))
	r.ContentLength = 1 << 20
	var err error
	// Bounded loosely: other goroutines allocate meanwhile.
	if n := testkit.BytesAllocated(func() { _, err = Read(httptest.NewRecorder(), r, 1<<20) }); n > 4*firstChunk {
		t.Errorf("ten bytes of a declared megabyte claimed %d bytes", n)
	}
	if err == nil {
		t.Error("a body cut short was read without an error")
	}
}

// readAhead stands for the door's body: read ahead whole, or not.
type readAhead struct {
	io.Reader
	data  []byte
	whole bool
}

func (b readAhead) Bytes() ([]byte, bool, error) { return b.data, b.whole, nil }
func (b readAhead) Close() error                 { return nil }

// TestReadTakesWhatTheDoorRead: a body read ahead whole is returned as it is, the
// same bytes, and refused past the limit; one not read whole is read on.
func TestReadTakesWhatTheDoorRead(t *testing.T) {
	ahead := []byte(`{"query":"{ a }"}`)
	for _, tc := range []struct {
		name    string
		body    readAhead
		limit   int64
		want    string
		tooBig  bool
		sameBuf bool
	}{
		{"whole", readAhead{strings.NewReader("unread"), ahead, true}, 1 << 10, string(ahead), false, true},
		{"whole, over the limit", readAhead{strings.NewReader("unread"), ahead, true}, 4, "", true, false},
		{"not whole", readAhead{strings.NewReader("read on"), nil, false}, 1 << 10, "read on", false, false},
		{"not whole, over the limit", readAhead{strings.NewReader("read on"), nil, false}, 4, "", true, false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Body, r.ContentLength = tc.body, -1
		got, err := Read(httptest.NewRecorder(), r, tc.limit)
		if _, tooBig := err.(*http.MaxBytesError); tooBig != tc.tooBig {
			t.Errorf("%s: err %v, want too big %v", tc.name, err, tc.tooBig)
			continue
		}
		if !tc.tooBig && string(got) != tc.want {
			t.Errorf("%s: read %q, want %q", tc.name, got, tc.want)
		}
		if tc.sameBuf && &got[0] != &ahead[0] {
			t.Errorf("%s: the bytes read ahead were copied", tc.name)
		}
	}
}
