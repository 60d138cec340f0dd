package memory

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// TestMemoryReturner: a burst's garbage, not yet collected, is left alone while the
// burst allocates and while steady traffic follows it, then collected and given back
// once the service is nearly idle; and nothing is done below the threshold. The
// thresholds are the service's own.
func TestMemoryReturner(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the burst stays uncollected until check collects it
	runtime.GC()
	m := &memoryReturner{lastAllocs: readHeap().allocs}
	allocate := func(mib int) [][]byte {
		b := make([][]byte, mib)
		for i := range b {
			b[i] = make([]byte, 1<<20)
		}
		return b
	}
	allocate(64)
	// Within a MiB: the heap's own figures move by a few hundred bytes meanwhile.
	if r := readHeap().reclaimable; r < 63<<20 {
		t.Fatalf("only %d bytes reclaimable after a 64 MiB burst", r)
	}
	if m.check() {
		t.Fatal("gave memory back while the burst was allocating (64 MiB since the last check)")
	}
	// The hostile check's legitimate client, 100 calls a second, allocates about
	// 9 MiB in an interval: steady traffic, during which a forced collection only
	// adds latency.
	allocate(10)
	if m.check() {
		t.Fatal("gave memory back while 10 MiB were allocated since the last check")
	}
	if !m.check() {
		t.Fatal("the burst's garbage reclaimable and nothing allocated since, yet nothing given back")
	}
	if r := readHeap().reclaimable; r > 32<<20 {
		t.Errorf("%d bytes still reclaimable after giving them back", r)
	}
	if m.check() {
		t.Error("gave memory back twice for one burst, with nothing reclaimable")
	}

	// A burst whose memory was live at the last collection: the heap's figures
	// count it as live, though it is garbage now.
	held := allocate(32)
	runtime.GC()
	runtime.KeepAlive(held) // live at that collection, garbage from here on
	if r := readHeap().reclaimable; r > keepFree {
		t.Fatalf("%d bytes reclaimable by the heap's figures; the test wants them to hide the burst", r)
	}
	if m.check() {
		t.Fatal("gave memory back while the burst was allocating")
	}
	live := readHeap().live
	if !m.check() {
		t.Fatal("nothing given back at the first quiet interval after a burst")
	}
	if after := readHeap().live; after > live-16<<20 {
		t.Errorf("live heap %d bytes after giving back, %d before: the burst's memory was not collected", after, live)
	}
}

// The collector's headroom is at least gcFloor (the runtime's own least heap, 4 MiB,
// grows with the percentage: 400% gives a tiny heap 16 MiB), as much as was live up
// to gcHeadroom, then the larger of gcHeadroom and half the live heap.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 400}, {1 * mib, 400}, {4 * mib, 400}, {8 * mib, 200}, {10 * mib, 160}, {16 * mib, 100}, {128 * mib, 100},
		{192 * mib, 66}, // 128 MiB of headroom
		{256 * mib, 50}, {300 * mib, 50}, {4096 * mib, 50},
	} {
		if got := gcPercentFor(tt.live); got != tt.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tt.live/mib, got, tt.want)
		}
	}
}

// The returner sets the headroom for the live heap, and leaves GOGC alone where the
// environment set it.
func TestMemoryReturnerSetsGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	m := &memoryReturner{tuneGC: true}
	m.setGCPercent(300 << 20)
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GOGC %d for a 300 MiB live heap, want 50", got)
	}
	m = &memoryReturner{tuneGC: false}
	debug.SetGCPercent(100)
	m.setGCPercent(300 << 20)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with GOGC set in the environment, want it left at 100", got)
	}
}

// TestManageRetunesAfterEachCollection: a heap that grows past gcFloor between two
// of the returner's checks (here an hour apart) gets its percentage at the next
// collection, and a heap that shrinks gets the floor's back.
func TestManageRetunesAfterEachCollection(t *testing.T) {
	t.Setenv("GOGC", "") // set, Manage would leave the percentage alone
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { manage(stop, time.Hour); close(done) }()
	defer func() { close(stop); <-done }()
	// Read, not set and set back: a setting between Manage's would be lost to it.
	percent := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	kept := make([][]byte, 64)
	for i := range kept {
		kept[i] = make([]byte, 1<<20)
	}
	testkit.Eventually(t, func() error {
		runtime.GC()
		if p := percent(); p != 100 {
			return fmt.Errorf("GOGC %d with 64 MiB live, want 100", p)
		}
		return nil
	})
	runtime.KeepAlive(kept)
	kept = nil
	testkit.Eventually(t, func() error {
		runtime.GC()
		if p := percent(); p != 400 {
			return fmt.Errorf("GOGC %d with the 64 MiB let go, want 400", p)
		}
		return nil
	})
}
