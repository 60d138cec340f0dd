package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning memory after a burst. Go's collector keeps free heap memory for reuse up to
// about its next goal, twice the live heap, and its background scavenger hands the rest
// back slowly; after a burst of large requests (a load, an attack) the process would stay
// at its peak size for minutes. Checking every memoryCheckEvery, and giving everything
// back once more than memoryKeepFree sits free, keeps the resident size near the live
// heap at the price of one extra collection per burst (bench/README.md, "Hostile load").
const (
	memoryCheckEvery = 5 * time.Second
	memoryKeepFree   = 16 << 20
)

// freeHeapBytes is the heap memory that is free but not yet given back to the system.
func freeHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// returnFreeMemory gives the free heap back to the system when more than keep bytes of
// it are held, and reports whether it did.
func returnFreeMemory(keep uint64) bool {
	if freeHeapBytes() <= keep {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// returnFreeMemoryEvery calls returnFreeMemory every interval until stop is closed.
func returnFreeMemoryEvery(interval time.Duration, keep uint64, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			returnFreeMemory(keep)
		}
	}
}
