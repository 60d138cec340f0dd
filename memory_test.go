package main

import (
	"runtime"
	"testing"
)

// TestReturnFreeMemory: once a burst's garbage is collected, its memory is given back
// when more than the threshold sits free, and left alone when less does.
func TestReturnFreeMemory(t *testing.T) {
	burst := make([][]byte, 64)
	for i := range burst {
		burst[i] = make([]byte, 1<<20)
	}
	runtime.KeepAlive(burst)
	burst = nil
	runtime.GC()
	if free := freeHeapBytes(); free < 48<<20 {
		t.Skipf("only %d bytes free after a 64 MiB burst: the runtime gave them back already", free)
	}
	if !returnFreeMemory(32 << 20) {
		t.Fatal("more than 32 MiB free, yet nothing given back")
	}
	if free := freeHeapBytes(); free > 32<<20 {
		t.Errorf("%d bytes still free after giving them back", free)
	}
	if returnFreeMemory(1 << 40) {
		t.Error("gave memory back with less free than the threshold")
	}
}
