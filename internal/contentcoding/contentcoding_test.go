package contentcoding

import (
	"net/http"
	"testing"
)

func TestEncoded(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"identity"}, false},
		{[]string{"Identity, identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"identity", "br"}, true},
		{[]string{"identity, deflate"}, true},
		{[]string{" , x-gzip"}, true},
	} {
		h := http.Header{}
		for _, v := range tt.values {
			h.Add("Content-Encoding", v)
		}
		if got := Encoded(h); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.values, got, tt.want)
		}
	}
}

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
