package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestReturnFreeMemory: a burst's garbage, not yet collected, is collected and given
// back when more than the threshold is reclaimable, and left alone when less is.
func TestReturnFreeMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the burst stays uncollected until returnFreeMemory collects it
	runtime.GC()
	burst := make([][]byte, 64)
	for i := range burst {
		burst[i] = make([]byte, 1<<20)
	}
	runtime.KeepAlive(burst)
	burst = nil
	if r := reclaimableHeap(); r < 64<<20 {
		t.Fatalf("only %d bytes reclaimable after a 64 MiB burst", r)
	}
	if !returnFreeMemory(32 << 20) {
		t.Fatal("more than 32 MiB reclaimable, yet nothing given back")
	}
	if r := reclaimableHeap(); r > 32<<20 {
		t.Errorf("%d bytes still reclaimable after giving them back", r)
	}
	if returnFreeMemory(1 << 40) {
		t.Error("gave memory back with less reclaimable than the threshold")
	}
}
