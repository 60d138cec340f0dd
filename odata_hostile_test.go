package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
	"quartet/odata"
)

// The hostile OData attacks, replayed over the real HTTP server (the one start
// builds, with its header bound) on a store of 20,000 products: each is refused by
// the bound its answer names, and replaying them all leaves the heap about where it
// was.

// hostileProducts is the store size of bench's hostile check (bench/README).
const hostileProducts = 20_000

// busyProductOrders is how many orders product 1 has: any over them nested in any
// over them is the square of that, 10^8, unless evaluation is bounded.
const busyProductOrders = 10_000

// startHostileODataApp starts the service on a dataset of hostileProducts products,
// the first of which has busyProductOrders orders.
func startHostileODataApp(t *testing.T) string {
	t.Helper()
	ds := Dataset{}
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range int64(hostileProducts) {
		ds.Products = append(ds.Products, Product{ID: i + 1, Name: fmt.Sprintf("Product %d", i+1), Price: Decimal((i%1000 + 1) * 10_000),
			Category: []string{"Books", "Garden", "Toys"}[i%3], CreatedDate: day.Add(time.Duration(i) * time.Hour), IsActive: i%2 == 0})
	}
	for i := range int64(busyProductOrders) {
		ds.Orders = append(ds.Orders, Order{ID: i + 1, ProductID: 1, CustomerName: "Alice", OrderDate: day, Quantity: i%7 + 1})
	}
	b, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "products.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.demo, cfg.load = false, file
	a, _ := startApp(t, cfg)
	return "http://" + a.httpAddr
}

// odataBadRequest is the OData error body.
type odataBadRequest struct {
	Error struct{ Code, Message string }
}

func TestODataHostile(t *testing.T) {
	testkit.SkipIfShort(t, "builds a store of 20,000 products")
	base := startHostileODataApp(t)
	get := func(t *testing.T, rawQuery string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(base + "/api/products?" + rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	repeat := func(term, sep string, n int) string { return strings.TrimSuffix(strings.Repeat(term+sep, n), sep) }

	// The legitimate edge: as many keys as allowed, and any over every order, over the
	// whole store.
	for _, q := range []string{
		"$orderby=" + repeat("isActive", ",", 8) + "&$top=1&$select=id",
		"$filter=" + url.QueryEscape("orders/any(o: o/quantity gt 6) and orders/$count gt 1") + "&$select=id",
	} {
		if code, body := get(t, q); code != http.StatusOK {
			t.Fatalf("%s: %d %s", q, code, body)
		}
	}

	attacks := []struct {
		name, rawQuery string
		msg            string // in the OData error's message
	}{
		// bench's hostile attack, 54 KB: the query string's bound refuses it before the
		// keys are counted. The next two are the key and node bounds on their own.
		{"6,000 $orderby keys", "$orderby=" + repeat("isActive", ",", 6000) + "&$top=1", "bytes exceeds the maximum of 8192"},
		{"9 $orderby keys", "$orderby=" + repeat("isActive", ",", 9) + "&$top=1", "$orderby has more than 8 keys"},
		{"201-node $filter", "$filter=" + url.QueryEscape(repeat("isActive", " or ", 101)) + "&$top=1", "more than 200 expression nodes"},
		{"2,000-term $filter", "$filter=" + url.QueryEscape(repeat("true", " or ", 2000)) + "&$top=1", "exceeds the maximum of 8192"},
		{"10,000-deep not", "$filter=" + strings.Repeat("not+", 10000) + "true", "exceeds the maximum of 8192"},
		{"deep not under the length bound", "$filter=" + strings.Repeat("not+", 1000) + "true", "nested too deeply"},
		{"3-deep lambda", "$filter=" + url.QueryEscape("orders/any(o: o/product/orders/any(p: p/product/orders/any()))"), "any and all nested more than 2 deep"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			code, body := get(t, a.rawQuery)
			var e odataBadRequest
			if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error.Code != "BadRequest" || !strings.Contains(e.Error.Message, a.msg) {
				t.Fatalf("got %d %s, want 400 with an OData error saying %q", code, body, a.msg)
			}
		})
	}

	// Bounds on the text cannot see what depends on the data: two any over product
	// 1's orders, nested, would visit 10^8 orders, and three chains of 30 nested
	// concat (1.8 KB) would build 380 MB of strings, each for seconds. Evaluation
	// stops past odata.DefaultLimits.MaxVisits and MaxStringBytes instead: that they
	// are refused at all shows the count stopped them.
	chain := "name"
	for range 30 {
		chain = "concat(" + chain + ",name)"
	}
	visits := fmt.Sprintf("evaluating the query reached more than %d related entities", odata.DefaultLimits.MaxVisits)
	strs := fmt.Sprintf("evaluating the query built more than %d bytes of strings", odata.DefaultLimits.MaxStringBytes)
	dataDependent := []struct{ name, filter, msg string }{
		{"any in any", "orders/any(o: o/product/orders/any(p: p/quantity lt 0))", visits},
		{"$count in any", "orders/any(o: o/product/orders/$count lt 0)", visits},
		{"any over the root in any", "orders/any(o: orders/any(p: p/id lt 0))", visits},
		{"nested concat", repeat("length("+chain+") eq 0", " or ", 3), strs},
	}
	for _, d := range dataDependent {
		t.Run(d.name, func(t *testing.T) {
			code, body := get(t, "$filter="+url.QueryEscape(d.filter)+"&$select=id")
			var e odataBadRequest
			if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error.Message, d.msg) {
				t.Fatalf("got %d %s, want 400 with an OData error saying %q", code, body, d.msg)
			}
		})
	}

	// Past the HTTP server's header bound (64 KiB, main.go) net/http answers 431 itself
	// before any route sees the request: a 10,000-term $filter (80 KB) and a 1 MB query.
	huge := []struct{ name, rawQuery string }{
		{"10,000-term $filter", "$filter=" + repeat("true", "+or+", 10000) + "&$top=1"},
		{"1 MB query string", "$filter=" + strings.Repeat("a", 1<<20)},
	}
	for _, h := range huge {
		t.Run(h.name, func(t *testing.T) {
			if code := rawGet(t, base, "/api/products?"+h.rawQuery); code != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("got %d, want 431", code)
			}
		})
	}

	t.Run("heap", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 20 {
			for _, a := range attacks {
				get(t, a.rawQuery)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		const most = 1 << 20 // measured: a few KiB
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > most {
			t.Errorf("heap grew by %d bytes over %d refused attacks, want at most %d", grew, 20*len(attacks), most)
		}
	})
}

// rawGet sends GET target on a connection of its own and returns the answer's status.
// The request is written by another goroutine: a server that refuses it may stop
// reading long before it is all sent.
func rawGet(t *testing.T, base, target string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	written := make(chan struct{})
	go func() {
		defer close(written)
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", target) // fails once the server closes: expected
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn.Close()
	<-written
	return resp.StatusCode
}
