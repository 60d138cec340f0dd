package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Damage done to a stopped store's directory that a crash cannot do: start-up refuses
// it, naming the file, rather than reading it as a torn write; -repair starts with
// what is left where that is something.

// snapshotUsers is how many users the snapshot in dir holds.
func snapshotUsers(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	var st snapshotState
	if err := readSnapshot(data, &st); err != nil {
		t.Fatal(err)
	}
	return len(st.Users)
}

// repairs opens dir with -repair and wants it to start holding users users, with the
// repair logged naming path; then a plain start must work too.
func repairs(t *testing.T, dir, path string, users int) {
	t.Helper()
	logs := &syncBuffer{}
	s, err := OpenDurableStore(dir, nil, slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{Repair: true})
	if err != nil {
		t.Fatalf("-repair: %v", err)
	}
	if got := len(s.Users()); got != users {
		t.Errorf("-repair started with %d users, want %d", got, users)
	}
	if !strings.Contains(logs.String(), "-repair") || !strings.Contains(logs.String(), path) {
		t.Errorf("the repair was not logged with the file:\n%s", logs)
	}
	if _, err := s.CreateUser("After Repair", "after.repair@example.com"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, again, s)
}

// TestDurableEmptiedJournal: the newest journal emptied while the service was stopped
// (truncate -s 0) held acknowledged changes. Read as a torn write, the store would come
// back as its snapshot and give the lost users' ids to new ones.
func TestDurableEmptiedJournal(t *testing.T) {
	for _, tc := range []struct {
		name          string
		snapshotBytes int64
	}{{"generation 1", defaultSnapshotBytes}, {"a later generation", 2 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestDurable(t, dir, nil, tc.snapshotBytes)
			for i := range 60 {
				if _, err := s.CreateUser(fmt.Sprint("User ", i), fmt.Sprintf("u%d@example.com", i)); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			path := lastJournal(t, dir)
			if later := tc.snapshotBytes != defaultSnapshotBytes; later == strings.HasSuffix(path, journalName(1)) {
				t.Fatalf("the newest journal is %s", filepath.Base(path))
			}
			users := snapshotUsers(t, dir)
			if users == len(s.Users()) {
				t.Fatal("the newest journal holds no change")
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, path+" is cut short")
			repairs(t, dir, path, users)
		})
	}
}

// TestDurableJournalCutInItsHeader: a journal cut inside its header lost every record
// after it; a journal is created with its header, so this is no crash's doing.
func TestDurableJournalCutInItsHeader(t *testing.T) {
	for _, size := range []int64{5, 20} {
		t.Run(fmt.Sprint(size, " bytes"), func(t *testing.T) {
			dir := t.TempDir()
			s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
			mutateAll(t, s)
			s.Close()
			path := lastJournal(t, dir)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, path+" is cut short")
			repairs(t, dir, path, len(DemoDataset().Users))
		})
	}
}

// TestDurableJournalCutInTheMiddle: a journal with many records, cut anywhere but at
// its end, lost acknowledged records: refused whether the cut falls inside a record or
// between two (for a cut at a step of the file's growth, see the test below).
func TestDurableJournalCutInTheMiddle(t *testing.T) {
	const batch = 10
	made := t.TempDir()
	s := openTestDurable(t, made, nil, defaultSnapshotBytes)
	var users []NewUser
	for i := range 150 {
		users = users[:0]
		for k := range batch {
			users = append(users, NewUser{fmt.Sprintf("User %d.%d", i, k), fmt.Sprintf("u%d.%d@example.com", i, k)})
		}
		if _, err := s.CreateUsers(users); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	path := lastJournal(t, made)
	data, _ := os.ReadFile(path)
	starts := recordStarts(t, data)
	demo := len(DemoDataset().Users)
	// whole is how many users the records wholly before byte at hold.
	whole := func(at int) int {
		n := demo
		for k := 1; k+1 < len(starts); k++ { // starts[0] is the header's
			if starts[k+1] <= at {
				n += batch
			}
		}
		return n
	}
	mid := starts[len(starts)/2]
	for name, at := range map[string]int{"inside a record": mid + 30, "between two records": mid} {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, made)
			p := filepath.Join(dir, filepath.Base(path))
			if err := os.Truncate(p, int64(at)); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, p+" is cut short")
			repairs(t, dir, p, whole(at))
		})
	}
}

// TestDurableJournalCutAtAStep: a journal longer than one step of its growth, cut at
// that step through a record. Its size is a whole number of steps, but the record
// runs past the end of the file, which a crash cannot leave: the file is grown before
// a record is written into the new space.
func TestDurableJournalCutAtAStep(t *testing.T) {
	dir := t.TempDir()
	s := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	var users []NewUser
	for i := 0; ; i++ {
		users = users[:0]
		for k := range 300 {
			users = append(users, NewUser{fmt.Sprintf("User %d.%d", i, k), fmt.Sprintf("u%d.%d@example.com", i, k)})
		}
		if _, err := s.CreateUsers(users); err != nil {
			t.Fatal(err)
		}
		if s.journal.size > journalStep+journalStep/4 {
			break
		}
	}
	s.Close()
	path := lastJournal(t, dir)
	data, _ := os.ReadFile(path)
	starts := recordStarts(t, data)
	if starts[len(starts)-1] <= journalStep {
		t.Fatalf("the journal's records end at %d, want past one step", starts[len(starts)-1])
	}
	if err := os.Truncate(path, journalStep); err != nil {
		t.Fatal(err)
	}
	refuses(t, dir, path+" is cut short")
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

// TestDurableRotationLogsAFailedClose: at a rotation the previous journal is closed
// after its last fsync, so a failure to close it loses nothing; it is logged all the
// same, with the file, rather than dropped.
func TestDurableRotationLogsAFailedClose(t *testing.T) {
	dir := t.TempDir()
	f := &faults{closeErr: syscall.EIO}
	logs := &syncBuffer{}
	s, err := OpenDurableStore(dir, func() (*Dataset, error) { return DemoDataset(), nil },
		slog.New(slog.NewTextHandler(logs, nil)), DurableOptions{SnapshotBytes: 1 << 10, wrapFile: f.wrap})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := s.CreateUser(fmt.Sprint("User ", i), fmt.Sprintf("u%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close() // its own close fails too, and says so
	if gens, _ := journalGens(dir); len(gens) == 0 || gens[len(gens)-1] < 2 {
		t.Fatalf("journals %v: no rotation", gens)
	}
	want := `msg="closing the previous journal" file=` + filepath.Join(dir, journalName(1))
	if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), syscall.EIO.Error()) {
		t.Errorf("want %q with the error in the log:\n%s", want, logs)
	}
	again := openTestDurable(t, dir, nil, defaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, again, s)
}
