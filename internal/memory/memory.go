// Package memory keeps a long-running process's memory near what it holds live: it
// sets the collector's headroom from the live heap (unless GOGC is set), and gives
// free memory back to the system once a burst of allocation is over. It knows
// nothing of what the process serves.
package memory

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning memory after a burst. Go's collector lets the heap grow to about twice
// what was live at the last collection before it collects again, and its background
// scavenger hands free memory back slowly; after a burst of large requests (a load,
// an attack) a service that then sees little traffic stays at its peak size for
// minutes, its garbage uncollected. Checking every checkEvery, the service
// collects and gives everything back once more than keepFree is reclaimable
// and the last interval allocated less than quietAllocs: the service is
// nearly idle. It does so too at the first such interval after a busier one,
// whatever the heap's figures say: they count as live what the last collection
// found live, and what a burst held then (its connections, its buffers) is
// garbage a moment later, uncollected until the next collection, which an idle
// service does not reach for two minutes. Under any steady traffic it does
// nothing: the collector runs as traffic allocates anyway, and a forced
// collection and return, which holds the heap while it gives memory back, would
// add to the answers' latency, and the memory given back would be faulted in
// again at once (bench/README.md, "Hostile load").
const (
	checkEvery  = 5 * time.Second
	keepFree    = 4 << 20
	quietAllocs = 4 << 20
)

// The collector's headroom: the garbage the heap may hold before the next
// collection. Go's default (GOGC=100) lets the heap grow by as much as was live,
// which for a store of a million users is about 300 MB of garbage between
// collections: RSS under load then doubles the store's size. Here the headroom is
// as much as was live up to gcHeadroom, and past that the larger of gcHeadroom and
// half the live heap: a large store's collections come twice as often per allocated
// byte, and its RSS under load is 1.5x its size instead of 2x (bench/README.md,
// "Start-up and memory"). A GOGC set in the environment is left to rule.
const gcHeadroom = 128 << 20

// gcPercentFor is the GOGC percentage that gives live bytes their headroom.
func gcPercentFor(live uint64) int {
	if live <= gcHeadroom {
		return 100
	}
	return int(100 * max(gcHeadroom, live/2) / live)
}

// heapSample is what the check reads of the heap, in bytes.
type heapSample struct {
	reclaimable uint64 // held beyond what the last collection found live
	allocs      uint64 // allocated since the process started
	live        uint64 // found live by the last collection
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
	return heapSample{reclaimable: free + objects - min(live, objects), allocs: s[3].Value.Uint64(), live: live}
}

// memoryReturner gives the heap's reclaimable memory back once a burst is over, and
// keeps the collector's headroom (gcPercentFor) in step with the live heap.
type memoryReturner struct {
	keep       uint64 // reclaimable bytes that may stay
	quiet      uint64 // allocations between two checks below which the service is quiet
	lastAllocs uint64 // the allocation count at the previous check
	busy       bool   // an interval since the last return allocated quiet bytes or more
	tuneGC     bool   // keep the headroom in step (false where the environment sets GOGC)
	gcPercent  int    // the GOGC percentage set last
}

// check collects and gives memory back when fewer than quiet bytes were allocated
// since the previous check and either an interval since the last return was busier
// or more than keep bytes are reclaimable, and reports whether it did.
func (m *memoryReturner) check() bool {
	h := readHeap()
	m.setGCPercent(h.live)
	allocated := h.allocs - m.lastAllocs
	m.lastAllocs = h.allocs
	if allocated >= m.quiet {
		m.busy = true
		return false
	}
	if !m.busy && h.reclaimable <= m.keep {
		return false
	}
	m.busy = false
	debug.FreeOSMemory()
	return true
}

// setGCPercent sets the GOGC percentage for live bytes, unless the environment
// set it.
func (m *memoryReturner) setGCPercent(live uint64) {
	if !m.tuneGC {
		return
	}
	if p := gcPercentFor(live); p != m.gcPercent {
		debug.SetGCPercent(p)
		m.gcPercent = p
	}
}

// Manage sets the collector's headroom for the heap as it is now, then checks
// every few seconds until stop is closed.
func Manage(stop <-chan struct{}) {
	h := readHeap()
	m := &memoryReturner{keep: keepFree, quiet: quietAllocs, lastAllocs: h.allocs, tuneGC: os.Getenv("GOGC") == ""}
	m.setGCPercent(h.live)
	t := time.NewTicker(checkEvery)
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
