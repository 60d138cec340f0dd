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
