package metrics

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// clientGolang is what Prometheus's Go client writes for the families it shares
// with this package: name, type and help, word for word.
var clientGolang = []struct{ name, typ, help string }{
	{"go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."},
	{"go_goroutines", "gauge", "Number of goroutines that currently exist."},
	{"go_info", "gauge", "Information about the Go environment."},
	{"go_memstats_alloc_bytes", "gauge", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes."},
	{"go_memstats_alloc_bytes_total", "counter", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes."},
	{"go_memstats_heap_alloc_bytes", "gauge", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes."},
	{"go_memstats_heap_inuse_bytes", "gauge", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes"},
	{"go_memstats_heap_sys_bytes", "gauge", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes."},
	{"go_memstats_sys_bytes", "gauge", "Number of bytes obtained from system. Equals to /memory/classes/total:byte."},
	{"go_memstats_last_gc_time_seconds", "gauge", "Number of seconds since 1970 of last garbage collection."},
	{"go_threads", "gauge", "Number of OS threads created."},
	{"process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds."},
	{"process_max_fds", "gauge", "Maximum number of open file descriptors."},
	{"process_open_fds", "gauge", "Number of open file descriptors."},
	{"process_resident_memory_bytes", "gauge", "Resident memory size in bytes."},
	{"process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds."},
	{"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes."},
}

func scrapeRuntime(t *testing.T) (string, func(name string, labels ...string) float64) {
	t.Helper()
	var m Set
	text := string(m.appendText(nil, nil))
	samples := testkit.ParseExposition(t, text)
	return text, func(name string, labels ...string) float64 { return testkit.FindSample(samples, name, labels...) }
}

// TestRuntimeSeries: every family a stock Go dashboard reads is there, named, typed
// and explained as client_golang does, once, in a scrape the format's parser takes.
func TestRuntimeSeries(t *testing.T) {
	text, value := scrapeRuntime(t)
	for _, f := range clientGolang {
		if want := "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.typ + "\n"; !strings.Contains(text, want) {
			t.Errorf("want\n%s", want)
		}
	}
	if v := value("go_info", "version", runtime.Version()); v != 1 {
		t.Errorf("go_info{version=%q} = %v", runtime.Version(), v)
	}
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		if !strings.Contains(text, `go_gc_duration_seconds{quantile="`+q+`"} `) {
			t.Errorf("no go_gc_duration_seconds quantile %s", q)
		}
	}
}

// TestRuntimeSeriesMove: the figures are this process's and move as it does: more
// goroutines, files, collections and allocations show in the next scrape, and the
// memory figures nest as their definitions say.
func TestRuntimeSeriesMove(t *testing.T) {
	runtime.GC()
	_, before := scrapeRuntime(t)
	stop := make(chan struct{})
	for range 20 {
		go func() { <-stop }()
	}
	defer close(stop)
	dir := t.TempDir()
	for i := range 5 {
		f, err := os.Create(filepath.Join(dir, string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	keep := make([]byte, 8<<20)
	runtime.GC()
	_, after := scrapeRuntime(t)
	runtime.KeepAlive(keep)

	moved := func(name string, atLeast float64) {
		t.Helper()
		if d := after(name) - before(name); d < atLeast {
			t.Errorf("%s moved by %v, want at least %v", name, d, atLeast)
		}
	}
	moved("go_goroutines", 20)
	moved("process_open_fds", 5)
	moved("go_gc_duration_seconds_count", 1)
	moved("go_memstats_alloc_bytes_total", 8<<20)
	moved("go_memstats_heap_alloc_bytes", 6<<20) // less what the first collection freed
	moved("process_cpu_seconds_total", 0)
	if after("go_memstats_heap_alloc_bytes") != after("go_memstats_alloc_bytes") ||
		after("go_memstats_heap_alloc_bytes") > after("go_memstats_heap_inuse_bytes") ||
		after("go_memstats_heap_inuse_bytes") > after("go_memstats_heap_sys_bytes") ||
		after("go_memstats_heap_sys_bytes") > after("go_memstats_sys_bytes") {
		t.Errorf("heap figures do not nest: alloc %v, in use %v, from the system %v, all %v", after("go_memstats_heap_alloc_bytes"),
			after("go_memstats_heap_inuse_bytes"), after("go_memstats_heap_sys_bytes"), after("go_memstats_sys_bytes"))
	}
	if rss, vsz := after("process_resident_memory_bytes"), after("process_virtual_memory_bytes"); rss < 8<<20 || rss > vsz {
		t.Errorf("resident %v, virtual %v", rss, vsz)
	}
	if open, most := after("process_open_fds"), after("process_max_fds"); open < 5 || open > most {
		t.Errorf("%v descriptors open, at most %v", open, most)
	}
	start, last := after("process_start_time_seconds"), after("go_memstats_last_gc_time_seconds")
	if now := float64(time.Now().UnixNano()) / 1e9; start <= 0 || start > last || last > now {
		t.Errorf("started %v, last collection %v, now %v: want them in that order", start, last, now)
	}
	if after("go_threads") < 1 || after("process_cpu_seconds_total") <= 0 {
		t.Errorf("%v threads, %v s of CPU", after("go_threads"), after("process_cpu_seconds_total"))
	}
}

// BenchmarkRuntimeSeries measures what the runtime's and the process's series add
// to a scrape.
func BenchmarkRuntimeSeries(b *testing.B) {
	b.ReportAllocs()
	var t Text
	for b.Loop() {
		t.b = t.b[:0]
		t.appendRuntime()
		t.appendProcess()
	}
}
