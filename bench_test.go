package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRESTCreateUser measures write throughput over real HTTP with 1 and 64
// concurrent writers, in memory and with -data (group commit shares one fsync among
// the writers waiting at the same time). Run:
//
//	go test -run '^$' -bench RESTCreateUser -benchtime 3s
func BenchmarkRESTCreateUser(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, writers := range []int{1, 64} {
			name := fmt.Sprintf("memory/writers=%d", writers)
			if durable {
				name = fmt.Sprintf("data/writers=%d", writers)
			}
			b.Run(name, func(b *testing.B) {
				cfg := testConfig()
				if durable {
					cfg.dataDir, cfg.snapshotBytes = b.TempDir(), defaultSnapshotBytes
				}
				a, err := start(cfg, discardLogger())
				if err != nil {
					b.Fatal(err)
				}
				defer a.shutdown()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
				defer client.CloseIdleConnections()
				url := "http://" + a.httpAddr + "/api/users"
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				t0 := time.Now()
				for range writers {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							body := fmt.Sprintf(`{"name":"Bench %d","email":"b%d@example.com"}`, i, i)
							resp, err := client.Post(url, "application/json", bytes.NewBufferString(body))
							if err != nil {
								b.Error(err)
								return
							}
							io.Copy(io.Discard, resp.Body) // a drained body lets the connection be reused
							resp.Body.Close()
							if resp.StatusCode != http.StatusCreated {
								b.Errorf("status %d", resp.StatusCode)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "writes/s")
			})
		}
	}
}
