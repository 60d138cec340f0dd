package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"quartet/internal/testkit"
)

func openTestDurable(t *testing.T, dir string, logs *syncBuffer, snapshotBytes int64) *Store {
	t.Helper()
	if logs == nil {
		logs = &syncBuffer{}
	}
	s, err := OpenDurableStore(dir, func() (*Dataset, error) { return DemoDataset(), nil }, slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{SnapshotBytes: snapshotBytes})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// state is everything a store holds, for comparing two stores.
func state(s *Store) *snapshotState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.captureLocked(0)
}

func mustEqualState(t *testing.T, got, want *Store) {
	t.Helper()
	mustEqualStateTo(t, got, state(want))
}

func mustEqualStateTo(t *testing.T, got *Store, w *snapshotState) {
	t.Helper()
	if g := state(got); !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Fatalf("recovered state differs\n got: %s\nwant: %s", gj, wj)
	}
}

// mutateAll makes one change of every kind.
func mutateAll(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.CreateUsers([]NewUser{{"Batch One", "b1@example.com"}, {"Batch Two", "b2@example.com"}}); err != nil {
		t.Fatal(err)
	}
	name := "Alice Renamed"
	if _, err := s.UpdateUser(1, UserPatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteUser(3); !ok || err != nil {
		t.Fatal("delete", ok, err)
	}
	p, err := s.CreatePost(2, "Durable", "It survives.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddComment(p.ID, 4, "Indeed."); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOrder(8, NewOrder{ProductID: 3, Quantity: 7}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteUser(8); !ok || err != nil { // the largest user id, deleted
		t.Fatal("delete", ok, err)
	}
}

func TestDurableReplaysEveryMutation(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, again, s)
	u, err := again.CreateUser("After", "after@example.com")
	if err != nil || u.ID != 9 {
		t.Errorf("first user after restart: %v %v, want id 9 (ids are never reused)", u, err)
	}
}

// TestDurableGroupCommit: writers waiting at the same time share an fsync.
func TestDurableGroupCommit(t *testing.T) {
	s := openTestDurable(t, t.TempDir(), nil, defaultSnapshotBytes)
	const writers, each = 32, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.CreateUser(fmt.Sprintf("Writer %d", w), fmt.Sprintf("w%d.%d@example.com", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if j := s.journal; j.writes.Load() != writers*each || j.syncs.Load() >= j.writes.Load() {
		t.Fatalf("%d writes in %d fsyncs; want %d writes in fewer fsyncs", j.writes.Load(), j.syncs.Load(), writers*each)
	}
}

func TestDurableSnapshots(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, 2<<10) // a snapshot every 2 KiB of journal
	for i := range 200 {
		u, err := s.CreateUser(fmt.Sprint("User ", i), fmt.Sprintf("u%d@example.com", i))
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			s.DeleteUser(u.ID)
		}
	}
	mutateAll(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	gens, _ := journalGens(dir)
	if len(gens) == 0 || gens[len(gens)-1] < 5 {
		t.Fatalf("journals %v: expected several rotations", gens)
	}
	if len(gens) > 2 {
		t.Errorf("journals %v: old journals were not removed after their snapshot", gens)
	}
	again := openTestDurable(t, dir, nil, 2<<10)
	defer again.Close()
	mustEqualState(t, again, s)
}

// lastJournal returns the path of the newest journal in dir.
func lastJournal(t *testing.T, dir string) string {
	gens, err := journalGens(dir)
	if err != nil || len(gens) == 0 {
		t.Fatal("no journal", err)
	}
	return filepath.Join(dir, journalName(gens[len(gens)-1]))
}

// TestDurableTornTail: a crash during a group commit leaves the start of its first
// record followed by the zeros of the file's unwritten space. That is cut away with one
// warning, which says what is known of those bytes and claims nothing more.
func TestDurableTornTail(t *testing.T) {
	record := appendRecord(nil, []byte(`{"op":"putUsers","users":[{"id":99,"name":"Torn","email":"t@example.com"}]}`))
	tails := map[string][]byte{
		"part of its header":                 record[:7],
		"its header and part of its payload": record[:len(record)-9],
		"all but its last byte":              record[:len(record)-1],
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			mutateAll(t, s)
			s.Close()
			path := lastJournal(t, dir)
			end, good := recordsEnd(t, path)
			overwrite(t, path, end, tail)
			logs := &syncBuffer{}
			again := openTestDurable(t, dir, logs, defaultSnapshotBytes)
			mustEqualState(t, again, s)
			want := fmt.Sprintf("offset=%d bytes=%d", end, len(tail))
			if !strings.Contains(logs.String(), "incomplete record followed by zeros") || !strings.Contains(logs.String(), want) || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("want one log line about the incomplete record, with %q, got:\n%s", want, logs)
			}
			if strings.Contains(logs.String(), "acknowledged") {
				t.Errorf("the warning says what it cannot know:\n%s", logs)
			}
			if _, err := again.CreateUser("Next", "next@example.com"); err != nil {
				t.Fatal(err)
			}
			again.Close()
			if after, data := recordsEnd(t, path); after <= end || !bytes.Equal(data[:end], good[:end]) || len(data)%journalStep != 0 {
				t.Error("the journal was not cut back to its intact records before appending")
			}
			third := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			defer third.Close()
			mustEqualState(t, third, again)
		})
	}
}

