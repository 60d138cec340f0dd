package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"quartet/internal/testkit"
)

// TestJournalReplaysInOrder: what was appended is there after a restart, after the
// seed, in append order; a new directory is seeded once.
func TestJournalReplaysInOrder(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	mustHold(t, h, seedRecords())
	addAll(t, j, h)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
	defer again.Close()
	mustHold(t, h2, append(seedRecords(), h.appended...))
}

// TestJournalGroupCommit: writers waiting at the same time share an fsync, and each
// record is told stored once, in append order.
func TestJournalGroupCommit(t *testing.T) {
	j, h := openTest(t, t.TempDir(), nil, DefaultSnapshotBytes)
	const writers, each = 32, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := h.add(j, fmt.Sprintf("writer %d, record %d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st := j.Stats(); st.Writes != writers*each || st.Fsyncs >= st.Writes {
		t.Fatalf("%d writes in %d fsyncs; want %d writes in fewer fsyncs", st.Writes, st.Fsyncs, writers*each)
	}
	if !reflect.DeepEqual(h.stored, h.appended) {
		t.Errorf("stored in another order than appended")
	}
}

// TestJournalSnapshots: past SnapshotBytes the journal rotates and a snapshot is
// written; the journals before it are removed, and a restart reads the same state.
func TestJournalSnapshots(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, 2<<10) // a snapshot every 2 KiB of journal
	for i := range 200 {
		if err := h.add(j, fmt.Sprint("record ", i)); err != nil {
			t.Fatal(err)
		}
	}
	addAll(t, j, h)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	gens, _ := journalGens(dir)
	// How many rotations come depends on how soon each snapshot ends (one runs at a
	// time); the first is certain, 4 KiB of records past a 2 KiB bound.
	if len(gens) == 0 || gens[len(gens)-1] < 2 {
		t.Fatalf("journals %v: expected a rotation", gens)
	}
	if len(gens) > 2 {
		t.Errorf("journals %v: old journals were not removed after their snapshot", gens)
	}
	again, h2 := openTest(t, dir, nil, 2<<10)
	defer again.Close()
	mustEqualState(t, h2, h)
}

// TestJournalSnapshotHeader: a snapshot's header is the host's meta with the
// journal's fields, gen first and store last, as every snapshot has been written.
func TestJournalSnapshotHeader(t *testing.T) {
	for meta, want := range map[string]string{
		`{"lastIds":{"orders":2,"users":9}}`: `{"gen":7,"lastIds":{"orders":2,"users":9},"store":"0a1b"}`,
		` { "n" : 3 } `:                      `{"gen":7,"n" : 3,"store":"0a1b"}`,
		`{}`:                                 `{"gen":7,"store":"0a1b"}`,
	} {
		if got, err := snapshotHeaderOf(7, "0a1b", []byte(meta)); err != nil || string(got) != want {
			t.Errorf("header of %s: %s, %v; want %s", meta, got, err, want)
		}
	}
	for _, meta := range []string{``, `null`, `[1]`, `"x"`, `{"n":1`} {
		if _, err := snapshotHeaderOf(7, "0a1b", []byte(meta)); err == nil {
			t.Errorf("meta %q accepted", meta)
		}
	}
}

func TestJournalLock(t *testing.T) {
	dir := t.TempDir()
	j, _ := openTest(t, dir, nil, DefaultSnapshotBytes)
	_, _, err := open(dir, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "in use by another quartet process") {
		t.Errorf("second open: %v", err)
	}
	j.Close()
	again, _ := openTest(t, dir, nil, DefaultSnapshotBytes) // released on close
	again.Close()
}

// TestJournalAppendAfterClose: an Append after Close is refused rather than left
// waiting for a flusher that is gone.
func TestJournalAppendAfterClose(t *testing.T) {
	j, h := openTest(t, t.TempDir(), nil, DefaultSnapshotBytes)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.add(j, "late"); err == nil {
		t.Error("an Append after Close was not refused")
	}
}

// queuedReach holds, for testkit.Eventually, once n records or more wait in the queue.
func queuedReach(j *Journal, n int) func() error {
	return func() error {
		j.mu.Lock()
		queued := len(j.queue)
		j.mu.Unlock()
		if queued < n {
			return fmt.Errorf("%d records in the journal queue, want %d", queued, n)
		}
		return nil
	}
}

