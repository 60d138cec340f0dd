package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"quartet/userpb"
)

func generate(t *testing.T, cfg GenConfig) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Generate(&buf, cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fullDataset decodes every collection of a generated file, refusing unknown keys as
// the service does.
type fullDataset struct {
	Users    []genUser    `json:"users"`
	Posts    []genPost    `json:"posts"`
	Comments []genComment `json:"comments"`
	Products []genProduct `json:"products"`
	Orders   []genOrder   `json:"orders"`
}

func decodeDataset(t *testing.T, b []byte) fullDataset {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ds fullDataset
	if err := dec.Decode(&ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := GenConfig{Seed: 7, Users: 300, PostsPerUser: 2, CommentsPerPost: 2, Products: 200, Orders: 100}
	a, b := generate(t, cfg), generate(t, cfg)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same config differ")
	}
	cfg.Seed = 8
	if bytes.Equal(a, generate(t, cfg)) {
		t.Fatal("a different seed gave the same dataset")
	}
	// Each collection has its own random stream: more products leave the users as
	// they were.
	cfg.Seed = 7
	more := cfg
	more.Products = 500
	if x, y := decodeDataset(t, a), decodeDataset(t, generate(t, more)); !reflect.DeepEqual(x.Users, y.Users) {
		t.Fatal("changing the product count changed the users")
	}
}

func TestGenerateShape(t *testing.T) {
	for _, cfg := range []GenConfig{
		{Seed: 1, Users: 50, PostsPerUser: 3, CommentsPerPost: 2, Products: 20, Orders: 30},
		{Seed: 2, Users: 10},
		{Seed: 3, Products: 5, Orders: 5}, // orders without users
		{},
	} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			ds := decodeDataset(t, generate(t, cfg))
			posts := cfg.Users * cfg.PostsPerUser
			if len(ds.Users) != cfg.Users || len(ds.Posts) != posts || len(ds.Comments) != posts*cfg.CommentsPerPost ||
				len(ds.Products) != cfg.Products || len(ds.Orders) != cfg.Orders {
				t.Fatalf("got %d users, %d posts, %d comments, %d products, %d orders",
					len(ds.Users), len(ds.Posts), len(ds.Comments), len(ds.Products), len(ds.Orders))
			}
			for i, u := range ds.Users {
				if u.ID != int64(i+1) || u.Name == "" || !strings.Contains(u.Email, "@") {
					t.Fatalf("users[%d] = %+v", i, u)
				}
			}
			for _, p := range ds.Posts {
				if p.UserID < 1 || p.UserID > int64(cfg.Users) || p.Title == "" {
					t.Fatalf("post %+v", p)
				}
			}
			for _, c := range ds.Comments {
				if c.PostID < 1 || c.PostID > int64(posts) || c.AuthorID < 1 || c.AuthorID > int64(cfg.Users) {
					t.Fatalf("comment %+v", c)
				}
			}
			for _, o := range ds.Orders {
				if o.ProductID < 1 || o.ProductID > int64(cfg.Products) || o.UserID < 0 || o.UserID > int64(cfg.Users) ||
					o.Quantity < 1 || o.CustomerName == "" {
					t.Fatalf("order %+v", o)
				}
			}
		})
	}
}

func TestGenerateRefusesBadSizes(t *testing.T) {
	for _, cfg := range []GenConfig{{Users: -1}, {Orders: 3}} {
		if err := Generate(io.Discard, cfg); err == nil {
			t.Errorf("Generate(%+v) succeeded", cfg)
		}
	}
}

// The filters of the large-data scenarios must be selective but not empty, and only
// the words meant to match may match.
func TestGenerateSelectivity(t *testing.T) {
	var people, products []string
	for _, st := range nameStyles {
		for _, p := range slices.Concat(st.given, st.family) {
			people = append(people, p.text, p.ascii)
		}
		people = append(people, st.domains...)
	}
	people = slices.Concat(people, nicknames, emailTags, workDomains, []string{"acme.io", "accounts-payable"})
	for _, w := range people {
		if strings.Contains(strings.ToLower(w), "ann") {
			t.Errorf("%q contains ann", w)
		}
	}
	for _, c := range categories {
		products = append(products, c.name)
		products = append(products, c.nouns...)
	}
	for _, w := range slices.Concat(products, adjectives, brands) {
		if strings.Contains(strings.ToLower(w), "pro") {
			t.Errorf("%q contains pro", w)
		}
	}
	ds := decodeDataset(t, generate(t, GenConfig{Seed: 1, Users: 20000, Products: 5000}))
	ann := 0
	for _, u := range ds.Users {
		if strings.Contains(strings.ToLower(u.Name+" "+u.Email), "ann") {
			ann++
		}
	}
	pro := 0
	for _, p := range ds.Products {
		var price float64
		fmt.Sscan(string(p.Price), &price)
		if price > 500 && strings.Contains(strings.ToLower(p.Name), "pro") {
			pro++
		}
	}
	if ann < 20 || ann > 400 {
		t.Errorf("%d of 20000 users match ann, want 0.1%% to 2%%", ann)
	}
	if pro < 10 || pro > 250 {
		t.Errorf("%d of 5000 products match the OData filter, want 0.2%% to 5%%", pro)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(5), 50, 5 * time.Millisecond},
		{ms(5), 99, 5 * time.Millisecond},
		{ms(1, 2), 50, 1 * time.Millisecond},
		{ms(1, 2), 51, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 75, 3 * time.Millisecond},
		{ms(1, 2, 3, 4), 76, 4 * time.Millisecond},
		{ms(hundred...), 50, 50 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 99.5, 100 * time.Millisecond},
		{ms(hundred...), 100, 100 * time.Millisecond},
		{ms(hundred...), 0, 1 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("percentile(%d samples, %v) = %v, want %v", len(tc.sorted), tc.p, got, tc.want)
		}
	}
}

