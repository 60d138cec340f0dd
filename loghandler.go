package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// textHandler writes exactly what slog.TextHandler writes, in a fraction of the time
// for the records that make up nearly all of the log: the one line per request, whose
// values are strings, numbers and durations. slog.TextHandler takes about 2 µs for
// that line, a tenth of what serving a small read costs. Any record holding another
// kind of value (an error, a time, a group, a LogValuer), and every logger derived
// with With or WithGroup, is handed to slog.TextHandler itself.
type textHandler struct {
	out  io.Writer
	std  slog.Handler // slog.TextHandler on out, for everything not formatted here
	pool sync.Pool    // *[]byte line buffers
}

func newTextHandler(out io.Writer) *textHandler {
	return &textHandler{out: out, std: slog.NewTextHandler(out, nil)}
}

func (h *textHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.std.Enabled(ctx, l)
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.std.WithAttrs(as) }
func (h *textHandler) WithGroup(name string) slog.Handler    { return h.std.WithGroup(name) }

func (h *textHandler) Handle(ctx context.Context, r slog.Record) error {
	simple := true
	r.Attrs(func(a slog.Attr) bool {
		simple = isSimpleValue(a.Value)
		return simple
	})
	if !simple {
		return h.std.Handle(ctx, r)
	}
	bp, _ := h.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := (*bp)[:0]
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = r.Time.Truncate(1e6).AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = append(b, r.Level.String()...)
	b = append(b, " msg="...)
	b = appendTextString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ' ')
		b = appendTextString(b, a.Key)
		b = append(b, '=')
		b = appendSimpleValue(b, a.Value)
		return true
	})
	b = append(b, '\n')
	_, err := h.out.Write(b)
	*bp = b
	h.pool.Put(bp)
	return err
}

// isSimpleValue reports whether v is of a kind textHandler formats itself.
func isSimpleValue(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration:
		return true
	}
	return false
}

func appendSimpleValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendTextString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	default: // slog.KindDuration
		return append(b, v.Duration().String()...)
	}
}

// appendTextString appends s bare when it reads unambiguously in key=value text, and
// Go-quoted otherwise, by the rule slog.TextHandler applies.
func appendTextString(b []byte, s string) []byte {
	if needsTextQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// needsTextQuoting reports whether s is empty or holds a space, '=', '"', a control or
// non-printing character, or invalid UTF-8.
func needsTextQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// logInfo logs an Info record as log.LogAttrs would, without the stack walk
// slog.Logger does for every record to find its caller: no handler here logs the
// source, and the walk costs as much as formatting the line.
func logInfo(log *slog.Logger, ctx context.Context, msg string, attrs ...slog.Attr) {
	h := log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	h.Handle(ctx, r)
}

// traceID returns the trace-id of a W3C traceparent header (Trace Context, section
// 3.2), "" when the header is absent or malformed: an invalid one is ignored, as the
// specification asks, rather than logged half-understood.
//
// The form is version "-" trace-id "-" parent-id "-" flags, in lowercase hex, of 2,
// 32, 16 and 2 digits; version ff is invalid, an all-zero trace-id or parent-id too.
// A version above 00 may append fields after the flags, each after a "-"; version 00
// may not.
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
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isZeros(s string) bool { return strings.Trim(s, "0") == "" }

// traceAttrs are the log attributes of a request's trace: trace_id when the request
// carried exactly one valid traceparent (of two, neither can be told to be the
// caller's), none otherwise.
func traceAttrs(traceparents []string) []slog.Attr {
	if len(traceparents) != 1 {
		return nil
	}
	if id := traceID(traceparents[0]); id != "" {
		return []slog.Attr{slog.String("trace_id", id)}
	}
	return nil
}
