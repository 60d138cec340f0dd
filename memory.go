package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning memory after a burst. Go's collector lets the heap grow to about twice
// what was live at the last collection before it collects again, and its background
// scavenger hands free memory back slowly; after a burst of large requests (a load,
// an attack) a service that then sees little traffic stays at its peak size for
// minutes, its garbage uncollected. Checking every memoryCheckEvery, the service
// collects and gives everything back once more than memoryKeepFree is reclaimable:
// at most one extra collection per check, which under load the collector would
// have run soon anyway (bench/README.md, "Hostile load").
const (
	memoryCheckEvery = 5 * time.Second
	memoryKeepFree   = 4 << 20
)

// reclaimableHeap is the heap memory held beyond what the last collection found
// live: free memory not yet given back to the system, and the objects allocated
// since (garbage, once a burst is over).
func reclaimableHeap() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	free, objects, live := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	return free + objects - min(live, objects)
}

// returnFreeMemory collects and gives the heap's reclaimable memory back when more
// than keep bytes of it are held, and reports whether it did.
func returnFreeMemory(keep uint64) bool {
	if reclaimableHeap() <= keep {
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
