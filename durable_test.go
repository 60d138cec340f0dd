package main

import (
	"bytes"
	"encoding/binary"
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

	"quartet/internal/journal"
	"quartet/internal/testkit"
)

// The durable store's behaviour: what internal/journal keeps (the tests of DIR's
// files, its damage and its repair are that package's) is the store's state, changes
// of every kind replayed, writes rolled back when the disk fails.

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
// state is s's records, with its users' REST representations left out: one store
// has made them at a read, another not.
func state(s *Store) *snapshotState {
	s.mu.RLock()
	st := s.captureLocked()
	s.mu.RUnlock()
	for i, u := range st.Users {
		st.Users[i] = &User{ID: u.ID, Name: u.Name, Email: u.Email, CreatedAt: u.CreatedAt, nameKey: u.nameKey, emailKey: u.emailKey}
	}
	return st
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
	if st := s.Stats(); st.Journal.Writes != writers*each || st.Journal.Fsyncs >= st.Journal.Writes {
		t.Fatalf("%d writes in %d fsyncs; want %d writes in fewer fsyncs", st.Journal.Writes, st.Journal.Fsyncs, writers*each)
	}
}

func TestDurableSnapshots(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, 2<<10) // a snapshot every 2 KiB of journal
	mutateAll(t, s)                          // first, while the journal is far from its bound
	// Under -race on a busy machine the snapshots can fall behind the writes, which the
	// store then refuses at the journal's bound: each is tried again, as a client told
	// to try again later would.
	taken := func(write func() error) {
		testkit.Eventually(t, func() error {
			err := write()
			if e, ok := errors.AsType[*Error](err); err != nil && (!ok || e.Kind != KindExhausted) {
				t.Fatal(err)
			}
			return err
		})
	}
	for i := range 200 {
		var u *User
		taken(func() (err error) {
			u, err = s.CreateUser(fmt.Sprint("User ", i), fmt.Sprintf("u%d@example.com", i))
			return err
		})
		if i%3 == 0 {
			taken(func() error { _, err := s.DeleteUser(u.ID); return err })
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	gens := journalGens(t, dir)
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

// journalName is the name of journal gen in a store's directory.
func journalName(gen uint64) string { return fmt.Sprintf("journal-%016d.log", gen) }

// journalGens lists the generations of the journals in dir, ascending.
func journalGens(t *testing.T, dir string) []uint64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "journal-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var gens []uint64
	for _, name := range names { // in name order, which is generation order
		var g uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "journal-%d.log", &g); err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	return gens
}

// lastJournal returns the path of the newest journal in dir.
func lastJournal(t *testing.T, dir string) string {
	gens := journalGens(t, dir)
	if len(gens) == 0 {
		t.Fatal("no journal")
	}
	return filepath.Join(dir, journalName(gens[len(gens)-1]))
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
	hold     chan struct{} // when set, the next WriteAt reports on held, then waits for hold to close
	held     chan struct{}
}

func (f *faults) wrap(file journal.File) journal.File { return &faultyFile{file, f} }

type faultyFile struct {
	journal.File
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
		n, _ := ff.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return ff.File.WriteAt(p, off)
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
	return ff.File.Sync()
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
				slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{WrapFile: f.wrap})
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
			// Each write, and how to see it applied in memory, and so queued for the
			// journal, which happens under the same lock.
			named := func(name string) func() bool { return func() bool { u, _ := s.User(1); return u.Name == name } }
			grew := func(coll string, by int64) func() bool {
				return func() bool { return state(s).LastIDs[coll] == before.LastIDs[coll]+by }
			}
			writes := []struct {
				do      func() error
				applied func() bool
			}{
				{func() error {
					_, err := s.CreateUsers([]NewUser{{"New One", "n1@example.com"}, {"New Two", "n2@example.com"}})
					return err
				}, grew("users", 2)},
				{func() error { _, err := s.UpdateUser(1, UserPatch{Name: &name1}); return err }, named(name1)},
				{func() error { _, err := s.UpdateUser(1, UserPatch{Name: &name2}); return err }, named(name2)},
				{func() error { _, err := s.DeleteUser(4); return err }, // with a post, comments on it and comments by 4
					func() bool { _, ok := s.User(4); return !ok }},
				{func() error { _, err := s.CreatePost(2, "Lost", "Never stored."); return err }, grew("posts", 1)},
				{func() error { _, err := s.AddComment(3, 5, "Lost too."); return err }, grew("comments", 1)},
				{func() error { _, err := s.CreateOrder(6, NewOrder{ProductID: 2, Quantity: 1}); return err }, grew("orders", 1)},
			}
			errs := make([]error, len(writes))
			var wg sync.WaitGroup
			for i, w := range writes {
				wg.Go(func() { errs[i] = w.do() })
				if i == 0 {
					<-held // the first write is being written; the others queue behind it
				}
				testkit.Eventually(t, func() error {
					if !w.applied() {
						return fmt.Errorf("write %d is not applied", i)
					}
					return nil
				})
			}
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

// recordStarts returns the offsets at which the records of a journal start (the
// header's first), and where they end, before the zeros of the file's unwritten space.
// A record is framed by 12 bytes, the first 4 its payload's length (internal/journal).
func recordStarts(t *testing.T, data []byte) []int {
	t.Helper()
	var starts []int
	off := 0
	for off+12 <= len(data) && len(bytes.TrimRight(data[off:], "\x00")) > 0 {
		starts = append(starts, off)
		off += 12 + int(binary.LittleEndian.Uint32(data[off:]))
	}
	if off > len(data) {
		t.Fatalf("journal damaged at %d", starts[len(starts)-1])
	}
	return append(starts, off)
}

// refuses opens dir and wants a one-line refusal containing want.
func refuses(t *testing.T, dir, want string) {
	t.Helper()
	_, err := OpenDurableStore(dir, nil, slog.New(slog.DiscardHandler), DurableOptions{})
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line containing %q", err, want)
	}
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
			s, err := OpenDurableStore(dir, func() (*Dataset, error) { return DemoDataset(), nil }, slog.New(slog.DiscardHandler), DurableOptions{WrapFile: f.wrap})
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

// TestDurableLoadedThenSnapshotRemoved: a directory initialised from -load and stopped
// before any write holds its first journal with nothing after the header. With the
// snapshot removed it is damage like any other: starting empty (or from the demo data)
// would serve a store no client ever saw.
func TestDurableLoadedThenSnapshotRemoved(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(file, []byte(`{"users":[{"id":3,"name":"Only","email":"only@example.com"}]}`), 0o644)
	log := slog.New(slog.DiscardHandler)
	s, err := openStore(config{dataDir: dir, load: file, snapshotBytes: defaultSnapshotBytes}, log)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	snapshot := filepath.Join(dir, "snapshot")
	os.Remove(snapshot)
	if has, err := HasStore(dir); !has || err != nil {
		t.Errorf("HasStore = %v, %v; want true", has, err)
	}
	refuses(t, dir, snapshot+" is missing, but "+journalName(1)+" follows a snapshot")
	if _, err := OpenDurableStore(dir, nil, log, DurableOptions{Repair: true}); err == nil || !strings.Contains(err.Error(), snapshot+" is missing") {
		t.Errorf("-repair: %v, want the missing snapshot refused", err)
	}
	if _, err := openStore(config{dataDir: dir, load: file, snapshotBytes: defaultSnapshotBytes}, log); err == nil || !strings.Contains(err.Error(), "already holds a store") {
		t.Errorf("-load again: %v, want it refused", err)
	}
}

// TestDurableInitialisationCutShort: a first start with -load stopped after its
// snapshot, before its journal was renamed into place: the next start puts the journal
// in place and goes on from the snapshot, its ids after the loaded ones (the other
// cases are internal/journal's).
func TestDurableInitialisationCutShort(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(file, []byte(`{"users":[{"id":3,"name":"Only","email":"only@example.com"}]}`), 0o644)
	s, err := openStore(config{dataDir: dir, load: file, snapshotBytes: defaultSnapshotBytes}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Rename(filepath.Join(dir, journalName(1)), filepath.Join(dir, journalName(1)+".tmp"))
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
}

// TestDurableSnapshotFailureIsSeen: with the data directory renamed while the service
// runs, snapshots fail and the journal keeps every write. /healthz answers 200
// "degraded" with the reason (a restart would not mend it), /metrics counts the
// failures and the journal's bytes, the log says it once; at the journal's bound
// writes are refused with 429 and a clear message. With the directory back, writes are
// taken again, /healthz says ok, and a restart reads every write acknowledged.
func TestDurableSnapshotFailureIsSeen(t *testing.T) {
	base := t.TempDir()
	dir, moved := filepath.Join(base, "data"), filepath.Join(base, "moved")
	logs := &syncBuffer{}
	const snapshotBytes = 4 << 10
	s := openTestDurable(t, dir, logs, snapshotBytes)
	srv := NewServer(s, slog.New(slog.DiscardHandler), serverOptions{})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	create := func(i int) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/users", strings.NewReader(fmt.Sprintf(`{"name":"Writer %d","email":"w%d@example.com"}`, i, i)))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rec, req)
		return rec
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	var refused *httptest.ResponseRecorder
	for i := 0; refused == nil; i++ {
		if i == 1000 {
			t.Fatal("1000 writes taken with every snapshot failing")
		}
		if rec := create(i); rec.Code != 201 {
			refused = rec
		}
	}
	if refused.Code != 429 || !strings.Contains(refused.Body.String(), journal.ErrBound.Error()) || strings.Contains(refused.Body.String(), base) {
		t.Errorf("the write at the bound: %d %s", refused.Code, refused.Body)
	}
	rec := get("/healthz")
	var health struct{ Status, Reason string }
	json.Unmarshal(rec.Body.Bytes(), &health)
	if rec.Code != 200 || health.Status != "degraded" || !strings.Contains(health.Reason, "snapshots have failed since") || !strings.Contains(health.Reason, "writes are refused") {
		t.Errorf("/healthz: %d %s", rec.Code, rec.Body)
	}
	samples := testkit.ParseExposition(t, get("/metrics").Body.String())
	if n := testkit.FindSample(samples, "quartet_snapshot_failures_total"); n < 1 {
		t.Errorf("quartet_snapshot_failures_total %v", n)
	}
	if n := testkit.FindSample(samples, "quartet_journal_bytes"); n < journal.BoundFactor*snapshotBytes {
		t.Errorf("quartet_journal_bytes %v, want the bound %d", n, journal.BoundFactor*snapshotBytes)
	}
	if n := strings.Count(logs.String(), `msg="snapshot failed;`); n != 1 {
		t.Errorf("%d log lines of a failed snapshot, want 1:\n%s", n, logs)
	}

	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	i := 0
	testkit.Eventually(t, func() error { // the retry comes within a second
		if i++; create(1000+i).Code != 201 {
			return fmt.Errorf("writes still refused with the directory back: %s", s.Degraded())
		}
		return nil
	})
	if rec := get("/healthz"); rec.Code != 200 || rec.Body.String() != `{"status":"ok"}`+"\n" {
		t.Errorf("/healthz with the directory back: %d %q", rec.Code, rec.Body)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openTestDurable(t, dir, nil, snapshotBytes)
	defer again.Close()
	mustEqualState(t, again, s)
}
