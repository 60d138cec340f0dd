package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// bigPostsDataset writes a dataset whose `{ posts { content } }` answers about
// posts × 100 KB, and returns its file.
func bigPostsDataset(t *testing.T, posts int) string {
	type post struct {
		ID        int    `json:"id"`
		UserID    int    `json:"userId"`
		Title     string `json:"title"`
		Content   string `json:"content"`
		CreatedAt string `json:"createdAt"`
	}
	ds := map[string]any{"users": []map[string]any{{"id": 1, "name": "Ann", "email": "ann@example.com", "createdAt": "2024-01-01T09:00:00Z"}}}
	var list []post
	for i := range posts {
		list = append(list, post{i + 1, 1, "long", strings.Repeat("x", 99_990), "2024-01-01T09:00:00Z"})
	}
	ds["posts"] = list
	data, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestNonReadingClients: sockets that each ask for a large answer and never read
// it hold at most the answers budget, a client's when they share one address and
// the total when they are spread over many; the rest are refused with 429, and
// another address is still served. Without the budget the 40 answers of 4 MB held
// 160 MB until the write timeout.
func TestNonReadingClients(t *testing.T) {
	const sockets, answerBytes = 40, 4_000_000
	file := bigPostsDataset(t, answerBytes/100_000)
	for _, tc := range []struct {
		name      string
		addresses int
		bound     int64 // what the answers waiting may hold
	}{
		{"one address", 1, 10 << 20},
		{"many addresses", sockets, 24 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.demo, cfg.load = false, file
			cfg.admission.ClientAnswerBytes, cfg.admission.TotalAnswerBytes = 10<<20, 24<<20
			a, logs := startApp(t, cfg)
			heapBefore := testkit.LiveHeap()
			query := `{"query":"{ posts { content } }"}`
			request := "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(query)) + "\r\n\r\n" + query
			var conns []net.Conn
			for i := range sockets {
				local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%tc.addresses))}
				c, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", a.httpAddr)
				if err != nil {
					t.Fatal(err)
				}
				c.(*net.TCPConn).SetReadBuffer(4 << 10) // and never read
				conns = append(conns, c)
				if _, err := io.WriteString(c, request); err != nil {
					t.Fatal(err)
				}
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			// Settled when every request still under way (but the scrape) holds a
			// whole answer: it is stuck writing it, not rendering.
			refused := regexp.MustCompile(`msg=http method=POST path=/graphql status=429 `)
			finished := regexp.MustCompile(`msg=http method=POST path=/graphql status=`)
			testkit.Eventually(t, func() error {
				done, writing := len(finished.FindAllString(logs.String(), -1)), int64(inFlight(t, a))-1
				if held := answerBytesHeld(a); done+int(writing) != sockets || held < writing*answerBytes {
					return fmt.Errorf("%d requests done and %d writing, holding %d answer bytes; want %d in all, each writing one holding a whole answer", done, writing, held, sockets)
				}
				return nil
			})
			held := answerBytesHeld(a)
			grown := testkit.LiveHeap() - heapBefore
			n := len(refused.FindAllString(logs.String(), -1))
			t.Logf("%d answers refused, %d finished, %v in flight, %d bytes of answers held, the heap grew %.1f MiB", n, len(finished.FindAllString(logs.String(), -1)), inFlight(t, a), held, float64(grown)/(1<<20))
			if held > tc.bound || held < answerBytes {
				t.Errorf("%d answer bytes held, want one answer's to %d", held, tc.bound)
			}
			if n == 0 || n >= sockets {
				t.Errorf("%d of %d refused", n, sockets)
			}
			// The heap holds what the budget counts, and what is on its way to
			// the sockets besides, not the 40 answers.
			if grown > tc.bound+16<<20 {
				t.Errorf("the heap grew %d bytes with %d answers held, want under %d", grown, held, tc.bound+16<<20)
			}
			other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 200)}}).DialContext(ctx, network, addr)
			}}}
			resp, err := other.Get("http://" + a.httpAddr + "/api/users/1")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("another address while the answers wait: %v %v", resp, err)
			}
			resp.Body.Close()
			for _, c := range conns {
				c.Close()
			}
			testkit.Eventually(t, func() error {
				if held := answerBytesHeld(a); held != 0 {
					return fmt.Errorf("answers hold %d bytes with their sockets closed, want 0", held)
				}
				return nil
			})
		})
	}
}

// answerBytesHeld is what a's door counts of answers waiting for their readers.
func answerBytesHeld(a *app) int64 {
	_, _, held := a.door.Stats()
	return held
}

// inFlight reads quartet_requests_in_flight for HTTP from /metrics: the scrape
// itself is one of them.
func inFlight(t *testing.T, a *app) float64 {
	resp, err := http.Get("http://" + a.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^quartet_requests_in_flight\{protocol="http"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no HTTP in-flight gauge in:\n%s", body)
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n
}