func TestDurableRefusesCorruption(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	s.Close()
	path := lastJournal(t, dir)
	data, _ := os.ReadFile(path)
	data[recordHeaderSize+5] ^= 0x01 // inside the first record, with intact records after it
	os.WriteFile(path, data, 0o644)
	_, err := OpenDurableStore(dir, nil, slog.New(slog.DiscardHandler), DurableOptions{})
	if err == nil || !strings.Contains(err.Error(), "is corrupt at byte 0 (a record fails its checksum; intact records follow") {
		t.Errorf("err = %v, want a refusal naming the damage", err)
	}

	snap := filepath.Join(t.TempDir(), "x")
	os.MkdirAll(snap, 0o755)
	s = openTestDurable(t, snap, nil, defaultSnapshotBytes)
	s.Close()
	data, _ = os.ReadFile(filepath.Join(snap, "snapshot"))
	data[len(data)/2] ^= 0x40
	os.WriteFile(filepath.Join(snap, "snapshot"), data, 0o644)
	if _, err := OpenDurableStore(snap, nil, slog.New(slog.DiscardHandler), DurableOptions{}); err == nil || !strings.Contains(err.Error(), "snapshot is corrupt") {
		t.Errorf("corrupt snapshot: err = %v", err)
	}
}

func TestDurableLock(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	_, err := OpenDurableStore(dir, nil, slog.New(slog.DiscardHandler), DurableOptions{})
	if err == nil || !strings.Contains(err.Error(), "in use by another quartet process") {
		t.Errorf("second open: %v", err)
	}
	s.Close()
	again := openTestDurable(t, dir, nil, defaultSnapshotBytes) // released on close
	again.Close()
}

func TestDurableStartChoices(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(file, []byte(`{"users":[{"id":3,"name":"Only","email":"only@example.com"}]}`), 0o644)
	log := slog.New(slog.DiscardHandler)
	s, err := openStore(config{dataDir: dir, load: file, demo: true, snapshotBytes: defaultSnapshotBytes}, log)
	if err != nil || len(s.Users()) != 1 {
		t.Fatalf("first start with -load: %v", err)
	}
	s.Close()
	if _, err := openStore(config{dataDir: dir, load: file, snapshotBytes: defaultSnapshotBytes}, log); err == nil || !strings.Contains(err.Error(), "already holds a store") {
		t.Errorf("-load on a non-empty -data: %v", err)
	}
	s, err = openStore(config{dataDir: dir, demo: true, snapshotBytes: defaultSnapshotBytes}, log)
	if err != nil || len(s.Users()) != 1 {
		t.Errorf("restart without -load: %d users, %v; want the stored 1", len(s.Users()), err)
	}
	s.Close()
}

// faults make the journal's files fail on cue, as a full or failing disk does.
type faults struct {
	mu       sync.Mutex
	writeErr error         // the next WriteAt writes half its bytes, then fails with it
	syncErr  error         // the next Sync fails with it
	closeErr error         // every Close, after closing, fails with it
	hold     chan struct{} // when set, the next WriteAt reports on held, then waits for hold to close
	held     chan struct{}
}

func (f *faults) wrap(file journalFile) journalFile { return &faultyFile{file, f} }

type faultyFile struct {
	journalFile
	f *faults
}

