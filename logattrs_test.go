package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"quartet/internal/testkit"
	"quartet/userpb"
)

// TestRequestLogLine runs the program as main does and checks the line it logs for a
// request, through the logger run builds (slog.TextHandler on the batching writer):
// every field, in order, in slog's text form.
func TestRequestLogLine(t *testing.T) {
	r := runServing(t, []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-stream-delay", "0s"}, nil)
	defer func() {
		if err := r.shutdown(); err != nil {
			t.Errorf("run after shutdown = %v, want nil", err)
		}
	}()
	waitLog := func(re *regexp.Regexp) []string {
		t.Helper()
		var m []string
		testkit.Eventually(t, func() error {
			if m = re.FindStringSubmatch(r.logs.String()); m == nil {
				return fmt.Errorf("no line matching %s in the log:\n%s", re, r.logs)
			}
			return nil
		})
		return m
	}
	waitLog(regexp.MustCompile(`(?m)^time=\S+ level=INFO msg="quartet serving" http=\S+ grpc=\S+ env=development auth=false$`))
	req, _ := http.NewRequest("GET", "http://"+r.httpAddr+"/api/users/1?x=1", nil)
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	line := waitLog(regexp.MustCompile(`(?m)^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* level=INFO msg=http method=GET path=/api/users/1 ` +
		`status=200 bytes=(\d+) duration=\d[\d.]*[µnm]?s remote=127\.0\.0\.1:\d+ trace_id=0af7651916cd43dd8448eb211c80319c$`))
	if line[1] != strconv.Itoa(len(body)) {
		t.Errorf("bytes=%s, the body has %d", line[1], len(body))
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
		var found string
		testkit.Eventually(t, func() error {
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, match) {
					found = line
					return nil
				}
			}
			return fmt.Errorf("no log line with %q in:\n%s", match, logs.String())
		})
		if strings.Contains(found, want) != has {
			t.Errorf("line %q: has %q = %v, want %v", found, want, !has, has)
		}
	}
	wantLine("path=/api/users/1 ", "trace_id="+id, true)
	wantLine("path=/api/users/2 ", "trace_id=", false)
	wantLine("/user.UserService/GetUser ", "trace_id="+id, true)
	wantLine("/user.UserService/GetAllUsers ", "trace_id="+id, true)
}