func TestLoadRun(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	l := Load{Workers: 4, Warmup: 20 * time.Millisecond, Duration: 50 * time.Millisecond,
		Call: func(ctx context.Context, w int, rng *rand.Rand) error {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
			if n%5 == 0 {
				return errors.New("every fifth call fails")
			}
			return nil
		}}
	res := l.Run(context.Background())
	if res.OK == 0 || res.Errors == 0 || res.FirstErr == nil {
		t.Fatalf("OK %d, errors %d, first error %v", res.OK, res.Errors, res.FirstErr)
	}
	if len(res.Latencies) != res.OK || !slices.IsSorted(res.Latencies) {
		t.Fatalf("%d latencies for %d calls, sorted: %v", len(res.Latencies), res.OK, slices.IsSorted(res.Latencies))
	}
	if res.OK+res.Errors >= calls {
		t.Fatalf("the warm-up's calls were counted: %d counted of %d made", res.OK+res.Errors, calls)
	}
}

func TestParseProcStatus(t *testing.T) {
	const status = "Name:\tquartet\nVmPeak:\t 1000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t7\n"
	m, err := parseProcStatus(strings.NewReader(status))
	if err != nil || m.rss != 1<<20 || m.peak != 2<<20 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if _, err := parseProcStatus(strings.NewReader("VmRSS:\t1 kB\n")); err == nil {
		t.Fatal("a status without VmHWM parsed")
	}
	if _, err := parseProcStatus(strings.NewReader("VmRSS:\t1 MB\nVmHWM:\t1 kB\n")); err == nil {
		t.Fatal("a status in MB parsed")
	}
}

var (
	buildOnce  sync.Once
	quartetBin string
	buildErr   error
)

