package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"quartet/userpb"
)

// logBoth logs the same record through textHandler and slog.TextHandler.
func logBoth(t *testing.T, r slog.Record) (ours, std string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := newTextHandler(&a).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := slog.NewTextHandler(&b, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

func TestTextHandlerWritesWhatSlogWrites(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 21, 21, 14, 37, 9_876_543, time.UTC)
	tests := []struct {
		name  string
		time  time.Time
		level slog.Level
		msg   string
		attrs []slog.Attr
	}{
		{"request line", at, slog.LevelInfo, "http", []slog.Attr{slog.String("method", "GET"), slog.String("path", "/api/users/3"),
			slog.Int("status", 200), slog.Int64("bytes", 93), slog.Duration("duration", 1472*time.Nanosecond), slog.String("remote", "127.0.0.1:45978")}},
		{"quoting", at, slog.LevelWarn, "shutting down", []slog.Attr{slog.String("path", "/a b"), slog.String("q", `say "hi"`),
			slog.String("eq", "a=b"), slog.String("", "empty key"), slog.String("empty", ""), slog.String("tab", "a\tb"),
			slog.String("back", `a\b`), slog.String("del", "a\x7fb"), slog.String("nbsp", "a\u00a0b"), slog.String("bad", "a\xffb"),
			slog.String("ünï", "çødé")}},
		{"numbers", at.In(berlin), slog.LevelError + 2, "n", []slog.Attr{slog.Uint64("u", 1<<63), slog.Float64("f", 0.1),
			slog.Float64("big", 1e21), slog.Bool("ok", true), slog.Int("neg", -5), slog.Duration("d", 90*time.Minute)}},
		{"no time", time.Time{}, slog.LevelDebug - 1, "", nil},
		{"error value goes to slog", at, slog.LevelError, "journal", []slog.Attr{slog.Any("error", errors.New("disk full")), slog.String("x", "y")}},
		{"time value goes to slog", at, slog.LevelInfo, "t", []slog.Attr{slog.Time("at", at)}},
		{"group goes to slog", at, slog.LevelInfo, "g", []slog.Attr{slog.Group("g", slog.Int("a", 1))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := slog.NewRecord(tt.time, tt.level, tt.msg, 0)
			r.AddAttrs(tt.attrs...)
			if ours, std := logBoth(t, r); ours != std {
				t.Errorf("\nours %q\nslog %q", ours, std)
			}
		})
	}
}

func FuzzTextHandler(f *testing.F) {
	f.Add("http", "path", "/api/users/3", int64(200), 0.5, int64(1472), int64(0), true)
	f.Add("", "", "", int64(-1), -0.0, int64(-1), int64(1e18), false)
	f.Add("a=b", "k\"", "v\x00\u2028", int64(1<<62), 1e-7, int64(1<<62), int64(-62135596800), true)
	f.Fuzz(func(t *testing.T, msg, key, val string, n int64, x float64, d, sec int64, b bool) {
		at := time.Unix(sec%(1<<35), n%1e9).In(time.FixedZone("", int(n%50400)))
		r := slog.NewRecord(at, slog.Level(n%16), msg, 0)
		r.AddAttrs(slog.String(key, val), slog.Int64(val, n), slog.Float64(key, x), slog.Duration(msg, time.Duration(d)), slog.Bool("b", b))
		if ours, std := logBoth(t, r); ours != std {
			t.Errorf("\nours %q\nslog %q", ours, std)
		}
	})
}

func BenchmarkRequestLogLine(b *testing.B) {
	for _, h := range []struct {
		name    string
		handler slog.Handler
	}{{"textHandler", newTextHandler(io.Discard)}, {"slog.TextHandler", slog.NewTextHandler(io.Discard, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			log := slog.New(h.handler)
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(context.Background(), slog.LevelInfo, "http", slog.String("method", "GET"),
					slog.String("path", "/api/users/3"), slog.Int("status", 200), slog.Int64("bytes", 93),
					slog.Duration("duration", 1472*time.Nanosecond), slog.String("remote", "127.0.0.1:45978"))
			}
		})
	}
}

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
	if attrs := traceAttrs([]string{"00-" + id + "-00f067aa0ba902b7-01", "00-" + id + "-00f067aa0ba902b7-01"}); attrs != nil {
		t.Errorf("two traceparents: %v", attrs)
	}
}

// TestTraceparentLogged checks that the HTTP request line and the gRPC call line
// carry the trace-id of a valid traceparent, and nothing for an invalid one.
func TestTraceparentLogged(t *testing.T) {
	a, logs := startApp(t, testConfig())
	const valid, id = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "0af7651916cd43dd8448eb211c80319c"
	const invalid = "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"
	for i, tp := range []string{valid, invalid} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/api/users/%d", a.httpAddr, i+1), nil)
		req.Header.Set("Traceparent", tp)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", valid)
	if _, err := c.GetUser(ctx, &userpb.GetUserRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	// A stream's line carries it too: ended early, the call still logs.
	streamCtx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(t.Context(), "traceparent", valid))
	stream, err := c.GetAllUsers(streamCtx, &userpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	stream.Recv()
	cancel()
	wantLine := func(match, want string, has bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, match) {
					if strings.Contains(line, want) != has {
						t.Errorf("line %q: has %q = %v, want %v", line, want, !has, has)
					}
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no log line with %q in:\n%s", match, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wantLine("path=/api/users/1 ", "trace_id="+id, true)
	wantLine("path=/api/users/2 ", "trace_id=", false)
	wantLine("/user.UserService/GetUser ", "trace_id="+id, true)
	wantLine("/user.UserService/GetAllUsers ", "trace_id="+id, true)
}
