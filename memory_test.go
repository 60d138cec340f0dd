package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestMemoryReturner: a burst's garbage, not yet collected, is left alone while the
// burst allocates, then collected and given back once it is over; and nothing is
// done below the threshold.
func TestMemoryReturner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the burst stays uncollected until check collects it
	runtime.GC()
	m := &memoryReturner{keep: 32 << 20, quiet: 48 << 20, lastAllocs: readHeap().allocs}
	burst := make([][]byte, 64)
	for i := range burst {
		burst[i] = make([]byte, 1<<20)
	}
	runtime.KeepAlive(burst)
	burst = nil
	if r := readHeap().reclaimable; r < 64<<20 {
		t.Fatalf("only %d bytes reclaimable after a 64 MiB burst", r)
	}
	if m.check() {
		t.Fatal("gave memory back while the burst was allocating (64 MiB since the last check)")
	}
	if !m.check() {
		t.Fatal("more than 32 MiB reclaimable and nothing allocated since, yet nothing given back")
	}
	if r := readHeap().reclaimable; r > 32<<20 {
		t.Errorf("%d bytes still reclaimable after giving them back", r)
	}
	m.keep = 1 << 40
	if m.check() {
		t.Error("gave memory back with less reclaimable than the threshold")
	}
}
