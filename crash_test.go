package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"quartet/internal/testkit"
	"quartet/userpb"
)

// buildBinary builds the service once for the tests that run it as a process.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "quartet-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "quartet")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// process is the service running as a child process.
type process struct {
	cmd            *exec.Cmd
	httpAddr, grpc string
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}, args...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	var log bytes.Buffer
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := servingLine.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return &process{cmd: cmd, httpAddr: m[1], grpc: m[2]}
		}
	}
	t.Fatalf("the service did not start:\n%s", log.String())
	return nil
}

// TestCrashRecovery runs the real binary with -data, drives concurrent writes over REST
// and gRPC, kills it with SIGKILL at random moments, restarts it, and checks that every
// acknowledged write is there and nothing unacknowledged is half there.
func TestCrashRecovery(t *testing.T) {
	testkit.SkipIfShort(t, "kills and restarts the real binary for about 15 s")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	type user struct {
		id    int64
		email string
	}
	acked := map[string]user{}    // name -> user, acknowledged creations
	deleted := map[string]bool{}  // acknowledged deletions
	deleting := map[string]bool{} // deletions sent but not acknowledged: either outcome is right
	var ackedBatches [][]string   // gRPC batches acknowledged
	var unackedBatches [][]string
	ackedOrders := map[int64]bool{}
	const rounds = 20
	for round := 0; round <= rounds; round++ {
		p := startProcess(t, "-data", dir, "-stream-delay", "0s", "-snapshot-bytes", "20000")
		base := "http://" + p.httpAddr

		// Check what the previous rounds were told.
		resp, err := http.Get(base + "/api/users")
		if err != nil {
			t.Fatal(err)
		}
		var users []*User
		json.NewDecoder(resp.Body).Decode(&users)
		resp.Body.Close()
		byName := map[string]*User{}
		for _, u := range users {
			byName[u.Name] = u
		}
		for name, want := range acked {
			got, ok := byName[name]
			switch {
			case deleted[name] && ok:
				t.Fatalf("round %d: %s was deleted (acknowledged) but is back", round, name)
			case !ok && deleting[name]:
			case !deleted[name] && (!ok || got.ID != want.id || got.Email != want.email):
				t.Fatalf("round %d: acknowledged user %s lost or changed: %+v", round, name, got)
			}
		}
		for _, batch := range ackedBatches {
			for _, name := range batch {
				if _, ok := byName[name]; !ok {
					t.Fatalf("round %d: user %s of an acknowledged gRPC batch is missing", round, name)
				}
			}
		}
		for _, batch := range unackedBatches {
			n := 0
			for _, name := range batch {
				if _, ok := byName[name]; ok {
					n++
				}
			}
			if n != 0 && n != len(batch) {
				t.Fatalf("round %d: an unacknowledged gRPC batch is half there (%d of %d)", round, n, len(batch))
			}
		}
		// Every order, in one answer (OData's collection is not paged).
		resp, err = http.Get(base + "/api/orders?$select=id")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("round %d: listing the orders: %v %v", round, resp, err)
		}
		var orders struct{ Value []struct{ ID int64 } }
		err = json.NewDecoder(resp.Body).Decode(&orders)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("round %d: the orders' list: %v", round, err)
		}
		stored := map[int64]bool{}
		for _, o := range orders.Value {
			stored[o.ID] = true
		}
		for id := range ackedOrders {
			if !stored[id] {
				t.Fatalf("round %d: acknowledged order %d lost", round, id)
			}
		}
		for _, u := range users {
			if u.Email == "" || u.Name == "" {
				t.Fatalf("round %d: a half-written user %+v", round, u)
			}
		}
		if round == rounds {
			break
		}

		// Write concurrently until the kill.
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		client := &http.Client{Timeout: 5 * time.Second}
		for w := range 6 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					email := name + "@example.com"
					body := fmt.Sprintf(`{"name":%q,"email":%q}`, name, email)
					resp, err := client.Post(base+"/api/users", "application/json", bytes.NewBufferString(body))
					if err != nil {
						return
					}
					var u User
					err = json.NewDecoder(resp.Body).Decode(&u)
					resp.Body.Close()
					if resp.StatusCode != 201 || err != nil {
						return // a reply cut off by the kill is not an acknowledgement
					}
					mu.Lock()
					acked[name] = user{u.ID, email}
					mu.Unlock()
					if i%3 == 0 {
						resp, err := client.Post(fmt.Sprintf("%s/api/users/%d/orders", base, u.ID), "application/json", bytes.NewBufferString(`{"productId":1,"quantity":2}`))
						if err != nil {
							return
						}
						var o Order
						err = json.NewDecoder(resp.Body).Decode(&o)
						resp.Body.Close()
						if resp.StatusCode == 201 && err == nil {
							mu.Lock()
							ackedOrders[o.ID] = true
							mu.Unlock()
						}
					}
					if i%4 == 1 {
						mu.Lock()
						deleting[name] = true
						mu.Unlock()
						req, _ := http.NewRequest("DELETE", fmt.Sprintf("%s/api/users/%d", base, u.ID), nil)
						resp, err := client.Do(req)
						if err != nil {
							return
						}
						resp.Body.Close()
						if resp.StatusCode == 204 {
							mu.Lock()
							deleted[name] = true
							mu.Unlock()
						}
					}
				}
			})
		}
		conn, err := grpc.NewClient(p.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		for w := range 2 {
			wg.Go(func() {
				c := userpb.NewUserServiceClient(conn)
				for i := 0; ctx.Err() == nil; i++ {
					batch := []string{fmt.Sprintf("g%d-%d-%d-a", round, w, i), fmt.Sprintf("g%d-%d-%d-b", round, w, i), fmt.Sprintf("g%d-%d-%d-c", round, w, i)}
					stream, err := c.CreateUsers(context.Background())
					if err != nil {
						return
					}
					for _, n := range batch {
						stream.Send(&userpb.CreateUserRequest{Name: n, Email: n + "@example.com"})
					}
					resp, err := stream.CloseAndRecv()
					mu.Lock()
					if err == nil && resp.GetUsersCreated() == 3 {
						ackedBatches = append(ackedBatches, batch)
					} else {
						unackedBatches = append(unackedBatches, batch)
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
		p.cmd.Process.Kill() // SIGKILL: no shutdown, no flush
		p.cmd.Wait()
		cancel()
		wg.Wait()
		conn.Close()
	}
	t.Logf("%d acknowledged users (%d deleted), %d gRPC batches, %d orders survived %d kills", len(acked), len(deleted), len(ackedBatches), len(ackedOrders), rounds)
}

// TestCrashStartRefusals: run refuses a damaged
// directory with one line naming the cause (main prints it and exits 2); -repair
// starts on a damaged journal, keeping what it cut beside it.
func TestCrashStartRefusals(t *testing.T) {
	made := t.TempDir()
	s := openTestDurable(t, made, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	s.Close()
	journal := journalName(1)
	data, _ := os.ReadFile(filepath.Join(made, journal))
	starts := recordStarts(t, data)
	last, end := starts[len(starts)-2], starts[len(starts)-1]

	stopped, cancel := context.WithCancel(t.Context())
	cancel() // start, then shut down at once
	runOn := func(dir string, extra ...string) (logs string, err error) {
		var out syncBuffer
		args := append([]string{"-data", dir, "-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}, extra...)
		err = run(stopped, args, envFrom(nil), io.Discard, &out)
		return out.String(), err
	}
	flip := func(dir string) {
		damaged := append([]byte(nil), data...)
		damaged[end-2] ^= 0x04 // in the last record's payload
		os.WriteFile(filepath.Join(dir, journal), damaged, 0o644)
	}
	cases := []struct {
		name   string
		damage func(dir string)
		want   string
	}{
		{"snapshot removed", func(dir string) { os.Remove(filepath.Join(dir, "snapshot")) }, "snapshot is missing, but " + journal + " follows a snapshot"},
		{"snapshot truncated", func(dir string) {
			snap, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
			os.WriteFile(filepath.Join(dir, "snapshot"), snap[:len(snap)-100], 0o644)
		}, "snapshot is truncated"},
		{"last record damaged", flip, fmt.Sprintf("%s is corrupt at byte %d (a record fails its checksum)", journal, last)},
		{"journal emptied", func(dir string) { os.Truncate(filepath.Join(dir, journal), 0) }, journal + " is cut short: it is 0 bytes"},
		{"journal cut in the middle", func(dir string) { os.Truncate(filepath.Join(dir, journal), int64(last+5)) }, fmt.Sprintf("%s is cut short: it is %d bytes", journal, last+5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := testkit.CopyDir(t, made)
			tc.damage(dir)
			_, err := runOn(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}

	t.Run("-repair", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		flip(dir)
		logs, err := runOn(dir, "-repair")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs, "-repair") || !strings.Contains(logs, fmt.Sprintf("offset=%d", last)) {
			t.Errorf("the repair was not logged:\n%s", logs)
		}
		if sides, _ := filepath.Glob(filepath.Join(dir, journal+".cut-*")); len(sides) != 1 {
			t.Errorf("side files %v, want one", sides)
		}
		if _, err := runOn(dir); err != nil {
			t.Errorf("after -repair, a plain start fails: %v", err)
		}
	})
}
