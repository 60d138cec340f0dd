package accesslog

import (
	"log/slog"
	"strings"
)

// traceID returns the trace-id of a W3C traceparent header (Trace Context, section
// 3.2), or "" when it is malformed, which the specification says to ignore: version,
// trace-id, parent-id and flags in lowercase hex of 2, 32, 16 and 2 digits joined by
// "-", neither id all zeros, version not ff; versions above 00 may add "-" fields.
func traceID(traceparent string) string {
	const size = 55 // version 00's whole length
	p := traceparent
	if len(p) < size || p[2] != '-' || p[35] != '-' || p[52] != '-' {
		return ""
	}
	version, id, parent, flags := p[:2], p[3:35], p[36:52], p[53:55]
	if !isLowerHex(version) || version == "ff" || !isLowerHex(flags) ||
		!isLowerHex(id) || isZeros(id) || !isLowerHex(parent) || isZeros(parent) {
		return ""
	}
	if len(p) > size && (version == "00" || p[size] != '-') {
		return ""
	}
	return id
}

func isLowerHex(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool { return (c < '0' || c > '9') && (c < 'a' || c > 'f') })
}

func isZeros(s string) bool { return strings.Trim(s, "0") == "" }

// TraceAttrs are the log attributes of a request's trace: trace_id when it carried
// exactly one valid traceparent (of two, neither is surely the caller's).
func TraceAttrs(traceparents []string) []slog.Attr {
	if len(traceparents) != 1 {
		return nil
	}
	if id := traceID(traceparents[0]); id != "" {
		return []slog.Attr{slog.String("trace_id", id)}
	}
	return nil
}
