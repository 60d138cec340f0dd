package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"quartet/internal/testkit"
)

var loadDuration = flag.Duration("load-duration", 2*time.Second, "how long TestMixedLoad drives the server (10s for a longer soak)")

// TestMixedLoad drives the real server with 50 concurrent clients doing mixed creates,
// updates, deletes, orders and lists, then checks that no request failed with a 5xx and
// that the store ends exactly as the clients were told.
func TestMixedLoad(t *testing.T) {
	testkit.SkipIfShort(t, "drives the real server with 50 clients for -load-duration")
	const clients = 50
	a, _ := startApp(t, testConfig())
	base := "http://" + a.httpAddr
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	type expect struct {
		name    string
		deleted bool
		orders  int
	}
	results := make([]map[int64]*expect, clients)
	var wg sync.WaitGroup
	stop := time.Now().Add(*loadDuration)
	for c := range clients {
		results[c] = map[int64]*expect{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			mine := results[c]
			var live []int64
			send := func(method, path, body string, want int) *http.Response {
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := httpc.Do(req)
				if err != nil {
					t.Errorf("%s %s: %v", method, path, err)
					return nil
				}
				if resp.StatusCode != want {
					t.Errorf("%s %s: status %d, want %d", method, path, resp.StatusCode, want)
				}
				data, _ := io.ReadAll(resp.Body) // drained, so the connection is reused
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(data))
				return resp
			}
			for i := 0; time.Now().Before(stop); i++ {
				switch op := rng.IntN(10); {
				case op < 3 || len(live) == 0:
					name := fmt.Sprintf("c%d-u%d", c, i)
					resp := send("POST", "/api/users", fmt.Sprintf(`{"name":%q,"email":"%s@example.com"}`, name, name), 201)
					if resp == nil {
						return
					}
					var u User
					json.NewDecoder(resp.Body).Decode(&u)
					resp.Body.Close()
					mine[u.ID] = &expect{name: name}
					live = append(live, u.ID)
				case op < 5:
					id := live[rng.IntN(len(live))]
					name := fmt.Sprintf("c%d-u%d-renamed", c, i)
					if resp := send("PUT", fmt.Sprint("/api/users/", id), fmt.Sprintf(`{"name":%q,"email":"r%d@example.com"}`, name, i), 200); resp != nil {
						resp.Body.Close()
						mine[id].name = name
					}
				case op < 6:
					k := rng.IntN(len(live))
					id := live[k]
					if resp := send("DELETE", fmt.Sprint("/api/users/", id), "", 204); resp != nil {
						resp.Body.Close()
						mine[id].deleted = true
						live = append(live[:k], live[k+1:]...)
					}
				case op < 7:
					id := live[rng.IntN(len(live))]
					if resp := send("POST", fmt.Sprintf("/api/users/%d/orders", id), `{"productId":1,"quantity":2}`, 201); resp != nil {
						resp.Body.Close()
						mine[id].orders++
					}
				default:
					q := []string{"", "?page=2&pageSize=5", "?search=c1&sortBy=name", "?sortBy=email&pageSize=100"}[rng.IntN(4)]
					if resp := send("GET", "/api/users"+q, "", 200); resp != nil {
						resp.Body.Close()
					}
				}
			}
		})
	}
	wg.Wait()
	httpc.CloseIdleConnections()
	total := 6
	for _, mine := range results {
		for id, want := range mine {
			u, ok := a.store.User(id)
			switch {
			case want.deleted && ok:
				t.Errorf("user %d was deleted but is there", id)
			case !want.deleted && (!ok || u.Name != want.name):
				t.Errorf("user %d = %+v, want name %q", id, u, want.name)
			}
			if !want.deleted {
				total++
				if orders, _ := a.store.OrdersByUser(id); len(orders) != want.orders {
					t.Errorf("user %d has %d orders, want %d", id, len(orders), want.orders)
				}
			}
		}
	}
	if got := len(a.store.Users()); got != total {
		t.Errorf("%d users in the store, the clients were told %d", got, total)
	}
	t.Logf("%d users at the end", total)
}
