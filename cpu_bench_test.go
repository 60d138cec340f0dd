package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRESTCPU measures the REST requests the performance tricks were weighed
// on, in process (from a parsed request to the last byte written, with the request
// log line to io.Discard) and reports the process's CPU time per request as
// cpu-ns/op: on a machine shared with other work, CPU time moves far less than wall
// time. bench/tricks.sh runs it on two revisions in alternating rounds:
//
//	go test -run '^$' -bench RESTCPU -benchtime 20000x
func BenchmarkRESTCPU(b *testing.B) {
	srv := NewServer(benchStore(b, 1000, 0), slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{})
	for _, c := range []struct{ name, method, target string }{
		{"user", "GET", "/api/users/7"},
		{"page", "GET", "/api/users?sortBy=name&page=50&pageSize=10"},
		{"list1000", "GET", "/api/users"},
		{"create", "POST", "/api/users"}, // last: it adds users
	} {
		b.Run(c.name, func(b *testing.B) {
			u, err := url.ParseRequestURI(c.target)
			if err != nil {
				b.Fatal(err)
			}
			header := http.Header{"Content-Type": {"application/json"}}
			i := 0
			cpu := cpuTime()
			for b.Loop() {
				i++
				body := ""
				if c.method == "POST" { // a new user each time: emails must differ
					body = `{"name":"Zoë O'Brien ` + strconv.Itoa(i) + `","email":"zoe.obrien` + strconv.Itoa(i) + `@example.com"}`
				}
				r := &http.Request{Method: c.method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: header,
					Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Host: "bench", RemoteAddr: "127.0.0.1:1", RequestURI: c.target}
				w := &discardResponse{header: http.Header{}}
				srv.ServeHTTP(w, r.WithContext(context.Background()))
				if w.status != http.StatusOK && w.status != http.StatusCreated {
					b.Fatalf("status %d", w.status)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
