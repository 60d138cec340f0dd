package journal

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testHost is a Host whose state is the values of the records applied, in order: what
// a store is to its journal, without the store. Its payloads are JSON, as the store's:
// {"op":"put","v":value}.
type testHost struct {
	seed     []string
	captured func() // when set, called once a snapshot's mark is queued
	encoding func() // when set, called as a snapshot is encoded, outside the host's lock

	mu       sync.RWMutex // the host's lock: Appends are made under it
	recs     []string
	broken   bool     // the journal failed: adds are refused
	appended []string // the values appended, in order
	undone   []string // the values undone, in order
	misorder []string // values undone while not the newest

	storedMu sync.Mutex
	stored   []string // the values Stored was called for, in order
}

type item struct {
	Op string `json:"op"`
	V  string `json:"v"`
}

func payloadOf(v string) []byte {
	b, _ := json.Marshal(item{"put", v})
	return b
}

func (h *testHost) Seed() error {
	h.recs = slices.Clone(h.seed)
	return nil
}

func (h *testHost) Restore(header, body []byte) error {
	var meta struct {
		N *int `json:"n"`
	}
	if err := json.Unmarshal(header, &meta); err != nil {
		return err
	}
	var recs []string
	if err := json.Unmarshal(body, &recs); err != nil {
		return err
	}
	if meta.N == nil || *meta.N != len(recs) {
		return fmt.Errorf("the header says %v records, the body holds %d", meta.N, len(recs))
	}
	h.recs = recs
	return nil
}

func (h *testHost) Replay(payload []byte) error {
	var it item
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&it); err != nil {
		return err
	}
	if it.Op != "put" {
		return errors.New("not a put")
	}
	h.recs = append(h.recs, it.V)
	return nil
}

func (h *testHost) Capture(mark func()) func() (meta, body []byte, err error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := slices.Clone(h.recs)
	mark()
	if h.captured != nil {
		h.captured()
	}
	encoding := h.encoding
	return func() (meta, body []byte, err error) {
		if encoding != nil {
			encoding()
		}
		body, err = json.Marshal(recs)
		return fmt.Appendf(nil, `{"n":%d}`, len(recs)), body, err
	}
}

func (h *testHost) Failed(rollback func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broken = true
	rollback()
}

type testRecord struct {
	h *testHost
	v string
}

func (r *testRecord) Payload() ([]byte, error) { return payloadOf(r.v), nil }

func (r *testRecord) Stored() {
	r.h.storedMu.Lock()
	defer r.h.storedMu.Unlock()
	r.h.stored = append(r.h.stored, r.v)
}

func (r *testRecord) Undo() {
	h := r.h
	h.undone = append(h.undone, r.v)
	if len(h.recs) == 0 || h.recs[len(h.recs)-1] != r.v {
		h.misorder = append(h.misorder, r.v)
		return
	}
	h.recs = h.recs[:len(h.recs)-1]
}

var errRefused = errors.New("refused: the journal failed")

// add appends v, as a store's write does: applied and appended under the host's lock,
// then waited for.
func (h *testHost) add(j *Journal, v string) error {
	h.mu.Lock()
	if h.broken {
		h.mu.Unlock()
		return errRefused
	}
	if err := j.Refuses(); err != nil {
		h.mu.Unlock()
		return err
	}
	h.recs = append(h.recs, v)
	h.appended = append(h.appended, v)
	p := j.Append(&testRecord{h, v})
	h.mu.Unlock()
	return p.Wait()
}

// records returns the host's state.
func (h *testHost) records() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clone(h.recs)
}

// seedRecords is what a new directory is initialised with.
func seedRecords() []string {
	var recs []string
	for i := range 8 {
		recs = append(recs, fmt.Sprintf("seed record %d, as a dataset would hold it", i+1))
	}
	return recs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// open opens dir with a test host seeded with seedRecords, logging to logs (nil:
// nowhere).
func open(dir string, logs *syncBuffer, opts Options) (*Journal, *testHost, error) {
	log := slog.New(slog.DiscardHandler)
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	h := &testHost{seed: seedRecords()}
	j, err := Open(dir, log, opts, h)
	return j, h, err
}

func openTest(t *testing.T, dir string, logs *syncBuffer, snapshotBytes int64) (*Journal, *testHost) {
	t.Helper()
	j, h, err := open(dir, logs, Options{SnapshotBytes: snapshotBytes})
	if err != nil {
		t.Fatal(err)
	}
	return j, h
}

// addAll appends a few records, as a store's writes of every kind do.
func addAll(t *testing.T, j *Journal, h *testHost) {
	t.Helper()
	for _, v := range []string{"batch one", "renamed", "deleted", "post", "comment", "order", "largest deleted"} {
		if err := h.add(j, v); err != nil {
			t.Fatal(err)
		}
	}
}

func mustEqualState(t *testing.T, got, want *testHost) {
	t.Helper()
	mustHold(t, got, want.records())
}

func mustHold(t *testing.T, got *testHost, want []string) {
	t.Helper()
	if g := got.records(); !reflect.DeepEqual(g, want) {
		t.Fatalf("recovered state differs\n got: %q\nwant: %q", g, want)
	}
}

// lastJournal returns the path of the newest journal in dir.
func lastJournal(t *testing.T, dir string) string {
	gens, err := journalGens(dir)
	if err != nil || len(gens) == 0 {
		t.Fatal("no journal", err)
	}
	return filepath.Join(dir, journalName(gens[len(gens)-1]))
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

// refuses opens dir and wants a one-line refusal containing want.
func refuses(t *testing.T, dir, want string) {
	t.Helper()
	_, _, err := open(dir, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line containing %q", err, want)
	}
}

// repairs opens dir with Repair and wants it to start holding n records, with the
// repair logged naming path; then a plain start must work too.
func repairs(t *testing.T, dir, path string, n int) {
	t.Helper()
	logs := &syncBuffer{}
	j, h, err := open(dir, logs, Options{Repair: true})
	if err != nil {
		t.Fatalf("-repair: %v", err)
	}
	if got := len(h.records()); got != n {
		t.Errorf("-repair started with %d records, want %d", got, n)
	}
	if !strings.Contains(logs.String(), "-repair") || !strings.Contains(logs.String(), path) {
		t.Errorf("the repair was not logged with the file:\n%s", logs)
	}
	if err := h.add(j, "after repair"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	again, h2 := openTest(t, dir, nil, DefaultSnapshotBytes)
	defer again.Close()
	mustEqualState(t, h2, h)
}

// snapshotOf reads the snapshot in dir: what its header says for the journal, the
// host's meta (the header's other fields) and the body.
func snapshotOf(t *testing.T, dir string) (h snapshotHeader, meta, body []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	h, header, body, err := readSnapshot(data)
	if err != nil || h.Store == "" {
		t.Fatalf("snapshot: %v, store %q", err, h.Store)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(header, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "gen")
	delete(fields, "store")
	meta, err = json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return h, meta, body
}

// rewriteSnapshot writes the snapshot in dir anew as snapshot gen of store, holding
// what it held.
func rewriteSnapshot(t *testing.T, dir string, gen uint64, store string) {
	t.Helper()
	_, meta, body := snapshotOf(t, dir)
	if err := writeSnapshot(dir, gen, store, func() ([]byte, []byte, error) { return meta, body, nil }); err != nil {
		t.Fatal(err)
	}
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

func (f *faults) wrap(file File) File { return &faultyFile{file, f} }

type faultyFile struct {
	File
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

func (ff *faultyFile) Close() error {
	err := ff.File.Close()
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
	return ff.File.Sync()
}