func (ff *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	f := ff.f
	f.mu.Lock()
	hold, held := f.hold, f.held
	f.hold = nil
	f.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	f.mu.Lock()
	err := f.writeErr
	f.writeErr = nil
	f.mu.Unlock()
	if err != nil {
		n, _ := ff.journalFile.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return ff.journalFile.WriteAt(p, off)
}

func (ff *faultyFile) Close() error {
	err := ff.journalFile.Close()
	ff.f.mu.Lock()
	defer ff.f.mu.Unlock()
	return cmp.Or(ff.f.closeErr, err)
}

func (ff *faultyFile) Sync() error {
	f := ff.f
	f.mu.Lock()
	err := f.syncErr
	f.syncErr = nil
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return ff.journalFile.Sync()
}

// indexes is what a store's indexes answer, for comparing two stores beyond their records.
type indexes struct {
	PostsByUser, CommentsByPost, CommentsByAuthor, OrdersByUser, OrdersByProduct ownerIndex
	ByName, ByEmail                                                              []int64
}

func indexesOf(s *Store) indexes {
	s.mu.RLock()
	defer s.mu.RUnlock()
	x := indexes{PostsByUser: s.postsByUser, CommentsByPost: s.commentsByPost, CommentsByAuthor: s.commentsByAuthor,
		OrdersByUser: s.ordersByUser, OrdersByProduct: s.ordersByProduct}
	x.ByName, x.ByEmail = []int64{}, []int64{}
	s.usersByName.each(func(u *User) bool { x.ByName = append(x.ByName, u.ID); return true })
	s.usersByEmail.each(func(u *User) bool { x.ByEmail = append(x.ByEmail, u.ID); return true })
	return x
}

// deepCopyIndexes copies x, so that later changes to the store do not show in it.
func deepCopyIndexes(x indexes) indexes {
	cp := func(o ownerIndex) ownerIndex {
		out := ownerIndex{}
		for k, v := range o {
			out[k] = append([]int64(nil), v...)
		}
		return out
	}
	return indexes{cp(x.PostsByUser), cp(x.CommentsByPost), cp(x.CommentsByAuthor), cp(x.OrdersByUser), cp(x.OrdersByProduct), x.ByName, x.ByEmail}
}

// waitQueued waits (a bounded number of rounds) until n writes wait in the journal's queue.
func waitQueued(t *testing.T, j *journal, n int) {
	t.Helper()
	for range 20000 {
		j.mu.Lock()
		queued := len(j.queue)
		j.mu.Unlock()
		if queued >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the writes did not reach the journal queue")
}

// TestDurableFailedWriteRollsBack: A batch of writes whose journal write or
// fsync fails is rolled back, newest first, with everything queued behind it: no reader
// sees them, every writer is told "internal server error" (the OS error and the path
// are logged only), /healthz says 503, further writes are refused, and a restart finds
// exactly the state before the batch.
func TestDurableFailedWriteRollsBack(t *testing.T) {
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
			s, err := OpenDurableStore(dir, func() (*Dataset, error) { return DemoDataset(), nil },
				slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{wrapFile: f.wrap})
			if err != nil {
				t.Fatal(err)
			}
			mutateAll(t, s)
			before, beforeIdx := state(s), deepCopyIndexes(indexesOf(s))
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
			name1, name2 := "Renamed Once", "Renamed Twice"
			writes := []func() error{
				func() error {
					_, err := s.CreateUsers([]NewUser{{"New One", "n1@example.com"}, {"New Two", "n2@example.com"}})
					return err
				},
				func() error { _, err := s.UpdateUser(1, UserPatch{Name: &name1}); return err },
				func() error { _, err := s.UpdateUser(1, UserPatch{Name: &name2}); return err },
				func() error { _, err := s.DeleteUser(4); return err }, // with a post, comments on it and comments by 4
				func() error { _, err := s.CreatePost(2, "Lost", "Never stored."); return err },
				func() error { _, err := s.AddComment(3, 5, "Lost too."); return err },
				func() error { _, err := s.CreateOrder(6, NewOrder{ProductID: 2, Quantity: 1}); return err },
			}
			errs := make([]error, len(writes))
			var wg sync.WaitGroup
			for i, w := range writes {
				wg.Go(func() { errs[i] = w() })
				if i == 0 {
					<-held // the first write is being written; the others queue behind it
				}
			}
			waitQueued(t, s.journal, len(writes)-1)
			close(hold)
			wg.Wait()

			for i, err := range errs {
				e, ok := errors.AsType[*Error](err)
				if !ok || e.Kind != KindInternal || e.Message != "internal server error" {
					t.Errorf("write %d: err = %v, want the generic internal error", i, err)
				}
			}
			mustEqualStateTo(t, s, before)
			if got := indexesOf(s); !reflect.DeepEqual(got, beforeIdx) {
				t.Errorf("indexes after the rollback:\n got %+v\nwant %+v", got, beforeIdx)
			}
			if _, err := s.CreateUser("After", "after@example.com"); err == nil || err.Error() != "internal server error" {
				t.Errorf("a write after the failure: %v, want it refused with the generic error", err)
			}
			srv := NewServer(s, slog.New(slog.DiscardHandler), serverOptions{})
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"status":"unavailable"`) || !strings.Contains(rec.Body.String(), `"reason":"journal write failed`) {
				t.Errorf("/healthz: %d %s", rec.Code, rec.Body)
			}
			rec = httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/api/users", strings.NewReader(`{"name":"Rest","email":"rest@example.com"}`))
			req.Header.Set("Content-Type", "application/json")
			srv.ServeHTTP(rec, req)
			if rec.Code != 500 || strings.Contains(rec.Body.String(), dir) || strings.Contains(rec.Body.String(), tc.err.Error()) {
				t.Errorf("REST write after the failure: %d %s, want a 500 without internals", rec.Code, rec.Body)
			}
			if !strings.Contains(logs.String(), "journal write failed") || !strings.Contains(logs.String(), tc.err.Error()) {
				t.Errorf("the failure was not logged:\n%s", logs)
			}
			if err := s.Close(); err == nil {
				t.Error("Close after a journal failure reported nothing")
			}
			if after, _ := os.ReadFile(lastJournal(t, dir)); !bytes.Equal(after, journalBefore) {
				t.Errorf("the journal is not as it was before the failed writes (%d bytes, %d before)", len(after), len(journalBefore))
			}
			again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			defer again.Close()
			mustEqualStateTo(t, again, before)
		})
	}
}