// buildQuartet builds the service from the repository above this module, once.
func buildQuartet(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bench-test-")
		if err != nil {
			buildErr = err
			return
		}
		quartetBin = filepath.Join(dir, "quartet")
		cmd := exec.Command("go", "build", "-o", quartetBin, ".")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return quartetBin
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "legit" { // the hostile check's own client, started by a test
		if err := dispatch(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if quartetBin != "" {
		os.RemoveAll(filepath.Dir(quartetBin))
	}
	os.Exit(code)
}

// TestServiceLoadsDatasetAndPeersAgree starts the real service on a generated file
// and checks that it serves it, and that every yardstick answers the benchmarked
// requests with the same data, so the side-by-side figures compare like with like.
func TestServiceLoadsDatasetAndPeersAgree(t *testing.T) {
	bin := buildQuartet(t)
	cfg := GenConfig{Seed: 3, Users: 40, PostsPerUser: 3, CommentsPerPost: 2, Products: 30, Orders: 20}
	path := filepath.Join(t.TempDir(), "ds.json")
	if err := writeDataset(path, cfg); err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: &runConfig{small: cfg}, quartetBin: bin}
	ctx := context.Background()
	p, err := h.startQuartet(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()

	ds, err := readPeerDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	sdl, err := os.ReadFile("../schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	gg, err := graphGophersHandler(string(sdl), ds)
	if err != nil {
		t.Fatal(err)
	}
	ggServer := httptest.NewServer(gg)
	defer ggServer.Close()
	bare := httptest.NewServer(bareHTTPHandler(ds))
	defer bare.Close()

	client := &http.Client{Timeout: 10 * time.Second}
	// get makes the call with net/http and with the load client, which must read
	// the same answer.
	get := func(base string, hr httpRequest) any {
		t.Helper()
		var vs [2]any
		for i := range vs {
			var b []byte
			var err error
			if i == 0 {
				b, err = doHTTP(ctx, client, base, hr, true)
			} else {
				b, err = probeHTTP(ctx, strings.TrimPrefix(base, "http://"), hr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &vs[i]); err != nil {
				t.Fatalf("%s%s: %v", base, hr.path, err)
			}
		}
		if !reflect.DeepEqual(vs[0], vs[1]) {
			t.Fatalf("%s%s: net/http read %v, the load client %v", base, hr.path, vs[0], vs[1])
		}
		return vs[0]
	}

	var all []any
	if v, ok := get(p.httpBase(), httpRequest{method: "GET", path: "/api/users"}).([]any); !ok || len(v) != cfg.Users {
		t.Fatalf("GET /api/users: %d users, want %d", len(v), cfg.Users)
	} else {
		all = v
	}
	user7 := httpRequest{method: "GET", path: "/api/users/7"}
	if q, b := get(p.httpBase(), user7), get(bare.URL, user7); !reflect.DeepEqual(q, b) || !reflect.DeepEqual(q, all[6]) {
		t.Errorf("GET /api/users/7: quartet %v, bare net/http %v", q, b)
	}

	hdr := http.Header{"Content-Type": {"application/json"}}
	for _, query := range []string{
		"{ user(id: 7) { id name email } }",
		"{ users { name posts(limit: 2) { title comments { text } } } }",
		"{ post(id: 5) { id title content userId createdAt user { id email createdAt } comments { id postId text createdAt author { name } } } }",
	} {
		body, _ := json.Marshal(map[string]string{"query": query})
		gql := httpRequest{method: "POST", path: "/graphql", body: body, header: hdr}
		q, g := get(p.httpBase(), gql), get(ggServer.URL, gql)
		if !reflect.DeepEqual(q, g) {
			t.Errorf("%s:\nquartet       %v\ngraph-gophers %v", query, q, g)
		}
		if query == "{ user(id: 7) { id name email } }" { // the ceiling's one answer
			if c := get(bare.URL, gql); !reflect.DeepEqual(q, c) {
				t.Errorf("%s:\nquartet       %v\nceiling       %v", query, q, c)
			}
		}
	}

	grpcPeer := &bareUserService{users: map[int32]genUser{}}
	for _, u := range ds.Users {
		grpcPeer.users[int32(u.ID)] = u
	}
	want, err := grpcPeer.GetUser(ctx, &userpb.GetUserRequest{Id: 7})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	got, err := userpb.NewUserServiceClient(cc).GetUser(ctx, &userpb.GetUserRequest{Id: 7})
	if err != nil || !proto.Equal(got, want) {
		t.Errorf("GetUser(7): quartet %v (%v), bare grpc-go %v", got, err, want)
	}
}

// TestFanOutClient: the harness's subscribers, against the fan-out ceiling
// (bareFanOut, which also pings them and refuses any other subscription), each
// get every measured event, and the row's summary counts them.
func TestFanOutClient(t *testing.T) {
	srv := httptest.NewServer(bareHTTPHandler(&peerDataset{}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if status, err := probeWebSocket(addr); err != nil || status != http.StatusSwitchingProtocols {
		t.Fatalf("probe: %d, %v", status, err)
	}
	subscribed := 0
	events, err := runFanOut(context.Background(), addr, 25, 3, nil, func() { subscribed++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || subscribed != 1 {
		t.Fatalf("%d events measured, subscribed told %d times; want 3 and 1", len(events), subscribed)
	}
	for i, res := range events {
		if res.delivered != 25 || len(res.latencies) != 25 || res.last != res.latencies[24] {
			t.Fatalf("event %d: delivered %d, %d latencies, last %v", i+1, res.delivered, len(res.latencies), res.last)
		}
	}
	sum, measure, all := summarizeFanOut(events, 25, time.Minute)
	if !all || sum.OK != 75 || len(sum.Latencies) != 75 || !strings.HasPrefix(measure, "3 of 3 events to all 25;") {
		t.Fatalf("summary: %d delivered, %d latencies, %q, all in time %v", sum.OK, len(sum.Latencies), measure, all)
	}
	if _, _, all := summarizeFanOut(append(events, fanOutResult{delivered: 24}), 25, time.Minute); all {
		t.Fatal("an event that missed a subscriber passed")
	}
	if _, _, all := summarizeFanOut(events, 25, 0); all {
		t.Fatal("events later than the limit passed")
	}
}

func TestProbeWebSocketRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if status, err := probeWebSocket(strings.TrimPrefix(srv.URL, "http://")); err != nil || status != http.StatusNotFound {
		t.Fatalf("probe: %d, %v", status, err)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		ok   bool
	}{
		{"1234 (quartet) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0 9 0 100 200 300", 2 * time.Second, true},
		{"1234 (a) b) c) R 1 2 3 4 5 6 7 8 9 10 7 3 1 1", 100 * time.Millisecond, true}, // ')' in the name
		{"1234 (quartet) S 1 2 3", 0, false},
		{"1234 quartet S 1 2 3 4 5 6 7 8 9 10 150 50", 0, false},
		{"1234 (quartet) S 1 2 3 4 5 6 7 8 9 10 x 50", 0, false},
	} {
		got, err := parseProcStat(tc.line)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseProcStat(%q) = %v, %v; want %v (ok %v)", tc.line, got, err, tc.want, tc.ok)
		}
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseProcStat(string(b)); err != nil {
		t.Fatalf("this process's own stat: %v", err)
	}
}
