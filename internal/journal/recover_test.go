package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// TestJournalTornTail: a crash during a group commit leaves the start of its first
// record followed by the zeros of the file's unwritten space. That is cut away with one
// warning, which says what is known of those bytes and claims nothing more.
func TestJournalTornTail(t *testing.T) {
	record := appendRecord(nil, payloadOf("torn, a record a crash interrupted"))
	tails := map[string][]byte{
		"part of its header":                 record[:7],
		"its header and part of its payload": record[:len(record)-9],
		"all but its last byte":              record[:len(record)-1],
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
			addAll(t, j, h)
			j.Close()
			path := lastJournal(t, dir)
			end, good := recordsEnd(t, path)
			overwrite(t, path, end, tail)
			logs := &syncBuffer{}
			again, h2 := openTest(t, dir, logs, DefaultSnapshotBytes)
			mustEqualState(t, h2, h)
			want := fmt.Sprintf("offset=%d bytes=%d", end, len(tail))
			if !strings.Contains(logs.String(), "incomplete record followed by zeros") || !strings.Contains(logs.String(), want) || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("want one log line about the incomplete record, with %q, got:\n%s", want, logs)
			}
			if strings.Contains(logs.String(), "acknowledged") {
				t.Errorf("the warning says what it cannot know:\n%s", logs)
			}
			if err := h2.add(again, "next"); err != nil {
				t.Fatal(err)
			}
			again.Close()
			if after, data := recordsEnd(t, path); after <= end || !bytes.Equal(data[:end], good[:end]) || len(data)%journalStep != 0 {
				t.Error("the journal was not cut back to its intact records before appending")
			}
			third, h3 := openTest(t, dir, nil, DefaultSnapshotBytes)
			defer third.Close()
			mustEqualState(t, h3, h2)
		})
	}
}

func TestJournalRefusesCorruption(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	addAll(t, j, h)
	j.Close()
	path := lastJournal(t, dir)
	data, _ := os.ReadFile(path)
	data[recordHeaderSize+5] ^= 0x01 // inside the first record, with intact records after it
	os.WriteFile(path, data, 0o644)
	_, _, err := open(dir, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "is corrupt at byte 0 (a record fails its checksum; intact records follow") {
		t.Errorf("err = %v, want a refusal naming the damage", err)
	}

	snap := filepath.Join(t.TempDir(), "x")
	os.MkdirAll(snap, 0o755)
	j, _ = openTest(t, snap, nil, DefaultSnapshotBytes)
	j.Close()
	data, _ = os.ReadFile(filepath.Join(snap, "snapshot"))
	data[len(data)/2] ^= 0x40
	os.WriteFile(filepath.Join(snap, "snapshot"), data, 0o644)
	if _, _, err := open(snap, nil, Options{}); err == nil || !strings.Contains(err.Error(), "snapshot is corrupt") {
		t.Errorf("corrupt snapshot: err = %v", err)
	}
}

// TestJournalRefusesWhatTheHostRefuses: an intact record the host cannot replay is
// damage like a failed checksum, named with its offset.
func TestJournalRefusesWhatTheHostRefuses(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	addAll(t, j, h)
	j.Close()
	path := lastJournal(t, dir)
	end, _ := recordsEnd(t, path)
	overwrite(t, path, end, appendRecord(nil, []byte(`{"op":"drop","v":"x"}`)))
	refuses(t, dir, fmt.Sprintf("%s is corrupt at byte %d (a record holds no valid change)", path, end))
}

// TestJournalRefusesDamagedTail: Damage at the end of the last journal that is not a
// record cut short is corruption of an acknowledged write, not a torn tail: Open
// refuses, naming the offset.
func TestJournalRefusesDamagedTail(t *testing.T) {
	record := appendRecord(nil, payloadOf("acked, a record whose writer was answered"))
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
			j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
			addAll(t, j, h)
			j.Close()
			path := lastJournal(t, dir)
			end, _ := recordsEnd(t, path)
			overwrite(t, path, end, tail)
			refuses(t, dir, fmt.Sprintf("%s is corrupt at byte %d", path, end))
		})
	}
}