// TestJournalFailedWrite: a batch whose journal write or fsync fails is undone,
// newest first, with everything queued behind it, before any writer is answered;
// every writer hears ErrFailed, none is told stored; nothing more is written; the
// cause is logged; Close reports the failure; the journal is as it was before the
// batch, and a restart finds exactly the state before it.
func TestJournalFailedWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		atSync bool
	}{
		{"ENOSPC at write", syscall.ENOSPC, false},
		{"EIO at write", syscall.EIO, false},
		{"ENOSPC at fsync", syscall.ENOSPC, true},
		{"EIO at fsync", syscall.EIO, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := &faults{}
			logs := &syncBuffer{}
			j, h, err := open(dir, logs, Options{WrapFile: f.wrap})
			if err != nil {
				t.Fatal(err)
			}
			addAll(t, j, h)
			before := h.records()
			journalBefore, _ := os.ReadFile(lastJournal(t, dir))

			f.mu.Lock()
			f.hold, f.held = make(chan struct{}), make(chan struct{})
			if tc.atSync {
				f.syncErr = tc.err
			} else {
				f.writeErr = tc.err
			}
			hold, held := f.hold, f.held
			f.mu.Unlock()
			values := []string{"lost 0", "lost 1", "lost 2", "lost 3", "lost 4", "lost 5", "lost 6"}
			errs := make([]error, len(values))
			var wg sync.WaitGroup
			for i, v := range values {
				wg.Go(func() { errs[i] = h.add(j, v) })
				if i == 0 {
					<-held // the first write is being written; the others queue behind it
				}
			}
			testkit.Eventually(t, queuedReach(j, len(values)-1))
			close(hold)
			wg.Wait()

			for i, err := range errs {
				if !errors.Is(err, ErrFailed) {
					t.Errorf("write %d: err = %v, want ErrFailed", i, err)
				}
			}
			mustHold(t, h, before)
			if len(h.misorder) > 0 || len(h.undone) != len(values) {
				t.Errorf("undone %q, of which out of order %q; want all %d, newest first", h.undone, h.misorder, len(values))
			}
			h.storedMu.Lock()
			for _, v := range h.stored {
				if strings.HasPrefix(v, "lost") {
					t.Errorf("told stored: %q", v)
				}
			}
			h.storedMu.Unlock()
			if err := h.add(j, "after"); !errors.Is(err, errRefused) {
				t.Errorf("a write after the failure: %v, want it refused", err)
			}
			if !strings.Contains(logs.String(), "journal write failed") || !strings.Contains(logs.String(), tc.err.Error()) {
				t.Errorf("the failure was not logged:\n%s", logs)
			}
			if err := j.Close(); !errors.Is(err, ErrFailed) {
				t.Errorf("Close after a journal failure: %v, want ErrFailed", err)
			}
			if after, _ := os.ReadFile(lastJournal(t, dir)); !bytes.Equal(after, journalBefore) {
				t.Errorf("the journal is not as it was before the failed writes (%d bytes, %d before)", len(after), len(journalBefore))
			}
			again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
			defer again.Close()
			mustHold(t, h2, before)
		})
	}
}

// TestJournalFailureUnderLoad: writers run while the journal fails, at a write or at
// an fsync, with rotations going on; whatever was acknowledged before, and whichever
// writes were in flight, the state in memory afterwards is exactly what a restart
// reads from the directory.
func TestJournalFailureUnderLoad(t *testing.T) {
	for _, atSync := range []bool{false, true} {
		t.Run(fmt.Sprint("at fsync ", atSync), func(t *testing.T) {
			dir := t.TempDir()
			f := &faults{}
			j, h, err := open(dir, nil, Options{SnapshotBytes: 4 << 10, WrapFile: f.wrap})
			if err != nil {
				t.Fatal(err)
			}
			var acked atomic.Int64
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := range 200 {
						if err := h.add(j, fmt.Sprintf("writer %d, record %d", w, i)); err != nil {
							return
						}
						if acked.Add(1) == 300 {
							f.mu.Lock()
							if atSync {
								f.syncErr = syscall.EIO
							} else {
								f.writeErr = syscall.ENOSPC
							}
							f.mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			h.mu.RLock()
			broken := h.broken
			h.mu.RUnlock()
			if !broken {
				t.Fatal("the fault never struck")
			}
			j.Close()
			again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
			defer again.Close()
			mustEqualState(t, h2, h)
		})
	}
}

// TestJournalRotationLogsAFailedClose: at a rotation the previous journal is closed
// after its last fsync, so a failure to close it loses nothing; it is logged all the
// same, with the file, rather than dropped.
func TestJournalRotationLogsAFailedClose(t *testing.T) {
	dir := t.TempDir()
	f := &faults{closeErr: syscall.EIO}
	logs := &syncBuffer{}
	j, h, err := open(dir, logs, Options{SnapshotBytes: 1 << 10, WrapFile: f.wrap})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := h.add(j, fmt.Sprint("record ", i)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close() // its own close fails too, and says so
	if gens, _ := journalGens(dir); len(gens) == 0 || gens[len(gens)-1] < 2 {
		t.Fatalf("journals %v: no rotation", gens)
	}
	want := `msg="closing the previous journal" file=` + filepath.Join(dir, journalName(1))
	if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), syscall.EIO.Error()) {
		t.Errorf("want %q with the error in the log:\n%s", want, logs)
	}
	again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, h2, h)
}

// TestJournalHas: a directory holds a store once it has a snapshot or a journal.
func TestJournalHas(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Join(dir, "missing"), dir} {
		if has, err := Has(d); has || err != nil {
			t.Errorf("Has(%s) = %v, %v before the store", d, has, err)
		}
	}
	j, _ := openTest(t, dir, nil, DefaultSnapshotBytes)
	j.Close()
	if has, err := Has(dir); !has || err != nil {
		t.Errorf("Has = %v, %v after the store was made", has, err)
	}
}
