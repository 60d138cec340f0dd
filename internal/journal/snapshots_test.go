package journal

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"quartet/internal/testkit"
)

// TestJournalSnapshotFailureIsBounded: with the directory renamed while the journal
// runs, every rotation fails. Every write is still stored (the open journal is
// written where it went); Health says why, Stats counts the failures, the log says
// it once; once a restart would replay BoundFactor times SnapshotBytes, writes are
// refused with ErrBound, and the journal stops growing. With the directory back, the
// next snapshot succeeds, writes are taken again, and a restart reads every write
// acknowledged.
func TestJournalSnapshotFailureIsBounded(t *testing.T) {
	base := t.TempDir()
	dir, moved := base+"/data", base+"/moved"
	logs := &syncBuffer{}
	const snapshotBytes = 1 << 10
	j, h, err := open(dir, logs, Options{SnapshotBytes: snapshotBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	var refused error
	for i := 0; refused == nil; i++ {
		if i == 1000 {
			t.Fatalf("1000 writes taken (%d bytes of journal) with every snapshot failing", j.Stats().Bytes)
		}
		refused = h.add(j, fmt.Sprint("record ", i))
	}
	if !errors.Is(refused, ErrBound) {
		t.Fatalf("the write past the bound: %v, want ErrBound", refused)
	}
	st := j.Stats()
	if st.SnapshotFailures == 0 || st.Bytes < BoundFactor*snapshotBytes || st.Bytes > BoundFactor*snapshotBytes+100 {
		t.Errorf("stats %+v: want failures counted, and %d journal bytes and at most one record more", st, BoundFactor*snapshotBytes)
	}
	health := j.Health()
	for _, want := range []string{"snapshots have failed since", "starting " + journalName(2), "no such file or directory", "writes are refused"} {
		if !strings.Contains(health, want) {
			t.Errorf("health %q does not say %q", health, want)
		}
	}
	if n := strings.Count(logs.String(), `msg="snapshot failed;`); n != 1 {
		t.Errorf("%d log lines of a failed snapshot, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs.String(), `msg="the journal is at its bound:`); n != 1 {
		t.Errorf("%d log lines of the bound, want 1:\n%s", n, logs)
	}
	if err := h.add(j, "refused again"); !errors.Is(err, ErrBound) {
		t.Errorf("a second write at the bound: %v", err)
	}

	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, func() error { // the retry comes within retryFirst
		if errors.Is(h.add(j, "after the directory is back"), ErrBound) {
			return fmt.Errorf("writes still refused with the directory back: %s", j.Health())
		}
		return nil
	})
	if health := j.Health(); health != "" {
		t.Errorf("health after a snapshot succeeded: %q", health)
	}
	if !strings.Contains(logs.String(), `msg="snapshot succeeded again;`) {
		t.Errorf("the recovery was not logged:\n%s", logs)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	again, h2 := openTest(t, dir, nil, snapshotBytes)
	defer again.Close()
	mustEqualState(t, h2, h)
}

// TestJournalSnapshotsLagging: a snapshot that is slow, not failing, lets the journal
// reach its bound too. The refusal and its log line say that snapshots have not kept
// up, not that they failed, and the log line names the bound and the operator's remedy;
// once the snapshot completes, writes are taken again.
func TestJournalSnapshotsLagging(t *testing.T) {
	logs := &syncBuffer{}
	j, h, err := open(t.TempDir(), logs, Options{SnapshotBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	release := make(chan struct{})
	h.encoding = func() { <-release }
	var refused error
	for i := 0; refused == nil; i++ {
		if i == 1000 {
			close(release)
			t.Fatal("1000 writes taken while a snapshot was held")
		}
		refused = h.add(j, fmt.Sprint("record ", i))
	}
	close(release)
	msg := refused.Error()
	if !errors.Is(refused, ErrBound) || !strings.Contains(msg, "snapshots have not kept up") || strings.Contains(msg, "fail") {
		t.Errorf("the refusal says %q", msg)
	}
	line := logs.String()
	for _, want := range []string{"snapshots have not kept up", "-snapshot-bytes", "boundBytes=4096", "lastFailure=<nil>"} {
		if !strings.Contains(line, want) {
			t.Errorf("the log does not say %q:\n%s", want, line)
		}
	}
	testkit.Eventually(t, func() error { return h.add(j, "after the snapshot") })
}

// TestJournalSnapshotFailuresLogAtABoundedRate: failures after the first are
// counted, not logged, until failureLogEvery has passed; then one line says how many
// there were. Each failure pushes the next try further off, up to retryMax.
func TestJournalSnapshotFailuresLogAtABoundedRate(t *testing.T) {
	logs := &syncBuffer{}
	j, _, err := open(t.TempDir(), logs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cause := errors.New("starting journal-2: read-only file system")
	var delays []time.Duration
	for range 10 {
		j.snapshotEnded(cause, 0)
		delays = append(delays, j.retryDelay)
	}
	if n := strings.Count(logs.String(), "snapshot failed"); n != 1 {
		t.Fatalf("%d lines for 10 failures, want 1:\n%s", n, logs)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60, 60}
	for i := range want {
		if delays[i] != want[i]*time.Second {
			t.Fatalf("retry delays %v, want %v seconds", delays, want)
		}
	}
	j.mu.Lock()
	j.logged = j.logged.Add(-failureLogEvery)
	j.mu.Unlock()
	j.snapshotEnded(cause, 0)
	if !strings.Contains(logs.String(), "failures=10 ") {
		t.Errorf("the second line does not count the 10 failures since the first:\n%s", logs)
	}
	if st := j.Stats(); st.SnapshotFailures != 11 {
		t.Errorf("%d failures counted, want 11", st.SnapshotFailures)
	}
	j.snapshotEnded(nil, 0)
	if h := j.Health(); h != "" || j.retryDelay != 0 {
		t.Errorf("after a success: health %q, retry delay %v", h, j.retryDelay)
	}
}

// TestJournalFailedSyncAtRotation: an fsync failing as the journal rotates fails the
// journal as one failing at any write does: the writes not on disk are undone and
// refused with ErrFailed, and a restart reads what was acknowledged. The rotation
// goes on no fsync of its own, so no fsync that failed is passed over.
func TestJournalFailedSyncAtRotation(t *testing.T) {
	dir := t.TempDir()
	f := &faults{}
	logs := &syncBuffer{}
	captured := make(chan struct{}, 1)
	first := "first"
	j, h, err := open(dir, logs, Options{SnapshotBytes: int64(len(appendRecord(nil, payloadOf(first)))), WrapFile: f.wrap})
	if err != nil {
		t.Fatal(err)
	}
	h.captured = func() {
		f.mu.Lock()
		f.syncErr = syscall.EIO
		f.mu.Unlock()
		captured <- struct{}{}
	}
	if err := h.add(j, first); err != nil {
		t.Fatal(err)
	}
	<-captured // the rotation's mark is queued, with the fsync failure armed
	if err := h.add(j, "second"); !errors.Is(err, ErrFailed) {
		t.Errorf("the write after the failed fsync: %v, want ErrFailed", err)
	}
	if !strings.Contains(logs.String(), "journal write failed") || !strings.Contains(logs.String(), syscall.EIO.Error()) {
		t.Errorf("the failure was not logged as the journal's:\n%s", logs)
	}
	if err := j.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close: %v, want ErrFailed", err)
	}
	again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
	defer again.Close()
	mustHold(t, h2, append(seedRecords(), first))
}