// TestJournalBitFlipEverywhere: A bit flipped at any position of a small journal is
// refused at Open with the offset of the record it damaged; with Repair the journal is
// cut there, the cut bytes are saved beside it, and the host holds exactly the
// records before the damage.
func TestJournalBitFlipEverywhere(t *testing.T) {
	testkit.SkipIfShort(t, "opens a journal once for every bit position of it")
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	for _, v := range []string{"flip", "delete 3", "order"} {
		if err := h.add(j, v); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	name := filepath.Base(lastJournal(t, dir))
	data, _ := os.ReadFile(filepath.Join(dir, name))
	starts := recordStarts(t, data)
	end := starts[len(starts)-1]
	// want[k] is the state holding the records before record k (the header is
	// record 0).
	want := make([][]string, len(starts)-1)
	for k := range want {
		d := testkit.CopyDir(t, dir)
		from := max(starts[k], starts[1])
		overwrite(t, filepath.Join(d, name), from, make([]byte, end-from))
		j, h := openTest(t, d, nil, DefaultSnapshotBytes)
		want[k] = h.records()
		j.Close()
	}
	k := 0
	for pos := range data[:end] {
		for pos >= starts[k+1] {
			k++
		}
		d := testkit.CopyDir(t, dir)
		damaged := append([]byte(nil), data...)
		damaged[pos] ^= 1 << (pos % 8)
		path := filepath.Join(d, name)
		overwrite(t, path, pos, damaged[pos:pos+1])
		_, _, err := open(d, nil, Options{})
		wantErr := fmt.Sprintf("is corrupt at byte %d", starts[k])
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "-repair") {
			t.Fatalf("bit %d of byte %d flipped: err = %v, want %q", pos%8, pos, err, wantErr)
		}
		logs := &syncBuffer{}
		repaired, h, err := open(d, logs, Options{Repair: true})
		if err != nil {
			t.Fatalf("byte %d: -repair: %v", pos, err)
		}
		mustHold(t, h, want[k])
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

// TestJournalFollowsSnapshot: Open refuses a directory whose journals do not follow
// from its snapshot: the snapshot deleted, an older snapshot restored, a journal
// missing or taken from another store.
func TestJournalFollowsSnapshot(t *testing.T) {
	made := t.TempDir()
	j, h := openTest(t, made, nil, DefaultSnapshotBytes)
	addAll(t, j, h)
	j.Close()
	j1 := journalName(1)
	storeID := func(dir string) string {
		st, _, _ := snapshotOf(t, dir)
		return st.Store
	}

	t.Run("snapshot deleted", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		os.Remove(filepath.Join(dir, "snapshot"))
		refuses(t, dir, filepath.Join(dir, "snapshot")+" is missing, but "+j1+" follows a snapshot")
	})
	t.Run("first journal deleted", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		os.Remove(filepath.Join(dir, j1))
		f, _, err := createJournal(dir, 2, storeID(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
	t.Run("the only journal deleted", func(t *testing.T) {
		// Its acknowledged records are gone: starting would reuse their ids.
		dir := testkit.CopyDir(t, made)
		os.Remove(filepath.Join(dir, j1))
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
	t.Run("journal in between deleted", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		f, _, err := createJournal(dir, 3, storeID(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		refuses(t, dir, filepath.Join(dir, journalName(2))+" is missing: "+journalName(3)+" follows it")
	})
	t.Run("journal renamed", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		rewriteSnapshot(t, dir, 2, storeID(dir))
		os.Rename(filepath.Join(dir, j1), filepath.Join(dir, journalName(2)))
		refuses(t, dir, journalName(2)+" does not follow from the snapshot (its header says journal 1")
	})
	t.Run("journal of another store", func(t *testing.T) {
		other := t.TempDir()
		j, _ := openTest(t, other, nil, DefaultSnapshotBytes)
		j.Close()
		dir := testkit.CopyDir(t, made)
		data, _ := os.ReadFile(filepath.Join(other, j1))
		os.WriteFile(filepath.Join(dir, j1), data, 0o644)
		refuses(t, dir, j1+" does not follow from the snapshot")
	})
	t.Run("journal header removed", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		data, _ := os.ReadFile(filepath.Join(dir, j1))
		_, next, _ := readRecord(data, 0)
		os.WriteFile(filepath.Join(dir, j1), data[next:], 0o644)
		refuses(t, dir, j1+" does not follow from the snapshot (it has no header")
	})
	t.Run("older snapshot restored", func(t *testing.T) {
		dir := t.TempDir()
		j, h := openTest(t, dir, nil, 1<<10)
		old, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
		for i := range 100 {
			if err := h.add(j, fmt.Sprint("record ", i)); err != nil {
				t.Fatal(err)
			}
		}
		j.Close()
		os.WriteFile(filepath.Join(dir, "snapshot"), old, 0o644)
		refuses(t, dir, filepath.Join(dir, j1)+" is missing")
	})
}

// TestJournalRefusesTruncatedSnapshot: A snapshot cut short anywhere, even exactly
// after its header record (which would otherwise read as the first, one-record format
// of an empty store), is refused.
func TestJournalRefusesTruncatedSnapshot(t *testing.T) {
	made := t.TempDir()
	j, _ := openTest(t, made, nil, DefaultSnapshotBytes)
	j.Close()
	data, _ := os.ReadFile(filepath.Join(made, "snapshot"))
	_, afterHeader, _ := readRecord(data, 0)
	for _, n := range []int{0, 5, recordHeaderSize, afterHeader - 1, afterHeader, afterHeader + 7, len(data) / 2, len(data) - 1} {
		dir := testkit.CopyDir(t, made)
		os.WriteFile(filepath.Join(dir, "snapshot"), data[:n], 0o644)
		refuses(t, dir, filepath.Join(dir, "snapshot")+" is truncated")
	}
}

// TestJournalRefusesPreviousFormat: a directory as the first formats wrote it (a
// snapshot without the store's id, or one record holding header and records
// together, or journals grown byte by byte) is refused with a message saying so,
// rather than read: reading those formats was dropped.
func TestJournalRefusesPreviousFormat(t *testing.T) {
	made := t.TempDir()
	j, h := openTest(t, made, nil, DefaultSnapshotBytes)
	addAll(t, j, h)
	j.Close()
	st, meta, body := snapshotOf(t, made)
	t.Run("no store id", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		rewriteSnapshot(t, dir, st.Gen, "")
		refuses(t, dir, filepath.Join(dir, "snapshot")+" names no store: it was written in a format of an earlier version")
	})
	t.Run("one record", func(t *testing.T) {
		dir := testkit.CopyDir(t, made)
		whole := append(append(bytes.TrimSuffix(meta, []byte("}")), `,"records":`...), body...)
		payload, err := snapshotHeaderOf(st.Gen, st.Store, append(whole, '}'))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "snapshot"), appendRecord(nil, payload), 0o644)
		refuses(t, dir, "(or it is in the one-record format of an earlier version, which this one does not read)")
	})
	t.Run("journal grown byte by byte", func(t *testing.T) {
		// The journals of the version before pre-allocation: a header naming no
		// step, the records, and nothing after them.
		dir := testkit.CopyDir(t, made)
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

// TestJournalRepairMovesLaterJournals: Repair of damage in a journal that later
// journals follow cuts it there and moves the later journals aside, since their
// records follow from what was cut.
func TestJournalRepairMovesLaterJournals(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	addAll(t, j, h)
	j.Close()
	st, _, _ := snapshotOf(t, dir)
	f, _, err := createJournal(dir, 2, st.Store, appendRecord(nil, payloadOf("later")))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := filepath.Join(dir, journalName(1))
	journal, _ := os.ReadFile(path)
	starts := recordStarts(t, journal)
	journal[starts[2]+recordHeaderSize+3] ^= 0x20 // the second record
	os.WriteFile(path, journal, 0o644)

	refuses(t, dir, fmt.Sprintf("%s is corrupt at byte %d", path, starts[2]))
	logs := &syncBuffer{}
	repaired, h2, err := open(dir, logs, Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h2.records(), "later") {
		t.Error("the later journal was replayed after the cut")
	}
	mustHold(t, h2, append(seedRecords(), h.appended[0])) // the first record, before the damage
	if err := h2.add(repaired, "after repair"); err != nil {
		t.Fatal(err)
	}
	repaired.Close()
	if moved, _ := filepath.Glob(filepath.Join(dir, journalName(2)+".cut-*")); len(moved) != 1 {
		t.Errorf("later journal moved to %v, want one side file", moved)
	}
	if gens, _ := journalGens(dir); !reflect.DeepEqual(gens, []uint64{1}) {
		t.Errorf("journals after -repair: %v, want [1]", gens)
	}
	again, h3 := openTest(t, dir, nil, DefaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, h3, h2)
}

// TestJournalInitialisationCutShort: the first start writes its journal under a
// temporary name, then the snapshot, then renames the journal into place. Stopped
// before the snapshot, it leaves no store: the next start initialises the directory
// afresh. Stopped after it, the next start puts the journal in place and goes on from
// the snapshot.
func TestJournalInitialisationCutShort(t *testing.T) {
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
			if has, err := Has(dir); has || err != nil {
				t.Fatalf("Has = %v, %v; want false", has, err)
			}
			j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
			mustHold(t, h, seedRecords())
			err = h.add(j, "ann")
			j.Close()
			if err != nil {
				t.Fatalf("first record after initialising: %v", err)
			}
			j, h = openTest(t, dir, nil, DefaultSnapshotBytes)
			defer j.Close()
			mustHold(t, h, append(seedRecords(), "ann"))
		})
	}
	t.Run("after the snapshot", func(t *testing.T) {
		dir := t.TempDir()
		j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
		j.Close()
		os.Rename(filepath.Join(dir, journalName(1)), journalTemp(dir, 1))
		if has, err := Has(dir); !has || err != nil {
			t.Fatalf("Has = %v, %v; want true", has, err)
		}
		logs := &syncBuffer{}
		again, h2 := openTest(t, dir, logs, DefaultSnapshotBytes)
		mustEqualState(t, h2, h)
		if !strings.Contains(logs.String(), "journal was in place") {
			t.Errorf("putting the journal in place was not logged:\n%s", logs)
		}
		if err := h2.add(again, "ann"); err != nil {
			t.Fatalf("first record after the start: %v", err)
		}
		again.Close()
		third, h3 := openTest(t, dir, nil, DefaultSnapshotBytes)
		defer third.Close()
		mustEqualState(t, h3, h2)
	})
}

// Damage done to a stopped store's directory that a crash cannot do: Open refuses it,
// naming the file, rather than reading it as a torn write; Repair starts with what is
// left where that is something.

// snapshotRecords is how many records the snapshot in dir holds.
func snapshotRecords(t *testing.T, dir string) int {
	t.Helper()
	_, _, body := snapshotOf(t, dir)
	var recs []string
	if err := json.Unmarshal(body, &recs); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestJournalEmptied: the newest journal emptied while the service was stopped
// (truncate -s 0) held acknowledged records. Read as a torn write, the store would
// come back as its snapshot and give the lost records' ids to new ones.
func TestJournalEmptied(t *testing.T) {
	for _, tc := range []struct {
		name          string
		snapshotBytes int64
	}{{"generation 1", DefaultSnapshotBytes}, {"a later generation", 2 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j, h := openTest(t, dir, nil, tc.snapshotBytes)
			for i := range 60 {
				if err := h.add(j, fmt.Sprintf("record %d, with some more bytes to fill the journal", i)); err != nil {
					t.Fatal(err)
				}
			}
			j.Close()
			path := lastJournal(t, dir)
			if later := tc.snapshotBytes != DefaultSnapshotBytes; later == strings.HasSuffix(path, journalName(1)) {
				t.Fatalf("the newest journal is %s", filepath.Base(path))
			}
			n := snapshotRecords(t, dir)
			if n == len(h.records()) {
				t.Fatal("the newest journal holds no record")
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, path+" is cut short")
			repairs(t, dir, path, n)
		})
	}
}

// TestJournalCutInItsHeader: a journal cut inside its header lost every record after
// it; a journal is created with its header, so this is no crash's doing.
func TestJournalCutInItsHeader(t *testing.T) {
	for _, size := range []int64{5, 20} {
		t.Run(fmt.Sprint(size, " bytes"), func(t *testing.T) {
			dir := t.TempDir()
			j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
			addAll(t, j, h)
			j.Close()
			path := lastJournal(t, dir)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, path+" is cut short")
			repairs(t, dir, path, len(seedRecords()))
		})
	}
}

// TestJournalCutInTheMiddle: a journal with many records, cut anywhere but at its
// end, lost acknowledged records: refused whether the cut falls inside a record or
// between two (for a cut at a step of the file's growth, see the test below).
func TestJournalCutInTheMiddle(t *testing.T) {
	made := t.TempDir()
	j, h := openTest(t, made, nil, DefaultSnapshotBytes)
	for i := range 150 {
		if err := h.add(j, fmt.Sprintf("record %d: %s", i, strings.Repeat("ten users ", 50))); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	path := lastJournal(t, made)
	data, _ := os.ReadFile(path)
	starts := recordStarts(t, data)
	// whole is how many records the host holds from the records wholly before byte at.
	whole := func(at int) int {
		n := len(seedRecords())
		for k := 1; k+1 < len(starts); k++ { // starts[0] is the header's
			if starts[k+1] <= at {
				n++
			}
		}
		return n
	}
	mid := starts[len(starts)/2]
	for name, at := range map[string]int{"inside a record": mid + 30, "between two records": mid} {
		t.Run(name, func(t *testing.T) {
			dir := testkit.CopyDir(t, made)
			p := filepath.Join(dir, filepath.Base(path))
			if err := os.Truncate(p, int64(at)); err != nil {
				t.Fatal(err)
			}
			refuses(t, dir, p+" is cut short")
			repairs(t, dir, p, whole(at))
		})
	}
}

// TestJournalCutAtAStep: a journal longer than one step of its growth, cut at that
// step through a record. Its size is a whole number of steps, but the record runs past
// the end of the file, which a crash cannot leave: the file is grown before a record
// is written into the new space.
func TestJournalCutAtAStep(t *testing.T) {
	dir := t.TempDir()
	j, h := openTest(t, dir, nil, DefaultSnapshotBytes)
	for i := 0; ; i++ {
		if err := h.add(j, fmt.Sprintf("record %d: %s", i, strings.Repeat("three hundred users ", 1000))); err != nil {
			t.Fatal(err)
		}
		if j.size > journalStep+journalStep/4 {
			break
		}
	}
	j.Close()
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