// TestDurableRefusesDamagedTail: Damage at the end of the last journal that
// is not a record cut short is corruption of an acknowledged write, not a torn tail:
// start-up refuses, naming the offset.
func TestDurableRefusesDamagedTail(t *testing.T) {
	record := appendRecord(nil, []byte(`{"op":"putUsers","users":[{"id":99,"name":"Acked","email":"a@example.com"}]}`))
	flip := func(i int, bit byte) []byte {
		r := append([]byte(nil), record...)
		r[i] ^= bit
		return r
	}
	tails := map[string][]byte{
		"bit flip in the last record's payload": flip(len(record)-3, 0x10),
		"bit flip in the last record's length":  flip(0, 0x01),
		"garbage":                               []byte("\x13\x00\x00\x00garbage garbage"),
		"garbage after zeros":                   append(make([]byte, 100), "garbage"...),
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			mutateAll(t, s)
			s.Close()
			path := lastJournal(t, dir)
			end, _ := recordsEnd(t, path)
			overwrite(t, path, end, tail)
			_, err := OpenDurableStore(dir, nil, slog.New(slog.DiscardHandler), DurableOptions{})
			want := fmt.Sprintf("%s is corrupt at byte %d", path, end)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line containing %q", err, want)
			}
		})
	}
}

// copyDir copies the files of a store's directory into a new one; the zeros that end
// a file (a journal's unwritten space) are left unwritten in the copy too.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(to, e.Name())
		if err := os.WriteFile(name, bytes.TrimRight(data, "\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(name, int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// recordStarts returns the offsets at which the records of a journal start (the
// header's first), and where they end, before the zeros of the file's unwritten space.
func recordStarts(t *testing.T, data []byte) []int {
	t.Helper()
	var starts []int
	off := 0
	for ; off < len(data); off = journalNext(t, data, off) {
		if len(bytes.TrimRight(data[off:], "\x00")) == 0 {
			break
		}
		starts = append(starts, off)
	}
	return append(starts, off)
}

func journalNext(t *testing.T, data []byte, off int) int {
	t.Helper()
	_, next, ok := readRecord(data, off)
	if !ok {
		t.Fatalf("journal damaged at %d", off)
	}
	return next
}

// recordsEnd returns where the records of the journal at path end, and its bytes.
func recordsEnd(t *testing.T, path string) (int, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	starts := recordStarts(t, data)
	return starts[len(starts)-1], data
}

// overwrite writes b over the journal at path from byte at on, keeping its size.
func overwrite(t *testing.T, path string, at int, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(at)); err != nil {
		t.Fatal(err)
	}
}

// TestDurableBitFlipEverywhere: A bit flipped at any position of
// a small journal is refused at start-up with the offset of the record it damaged;
// with -repair the journal is cut there, the cut bytes are saved beside it, and the
// store holds exactly the records before the damage.
func TestDurableBitFlipEverywhere(t *testing.T) {
	testkit.SkipIfShort(t, "restarts a store once for every bit position of a journal")
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	if _, err := s.CreateUser("Flip", "flip@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOrder(2, NewOrder{ProductID: 1, Quantity: 3}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	name := filepath.Base(lastJournal(t, dir))
	data, _ := os.ReadFile(filepath.Join(dir, name))
	starts := recordStarts(t, data)
	end := starts[len(starts)-1]
	// want[k] is the state holding the records before record k (the header is
	// record 0).
	want := make([]*snapshotState, len(starts)-1)
	for k := range want {
		d := copyDir(t, dir)
		from := max(starts[k], starts[1])
		overwrite(t, filepath.Join(d, name), from, make([]byte, end-from))
		s := openTestDurable(t, d, nil, defaultSnapshotBytes)
		want[k] = state(s)
		s.Close()
	}
	k := 0
	for pos := range data[:end] {
		for pos >= starts[k+1] {
			k++
		}
		d := copyDir(t, dir)
		damaged := append([]byte(nil), data...)
		damaged[pos] ^= 1 << (pos % 8)
		path := filepath.Join(d, name)
		overwrite(t, path, pos, damaged[pos:pos+1])
		_, err := OpenDurableStore(d, nil, slog.New(slog.DiscardHandler), DurableOptions{})
		wantErr := fmt.Sprintf("is corrupt at byte %d", starts[k])
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "-repair") {
			t.Fatalf("bit %d of byte %d flipped: err = %v, want %q", pos%8, pos, err, wantErr)
		}
		logs := &syncBuffer{}
		repaired, err := OpenDurableStore(d, nil, slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{Repair: true})
		if err != nil {
			t.Fatalf("byte %d: -repair: %v", pos, err)
		}
		mustEqualStateTo(t, repaired, want[k])
		repaired.Close()
		// The journal keeps what preceded the damage, then zeros to whole steps;
		// a header cut is written anew.
		if kept, _ := os.ReadFile(path); string(bytes.TrimRight(kept, "\x00")) != string(data[:max(starts[k], starts[1])]) || len(kept)%journalStep != 0 {
			t.Fatalf("byte %d: the journal is %q (%d bytes) after -repair, want the %d bytes before the damage, then zeros to whole steps: %q", pos, bytes.TrimRight(kept, "\x00"), len(kept), starts[k], data[:max(starts[k], starts[1])])
		}
		sides, _ := filepath.Glob(path + ".cut-*")
		if len(sides) != 1 {
			t.Fatalf("byte %d: side files %v, want one", pos, sides)
		}
		if cut, _ := os.ReadFile(sides[0]); string(cut) != string(bytes.TrimRight(damaged[starts[k]:], "\x00")) {
			t.Fatalf("byte %d: the side file does not hold the cut bytes", pos)
		}
		if !strings.Contains(logs.String(), "-repair") || !strings.Contains(logs.String(), fmt.Sprintf("offset=%d", starts[k])) {
			t.Fatalf("byte %d: the repair was not logged:\n%s", pos, logs)
		}
		os.RemoveAll(d)
	}
}

// refuses opens dir and wants a one-line refusal containing want.
func refuses(t *testing.T, dir, want string) {
	t.Helper()
	_, err := OpenDurableStore(dir, nil, slog.New(slog.DiscardHandler), DurableOptions{})
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line containing %q", err, want)
	}
}

