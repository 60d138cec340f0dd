// Package memory keeps a long-running process's memory near what it holds live: it
// sets the collector's headroom from the live heap (unless GOGC is set), and gives
// free memory back to the system once a burst of allocation is over.
package memory

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning memory after a burst: Go's collector lets the heap grow to twice what
// was live and its scavenger returns memory slowly, so after a burst an idle
// service would stay at its peak for minutes. Every checkEvery, when the interval
// allocated less than quietAllocs, it collects and gives memory back if more than
// keepFree is reclaimable, or if an interval since the last return was busier
// (what a burst held at the last collection counts as live but is garbage now).
// Under steady traffic it does nothing: a forced collection would only add
// latency (bench/README.md, "Hostile load").
const (
	checkEvery  = 5 * time.Second
	keepFree    = 4 << 20
	quietAllocs = 4 << 20
)

// gcHeadroom: past it, the collector's headroom is the larger of gcHeadroom and
// half the live heap rather than all of it, so a large store's RSS under load is
// 1.5x its size instead of 2x (bench/README.md, "Start-up").
const gcHeadroom = 128 << 20

// gcFloor is the least headroom: a heap of a few megabytes would otherwise be
// collected every few megabytes allocated, an eighth of a small request's CPU
// (bench/README.md, "Start-up"); 400% makes the runtime's 4 MiB least heap it.
const gcFloor = 16 << 20

// gcPercentFor is the GOGC percentage that gives live bytes their headroom.
func gcPercentFor(live uint64) int {
	switch {
	case live < gcFloor:
		return int(min(400, 100*gcFloor/max(live, 1)))
	case live <= gcHeadroom:
		return 100
	}
	return int(100 * max(gcHeadroom, live/2) / live)
}

// heapSample is what the check reads of the heap, in bytes.
type heapSample struct {
	reclaimable uint64 // free, not given back, and allocated since the last collection
	allocs      uint64 // allocated since the process started
	live        uint64 // found live by the last collection
}

func readHeap() heapSample {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	free, objects, live := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	return heapSample{reclaimable: free + objects - min(live, objects), allocs: s[3].Value.Uint64(), live: live}
}

// memoryReturner gives reclaimable memory back once a burst is over, and keeps the
// collector's headroom in step with the live heap.
type memoryReturner struct {
	lastAllocs uint64 // the allocation count at the previous check
	busy       bool   // an interval since the last return allocated quietAllocs or more
	tuneGC     bool   // false where the environment sets GOGC
	gcPercent  int    // the GOGC percentage set last
}

// check collects and gives memory back as the constants say, and reports whether
// it did.
func (m *memoryReturner) check() bool {
	h := readHeap()
	m.setGCPercent(h.live)
	allocated := h.allocs - m.lastAllocs
	m.lastAllocs = h.allocs
	if allocated >= quietAllocs {
		m.busy = true
		return false
	}
	if !m.busy && h.reclaimable <= keepFree {
		return false
	}
	m.busy = false
	debug.FreeOSMemory()
	return true
}

func (m *memoryReturner) setGCPercent(live uint64) {
	if p := gcPercentFor(live); m.tuneGC && p != m.gcPercent {
		debug.SetGCPercent(p)
		m.gcPercent = p
	}
}

// Manage sets the collector's headroom for the heap as it is now and after every
// collection (a small heap's large percentage must not outlive a burst that makes
// it large), and checks every few seconds, until stop is closed.
func Manage(stop <-chan struct{}) { manage(stop, checkEvery) }

func manage(stop <-chan struct{}, every time.Duration) {
	h := readHeap()
	m := &memoryReturner{lastAllocs: h.allocs, tuneGC: os.Getenv("GOGC") == ""}
	m.setGCPercent(h.live)
	collected := make(chan struct{}, 1)
	signalCollections(collected, stop)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-collected:
			m.setGCPercent(readHeap().live)
		case <-t.C:
			m.check()
		}
	}
}

// signalCollections sends on ch after each collection until stop is closed: the
// cleanup of an object nothing keeps, made anew each time it runs.
func signalCollections(ch chan<- struct{}, stop <-chan struct{}) {
	runtime.AddCleanup(new([64]byte), func(struct{}) {
		select {
		case <-stop:
			return
		case ch <- struct{}{}:
		default: // one is waiting already
		}
		signalCollections(ch, stop)
	}, struct{}{})
}
