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
// collects and gives everything back once more than memoryKeepFree is reclaimable
// and the last interval allocated less than memoryQuietAllocs: the burst is over.
// Under load it does nothing: the collector runs often then anyway, and a forced
// collection and return, which holds the heap while it gives memory back, would
// only add to the answers' latency (bench/README.md, "Hostile load").
const (
	memoryCheckEvery  = 5 * time.Second
	memoryKeepFree    = 4 << 20
	memoryQuietAllocs = 64 << 20
)

// heapSample is what the check reads of the heap, in bytes.
type heapSample struct {
	reclaimable uint64 // held beyond what the last collection found live
	allocs      uint64 // allocated since the process started
}

// readHeap samples the heap. What is reclaimable is the free memory not yet given
// back to the system and the objects allocated since the last collection (garbage,
// once a burst is over).
func readHeap() heapSample {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	free, objects, live := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	return heapSample{reclaimable: free + objects - min(live, objects), allocs: s[3].Value.Uint64()}
}

// memoryReturner gives the heap's reclaimable memory back once a burst is over.
type memoryReturner struct {
	keep       uint64 // reclaimable bytes that may stay
	quiet      uint64 // allocations between two checks below which the service is quiet
	lastAllocs uint64 // the allocation count at the previous check
}

// check collects and gives memory back when more than keep bytes are reclaimable
// and fewer than quiet bytes were allocated since the previous check, and reports
// whether it did.
func (m *memoryReturner) check() bool {
	h := readHeap()
	allocated := h.allocs - m.lastAllocs
	m.lastAllocs = h.allocs
	if h.reclaimable <= m.keep || allocated >= m.quiet {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// returnFreeMemoryEvery checks every interval until stop is closed.
func returnFreeMemoryEvery(interval time.Duration, keep, quiet uint64, stop <-chan struct{}) {
	m := &memoryReturner{keep: keep, quiet: quiet, lastAllocs: readHeap().allocs}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.check()
		}
	}
}