// TestDurableJournalFollowsSnapshot: Start-up refuses a directory whose
// journals do not follow from its snapshot: the snapshot deleted, an older snapshot
// restored, a journal missing or taken from another store.
func TestDurableJournalFollowsSnapshot(t *testing.T) {
	made := t.TempDir()
	s := openTestDurable(t, made, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	s.Close()
	j1 := journalName(1)
	storeID := func(dir string) string {
		data, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
		var st snapshotState
		if err := readSnapshot(data, &st); err != nil || st.Store == "" {
			t.Fatalf("snapshot: %v, store %q", err, st.Store)
		}
		return st.Store
	}

	t.Run("snapshot deleted", func(t *testing.T) {
		dir := copyDir(t, made)
		os.Remove(filepath.Join(dir, "snapshot"))
		refuses(t, dir, filepath.Join(dir, "snapshot")+" is missing, but "+j1+" follows a snapshot")
	})
	t.Run("first journal deleted", func(t *testing.T) {
		dir := copyDir(t, made)
		os.Remove(filepath.Join(dir, j1))
		f, _, err := createJournal(dir, 2, storeID(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
	t.Run("the only journal deleted", func(t *testing.T) {
		// Its acknowledged changes are gone: starting would reuse their ids.
		dir := copyDir(t, made)
		os.Remove(filepath.Join(dir, j1))
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
	t.Run("journal in between deleted", func(t *testing.T) {
		dir := copyDir(t, made)
		f, _, err := createJournal(dir, 3, storeID(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		refuses(t, dir, filepath.Join(dir, journalName(2))+" is missing: "+journalName(3)+" follows it")
	})
	t.Run("journal renamed", func(t *testing.T) {
		dir := copyDir(t, made)
		data, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
		var st snapshotState
		readSnapshot(data, &st)
		st.Gen = 2
		writeSnapshot(dir, &st)
		os.Rename(filepath.Join(dir, j1), filepath.Join(dir, journalName(2)))
		refuses(t, dir, journalName(2)+" does not follow from the snapshot (its header says journal 1")
	})
	t.Run("journal of another store", func(t *testing.T) {
		other := t.TempDir()
		s := openTestDurable(t, other, nil, defaultSnapshotBytes)
		s.Close()
		dir := copyDir(t, made)
		data, _ := os.ReadFile(filepath.Join(other, j1))
		os.WriteFile(filepath.Join(dir, j1), data, 0o644)
		refuses(t, dir, j1+" does not follow from the snapshot")
	})
	t.Run("journal header removed", func(t *testing.T) {
		dir := copyDir(t, made)
		data, _ := os.ReadFile(filepath.Join(dir, j1))
		_, next, _ := readRecord(data, 0)
		os.WriteFile(filepath.Join(dir, j1), data[next:], 0o644)
		refuses(t, dir, j1+" does not follow from the snapshot (it has no header")
	})
	t.Run("older snapshot restored", func(t *testing.T) {
		dir := t.TempDir()
		s := openTestDurable(t, dir, nil, 1<<10)
		old, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
		for i := range 100 {
			if _, err := s.CreateUser(fmt.Sprint("User ", i), fmt.Sprintf("u%d@example.com", i)); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		os.WriteFile(filepath.Join(dir, "snapshot"), old, 0o644)
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
}

// TestDurableRefusesTruncatedSnapshot: A snapshot cut short
// anywhere, even exactly after its header record (which would otherwise read as the
// first, one-record format of an empty store), is refused.
func TestDurableRefusesTruncatedSnapshot(t *testing.T) {
	made := t.TempDir()
	s := openTestDurable(t, made, nil, defaultSnapshotBytes)
	s.Close()
	data, _ := os.ReadFile(filepath.Join(made, "snapshot"))
	_, afterHeader, _ := readRecord(data, 0)
	for _, n := range []int{0, 5, recordHeaderSize, afterHeader - 1, afterHeader, afterHeader + 7, len(data) / 2, len(data) - 1} {
		dir := copyDir(t, made)
		os.WriteFile(filepath.Join(dir, "snapshot"), data[:n], 0o644)
		refuses(t, dir, filepath.Join(dir, "snapshot")+" is truncated")
	}
}

// TestDurableRefusesPreviousFormat: a directory as the first formats wrote it (a
// snapshot without the store's id, or one record holding header and records
// together) is refused with a message saying so, rather than read: reading those
// formats was dropped.
func TestDurableRefusesPreviousFormat(t *testing.T) {
	made := t.TempDir()
	s := openTestDurable(t, made, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	s.Close()
	data, _ := os.ReadFile(filepath.Join(made, "snapshot"))
	var st snapshotState
	if err := readSnapshot(data, &st); err != nil {
		t.Fatal(err)
	}
	t.Run("no store id", func(t *testing.T) {
		dir := copyDir(t, made)
		st := st
		st.Store = ""
		writeSnapshot(dir, &st)
		refuses(t, dir, filepath.Join(dir, "snapshot")+" names no store: it was written in a format of an earlier version")
	})
	t.Run("one record", func(t *testing.T) {
		dir := copyDir(t, made)
		payload, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "snapshot"), appendRecord(nil, payload), 0o644)
		refuses(t, dir, "(or it is in the one-record format of an earlier version, which this one does not read)")
	})
	t.Run("journal grown byte by byte", func(t *testing.T) {
		// The journals of the version before pre-allocation: a header naming no
		// step, the records, and nothing after them.
		dir := copyDir(t, made)
		path := filepath.Join(dir, journalName(1))
		data, _ := os.ReadFile(path)
		starts := recordStarts(t, data)
		header, err := json.Marshal(map[string]any{"journal": 1, "store": st.Store})
		if err != nil {
			t.Fatal(err)
		}
		old := append(appendRecord(nil, header), data[starts[1]:starts[len(starts)-1]]...)
		os.WriteFile(path, old, 0o644)
		refuses(t, dir, path+" was written by an earlier version (its header names no step of growth), which this one does not read")
	})
}

// TestDurableFailureUnderLoad: Writers of every kind run while
// the journal fails, at a write or at an fsync; whatever was acknowledged before, and
// whichever writes were in flight, the store in memory afterwards is exactly what a
// restart reads from the directory.
func TestDurableFailureUnderLoad(t *testing.T) {
	for _, atSync := range []bool{false, true} {
		t.Run(fmt.Sprint("at fsync ", atSync), func(t *testing.T) {
			dir := t.TempDir()
			f := &faults{}
			s, err := OpenDurableStore(dir, func() (*Dataset, error) { return DemoDataset(), nil }, slog.New(slog.DiscardHandler), DurableOptions{wrapFile: f.wrap})
			if err != nil {
				t.Fatal(err)
			}
			var acked atomic.Int64
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := range 200 {
						u, err := s.CreateUser(fmt.Sprintf("Load %d", w), fmt.Sprintf("l%d.%d@example.com", w, i))
						if err != nil {
							return
						}
						if acked.Add(1) == 100 {
							f.mu.Lock()
							if atSync {
								f.syncErr = syscall.EIO
							} else {
								f.writeErr = syscall.ENOSPC
							}
							f.mu.Unlock()
						}
						name := fmt.Sprintf("Load %d renamed", w)
						p, err1 := s.CreatePost(u.ID, "Post", "Body")
						_, err2 := s.UpdateUser(u.ID, UserPatch{Name: &name})
						if err1 != nil || err2 != nil {
							return
						}
						if _, err := s.AddComment(p.ID, 1, "Hi"); err != nil {
							return
						}
						if _, err := s.CreateOrder(u.ID, NewOrder{ProductID: 1, Quantity: 1}); err != nil {
							return
						}
						if i%2 == 0 {
							if _, err := s.DeleteUser(u.ID); err != nil {
								return
							}
						}
					}
				})
			}
			wg.Wait()
			if s.Unavailable() == "" {
				t.Fatal("the fault never struck")
			}
			s.Close()
			again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			defer again.Close()
			mustEqualState(t, again, s)
			if got, want := indexesOf(again), indexesOf(s); !reflect.DeepEqual(got, want) {
				t.Errorf("indexes differ after the rollback")
			}
		})
	}
}

// TestDurableRepairMovesLaterJournals: -repair of damage in a journal that later
// journals follow cuts it there and moves the later journals aside, since their
// changes follow from what was cut.
func TestDurableRepairMovesLaterJournals(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	mutateAll(t, s)
	s.Close()
	data, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
	var st snapshotState
	readSnapshot(data, &st)
	f, _, err := createJournal(dir, 2, st.Store, appendRecord(nil, []byte(`{"op":"putUsers","users":[{"id":50,"name":"Later","email":"later@example.com","createdAt":"2024-01-01T00:00:00Z"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := filepath.Join(dir, journalName(1))
	journal, _ := os.ReadFile(path)
	starts := recordStarts(t, journal)
	journal[starts[2]+recordHeaderSize+3] ^= 0x20 // the second change
	os.WriteFile(path, journal, 0o644)

	refuses(t, dir, fmt.Sprintf("%s is corrupt at byte %d", path, starts[2]))
	logs := &syncBuffer{}
	repaired, err := OpenDurableStore(dir, nil, slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := repaired.User(50); ok {
		t.Error("the later journal was replayed after the cut")
	}
	if _, ok := repaired.User(7); !ok { // created by the first change, before the damage
		t.Error("the change before the damage is missing")
	}
	if _, err := repaired.CreateUser("After Repair", "after.repair@example.com"); err != nil {
		t.Fatal(err)
	}
	repaired.Close()
	if moved, _ := filepath.Glob(filepath.Join(dir, journalName(2)+".cut-*")); len(moved) != 1 {
		t.Errorf("later journal moved to %v, want one side file", moved)
	}
	if gens, _ := journalGens(dir); !reflect.DeepEqual(gens, []uint64{1}) {
		t.Errorf("journals after -repair: %v, want [1]", gens)
	}
	again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, again, repaired)
}

// TestDurableWriteAfterClose: a write that comes after Close (a call a bounded
// shutdown cut, still running) is refused rather than left waiting for a journal that
// is gone.
func TestDurableWriteAfterClose(t *testing.T) {
	s := openTestDurable(t, t.TempDir(), nil, defaultSnapshotBytes)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser("Late", "late@example.com"); err == nil || err.Error() != "internal server error" {
		t.Errorf("write after Close: %v, want it refused", err)
	}
}

// TestDurableInitialisationCutShort: the first start writes its journal under a
// temporary name, then the snapshot, then renames the journal into place. Stopped
// before the snapshot, it leaves no store: the next start initialises the directory
// afresh, and -load is allowed there. Stopped after it, the next start puts the
// journal in place and goes on from the snapshot.
func TestDurableInitialisationCutShort(t *testing.T) {
	for name, leave := range map[string]func(dir string){
		"journal written":        func(string) {},
		"journal cut short":      func(dir string) { os.Truncate(journalTemp(dir, 1), 5) },
		"snapshot being written": func(dir string) { os.WriteFile(filepath.Join(dir, "snapshot.tmp"), []byte("\x13\x00"), 0o644) },
	} {
		t.Run("before the snapshot, "+name, func(t *testing.T) {
			dir := t.TempDir()
			f, _, err := writeJournal(dir, 1, "cut-short", nil)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			leave(dir)
			if has, err := HasStore(dir); has || err != nil {
				t.Fatalf("HasStore = %v, %v; want false", has, err)
			}
			s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			u, err := s.CreateUser("Ann", "ann@example.com")
			s.Close()
			if err != nil || u.ID != int64(len(DemoDataset().Users))+1 {
				t.Fatalf("first user after initialising: %v, %v", u, err)
			}
			s = openTestDurable(t, dir, nil, defaultSnapshotBytes)
			defer s.Close()
			if got, ok := s.User(u.ID); !ok || got.Name != "Ann" {
				t.Errorf("after a restart, user %d is %v", u.ID, got)
			}
		})
	}
	t.Run("after the snapshot", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(t.TempDir(), "d.json")
		os.WriteFile(file, []byte(`{"users":[{"id":3,"name":"Only","email":"only@example.com"}]}`), 0o644)
		s, err := openStore(config{dataDir: dir, load: file, snapshotBytes: defaultSnapshotBytes}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.Rename(filepath.Join(dir, journalName(1)), journalTemp(dir, 1))
		if has, err := HasStore(dir); !has || err != nil {
			t.Fatalf("HasStore = %v, %v; want true", has, err)
		}
		logs := &syncBuffer{}
		again := openTestDurable(t, dir, logs, defaultSnapshotBytes)
		mustEqualState(t, again, s)
		if !strings.Contains(logs.String(), "journal was in place") {
			t.Errorf("putting the journal in place was not logged:\n%s", logs)
		}
		u, err := again.CreateUser("Ann", "ann@example.com")
		if err != nil || u.ID != 4 {
			t.Fatalf("first user after the start: %v, %v; want id 4", u, err)
		}
		again.Close()
		third := openTestDurable(t, dir, nil, defaultSnapshotBytes)
		defer third.Close()
		mustEqualState(t, third, again)
	})
}
