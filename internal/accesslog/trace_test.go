package accesslog

import (
	"strings"
	"testing"
)

func TestTraceID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct{ header, want string }{
		{"00-" + id + "-00f067aa0ba902b7-01", id},
		{"00-" + id + "-00f067aa0ba902b7-00", id},
		{"01-" + id + "-00f067aa0ba902b7-01-what-the-future-adds", id}, // a later version may add fields
		{"01-" + id + "-00f067aa0ba902b7-01", id},
		{"", ""},
		{"00-" + id + "-00f067aa0ba902b7-01-x", ""},                // version 00 has no more fields
		{"01-" + id + "-00f067aa0ba902b7-01x", ""},                 // nor anything but "-" after the flags
		{"ff-" + id + "-00f067aa0ba902b7-01", ""},                  // version ff is invalid
		{"00-" + strings.ToUpper(id) + "-00f067aa0ba902b7-01", ""}, // lowercase only
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"00-" + id + "-0000000000000000-01", ""},
		{"00-" + id + "-00f067aa0ba902b7-0g", ""},
		{"00-" + id[1:] + "-00f067aa0ba902b7-01", ""}, // too short
		{"00_" + id + "-00f067aa0ba902b7-01", ""},
		{" 00-" + id + "-00f067aa0ba902b7-01", ""},
	}
	for _, tt := range tests {
		if got := traceID(tt.header); got != tt.want {
			t.Errorf("traceID(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
	if attrs := TraceAttrs([]string{"00-" + id + "-00f067aa0ba902b7-01", "00-" + id + "-00f067aa0ba902b7-01"}); attrs != nil {
		t.Errorf("two traceparents: %v", attrs)
	}
}
