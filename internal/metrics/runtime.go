package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The Go runtime's and the process's own series end every scrape, under the names,
// types, units and help of Prometheus's Go client (client_golang's Go and process
// collectors), so that stock Go dashboards and alerts work. The runtime's figures
// come from runtime/metrics, which, unlike runtime.ReadMemStats, does not stop the
// world; the process's from getrusage, getrlimit and /proc/self, the ones Linux alone
// has left out elsewhere.

// The runtime/metrics samples read.
const (
	heapObjects  = "/memory/classes/heap/objects:bytes"
	heapUnused   = "/memory/classes/heap/unused:bytes"
	heapFree     = "/memory/classes/heap/free:bytes"
	heapReleased = "/memory/classes/heap/released:bytes"
	heapStacks   = "/memory/classes/heap/stacks:bytes"
	osStacks     = "/memory/classes/os-stacks:bytes"
	memTotal     = "/memory/classes/total:bytes"
	allocBytes   = "/gc/heap/allocs:bytes"
	allocObjects = "/gc/heap/allocs:objects"
	tinyAllocs   = "/gc/heap/tiny/allocs:objects"
	freeObjects  = "/gc/heap/frees:objects"
	liveObjects  = "/gc/heap/objects:objects"
	heapGoal     = "/gc/heap/goal:bytes"
	goroutines   = "/sched/goroutines:goroutines"
)

var runtimeNames = []string{heapObjects, heapUnused, heapFree, heapReleased, heapStacks, osStacks, memTotal,
	allocBytes, allocObjects, tinyAllocs, freeObjects, liveObjects, heapGoal, goroutines}

// memstats are client_golang's go_memstats_ families, each the sum of samples as
// client_golang computes them from runtime/metrics.
var memstats = []struct {
	name, typ, help string
	sum             []string
}{
	{"alloc_bytes", "gauge", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", []string{heapObjects}},
	{"alloc_bytes_total", "counter", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", []string{allocBytes}},
	{"sys_bytes", "gauge", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", []string{memTotal}},
	{"mallocs_total", "counter", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", []string{allocObjects, tinyAllocs}},
	{"frees_total", "counter", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", []string{freeObjects, tinyAllocs}},
	{"heap_alloc_bytes", "gauge", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", []string{heapObjects}},
	{"heap_sys_bytes", "gauge", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", []string{heapObjects, heapUnused, heapReleased, heapFree}},
	{"heap_idle_bytes", "gauge", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", []string{heapReleased, heapFree}},
	{"heap_inuse_bytes", "gauge", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", []string{heapObjects, heapUnused}},
	{"heap_released_bytes", "gauge", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", []string{heapReleased}},
	{"heap_objects", "gauge", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", []string{liveObjects}},
	{"stack_inuse_bytes", "gauge", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", []string{heapStacks}},
	{"stack_sys_bytes", "gauge", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", []string{heapStacks, osStacks}},
	{"next_gc_bytes", "gauge", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", []string{heapGoal}},
}

// appendRuntime appends the go_ families.
func (t *Text) appendRuntime() {
	samples := make([]rtmetrics.Sample, len(runtimeNames))
	for i, name := range runtimeNames {
		samples[i].Name = name
	}
	rtmetrics.Read(samples)
	value := make(map[string]float64, len(samples)) // a name this Go does not have reads 0
	for _, sample := range samples {
		if sample.Value.Kind() == rtmetrics.KindUint64 {
			value[sample.Name] = float64(sample.Value.Uint64())
		}
	}
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5) // the minimum, the quartiles, the maximum
	debug.ReadGCStats(&gc)
	t.Family("go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		t.Sample("go_gc_duration_seconds", gc.PauseQuantiles[i].Seconds(), "quantile", q)
	}
	t.Sample("go_gc_duration_seconds_sum", gc.PauseTotal.Seconds())
	t.Sample("go_gc_duration_seconds_count", float64(gc.NumGC))
	t.one("go_goroutines", "gauge", "Number of goroutines that currently exist.", value[goroutines])
	t.Family("go_info", "gauge", "Information about the Go environment.")
	t.Sample("go_info", 1, "version", runtime.Version())
	var lastGC float64
	if !gc.LastGC.IsZero() {
		lastGC = float64(gc.LastGC.UnixNano()) / 1e9
	}
	t.one("go_memstats_last_gc_time_seconds", "gauge", "Number of seconds since 1970 of last garbage collection.", lastGC)
	for _, m := range memstats {
		var v float64
		for _, name := range m.sum {
			v += value[name]
		}
		t.one("go_memstats_"+m.name, m.typ, m.help, v)
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	t.one("go_threads", "gauge", "Number of OS threads created.", float64(threads))
}

// appendProcess appends the process_ families it can read.
func (t *Text) appendProcess() {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		t.one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu.Seconds())
	}
	var limit syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit) == nil {
		t.one("process_max_fds", "gauge", "Maximum number of open file descriptors.", float64(limit.Cur))
	}
	if fds, err := openFDs(); err == nil {
		t.one("process_open_fds", "gauge", "Number of open file descriptors.", float64(fds))
	}
	if st, err := readStat(); err == nil {
		t.one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", float64(st.rssPages*int64(os.Getpagesize())))
		if boot, err := bootTime(); err == nil {
			start := float64(boot) + float64(st.startTicks)/clockTicks
			t.one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", start)
		}
		t.one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", float64(st.vsize))
	}
}

// one adds a family of one sample without labels.
func (t *Text) one(name, typ, help string, v float64) {
	t.Family(name, typ, help)
	t.Sample(name, v)
}

// openFDs counts the entries of /proc/self/fd, the one reading it included, as
// client_golang does.
func openFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err != nil || len(names) == 0 {
			return n, nil
		}
	}
}

// procStat is what /proc/self/stat says of the process's memory and start.
type procStat struct {
	startTicks, vsize, rssPages int64
}

// readStat reads /proc/self/stat: after the command, in parentheses that it may hold
// itself, come the fields from the third on (proc(5)).
func readStat() (procStat, error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, err
	}
	fields := bytes.Fields(data[bytes.LastIndexByte(data, ')')+1:])
	field := func(n int) int64 { // n counted as proc(5) does, from 1
		if n-3 >= len(fields) {
			return 0
		}
		v, _ := strconv.ParseInt(string(fields[n-3]), 10, 64)
		return v
	}
	return procStat{startTicks: field(22), vsize: field(23), rssPages: field(24)}, nil
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on every Linux Go supports.
const clockTicks = 100

// bootTime is when the system booted, in seconds since the epoch (/proc/stat btime),
// read once.
var bootTime = sync.OnceValues(func() (int64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		}
	}
	return 0, os.ErrNotExist
})
