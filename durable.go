package main

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The durable store (-data DIR): every acknowledged write survives kill -9 and a power
// cut. DIR holds
//
//	LOCK                 held with flock while a process uses DIR
//	snapshot             the whole store as of the start of journal <gen>
//	journal-<gen>.log    the changes made since, appended and fsynced
//
// The snapshot names its generation and the store's id (random, made when DIR is
// initialised); each journal starts with a header naming its own generation and the
// same id. Start-up replays exactly the journals <gen>, <gen>+1, ... of that store,
// and refuses a DIR where one is missing or foreign, or where the snapshot is missing
// while a journal says one was written: replaying such a DIR would silently serve a
// state no client ever saw (ids reused, orders given to the wrong user).
//
// A write is applied in memory under the store lock and queued in the same order; one
// flusher writes everything queued with a single fsync (group commit) and only then
// releases the writers, so a client is answered only for what is on disk. When the
// disk fails, every change not yet on disk is rolled back before anyone is answered
// (see journal.fail), and the store refuses writes until a restart.

// defaultSnapshotBytes is the journal size past which a snapshot is taken.
const defaultSnapshotBytes = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Records are framed as [length u32][crc32c(payload) u32][crc32c(first 8 bytes) u32]
// [payload], little endian. The header's own checksum lets recovery trust a length,
// and so tell a record cut short by a crash (see tornTail) from a damaged one.
const recordHeaderSize = 12

func appendRecord(b, payload []byte) []byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h[:8], castagnoli))
	return append(append(b, h[:]...), payload...)
}

// readRecord returns the record at data[off:], or ok false if there is no whole,
// intact record there.
func readRecord(data []byte, off int) (payload []byte, next int, ok bool) {
	if len(data)-off < recordHeaderSize {
		return nil, off, false
	}
	h := data[off : off+recordHeaderSize]
	if crc32.Checksum(h[:8], castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		return nil, off, false
	}
	n := int(binary.LittleEndian.Uint32(h[0:]))
	end := off + recordHeaderSize + n
	if n < 0 || end > len(data) || end < off {
		return nil, off, false
	}
	payload = data[off+recordHeaderSize : end]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, off, false
	}
	return payload, end, true
}

// DurableOptions tune OpenDurableStore.
type DurableOptions struct {
	// SnapshotBytes is the journal size past which a snapshot is taken; 0 means
	// defaultSnapshotBytes.
	SnapshotBytes int64

	// Repair cuts a damaged journal at its damage, saving the bytes cut (and any
	// later journal) beside it, instead of refusing to start.
	Repair bool

	// wrapFile, when set, wraps every journal file the store writes: tests inject
	// storage failures through it.
	wrapFile func(journalFile) journalFile
}

// journalFile is what the journal writes through: an *os.File, or in tests one that
// fails on cue.
type journalFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// journal is the append-only log of changes and its flusher.
type journal struct {
	dir           string
	log           *slog.Logger
	store         *Store
	snapshotBytes int64
	repair        bool
	wrapFile      func(journalFile) journalFile
	lock          *os.File

	mu           sync.Mutex
	queue        []*pendingWrite
	closing      bool
	snapshotting bool
	wake         chan struct{}
	stopped      chan struct{}
	snapshots    sync.WaitGroup

	// storeID is the store's id, in the snapshot and in every journal's header.
	storeID string

	// Owned by the flusher goroutine.
	file   journalFile
	gen    uint64
	size   int64 // how much of file is durable
	failed bool  // the disk failed: nothing more is written
	// writes and syncs count the changes written and the fsyncs that made them
	// durable: their ratio is group commit at work, logged on close.
	writes, syncs atomic.Int64 // atomic: /metrics reads them while the flusher counts
}

// pendingWrite is one change waiting for its fsync, or a journal rotation marker.
type pendingWrite struct {
	c    *change
	undo undo // rolls c back if it cannot be stored
	// done is released once the change is on disk or err says why not; a WaitGroup
	// rather than a channel, which would be an allocation more per write.
	done   sync.WaitGroup
	err    error
	rotate *rotation
}

// rotation starts journal gen; rotated is closed once the new file exists.
type rotation struct {
	gen     uint64
	rotated chan struct{}
	err     error
}

func (w *pendingWrite) wait() error {
	w.done.Wait()
	return w.err
}

// errJournalFailed is why the store refuses writes after the disk failed: what
// reached the journal of the failed batch is uncertain (a failed fsync may or may not
// have written it), and only a restart, which reads the journal, knows.
var errJournalFailed = errors.New("journal write failed; writes are refused until a restart")

// enqueue queues c, and what undoes it, behind every change applied before it. The
// caller holds the store's write lock.
func (j *journal) enqueue(c *change, u undo) *pendingWrite {
	w := &pendingWrite{c: c, undo: u}
	w.done.Add(1)
	j.mu.Lock()
	j.queue = append(j.queue, w)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return w
}

// flush is the flusher goroutine: it writes what is queued, one fsync per batch, then
// releases the batch's writers and publishes its events in commit order.
func (j *journal) flush() {
	defer close(j.stopped)
	var buf []byte
	for {
		j.mu.Lock()
		batch, closing := j.queue, j.closing
		j.queue = nil
		j.mu.Unlock()
		if len(batch) > 1 {
			// Writers are concurrent: let those already running reach the queue
			// and share this fsync, rather than wait for the next one. A lone
			// writer is not delayed.
			runtime.Gosched()
			j.mu.Lock()
			batch = append(batch, j.queue...)
			j.queue = nil
			j.mu.Unlock()
		}
		if len(batch) == 0 {
			if closing {
				return
			}
			<-j.wake
			continue
		}
		if j.failed {
			// Writes are refused after a failure, so nothing should be queued;
			// anything that is is rolled back and refused the same way.
			j.fail(batch, errJournalFailed)
			continue
		}
		buf = buf[:0]
		var err error
		start := 0
		for i, w := range batch {
			if w.rotate == nil {
				j.writes.Add(1)
				payload, mErr := json.Marshal(w.c)
				if mErr != nil {
					err = mErr
				}
				buf = appendRecord(buf, payload)
				continue
			}
			// Everything before the marker belongs to the old journal.
			if err = j.writeAndSync(buf, err); err != nil {
				break
			}
			j.release(batch[start:i])
			buf, start = buf[:0], i+1
			w.rotate.err = j.rotate(w.rotate.gen)
			close(w.rotate.rotated)
		}
		if err == nil {
			err = j.writeAndSync(buf, nil)
		}
		if err != nil {
			j.fail(batch[start:], err)
			continue
		}
		j.release(batch[start:])
		j.maybeSnapshot()
	}
}

// writeAndSync appends buf to the journal and fsyncs it; err is an encoding failure
// already met, which stands for the write.
func (j *journal) writeAndSync(buf []byte, err error) error {
	if err != nil || len(buf) == 0 {
		return err
	}
	if _, err := j.file.Write(buf); err != nil {
		return err
	}
	j.syncs.Add(1)
	if err := j.file.Sync(); err != nil {
		return err
	}
	j.size += int64(len(buf))
	return nil
}

// release answers the writers of a batch that is on disk, then tells subscribers of
// what it created, in commit order.
func (j *journal) release(batch []*pendingWrite) {
	for _, w := range batch {
		if w.rotate == nil {
			w.done.Done()
		}
	}
	for _, w := range batch {
		if w.c != nil {
			j.store.publish(w.c)
		}
	}
}

// fail handles a storage failure while rest, the start of which was being written,
// waited for the disk. The store refuses writes from then on; every change not on
// disk (rest, and whatever was queued behind it, all applied after the last change
// that is) is rolled back under the write lock, newest first, so that no reader
// sees a write after its writer was told it failed; the journal is cut back to its
// last durable size; then the writers are answered, with no detail: the cause is
// logged here, once.
func (j *journal) fail(rest []*pendingWrite, cause error) {
	if !j.failed {
		j.failed = true
		j.log.Error("journal write failed; the writes not stored are rolled back and further writes refused until a restart",
			"error", cause, "rolledBack", countChanges(rest))
		if err := j.file.Truncate(j.size); err != nil {
			// A restart then finds the failed batch's records whole (and keeps
			// them: their writers were told "internal server error", which
			// promises nothing) or torn (and cuts them away).
			j.log.Error("cutting the journal back to its last durable size failed", "error", err)
		}
	}
	s := j.store
	s.mu.Lock()
	s.broken = errJournalFailed
	j.mu.Lock()
	rest = append(rest, j.queue...) // nothing joins the queue now: writes are refused
	j.queue = nil
	j.mu.Unlock()
	for i := len(rest) - 1; i >= 0; i-- {
		if w := rest[i]; w.c != nil {
			s.rollback(w.c, &w.undo)
		}
	}
	s.mu.Unlock()
	for _, w := range rest {
		if w.rotate != nil {
			w.rotate.err = errJournalFailed
			close(w.rotate.rotated)
			continue
		}
		w.err = errNotStored()
		w.done.Done()
	}
}

// countChanges counts the writes among ws (the rest are rotation markers).
func countChanges(ws []*pendingWrite) int {
	n := 0
	for _, w := range ws {
		if w.c != nil {
			n++
		}
	}
	return n
}

// maybeSnapshot starts a snapshot when the journal has grown past the threshold. The
// state is captured and the rotation marker queued under the store's read lock, so the
// snapshot holds exactly the changes queued before the marker.
func (j *journal) maybeSnapshot() {
	j.mu.Lock()
	due := j.size >= j.snapshotBytes && !j.snapshotting && !j.closing && !j.failed
	if due {
		j.snapshotting = true
	}
	j.mu.Unlock()
	if !due {
		return
	}
	j.store.mu.RLock()
	gen := j.gen + 1
	state := j.store.captureLocked(gen)
	state.Store = j.storeID
	rot := &rotation{gen: gen, rotated: make(chan struct{})}
	j.mu.Lock()
	j.queue = append(j.queue, &pendingWrite{rotate: rot})
	j.mu.Unlock()
	j.store.mu.RUnlock()
	j.snapshots.Go(func() {
		defer func() {
			j.mu.Lock()
			j.snapshotting = false
			j.mu.Unlock()
		}()
		<-rot.rotated
		if rot.err != nil {
			j.log.Error("journal rotation failed", "error", rot.err)
			return
		}
		if err := writeSnapshot(j.dir, state); err != nil {
			j.log.Error("snapshot failed; the journal keeps everything", "error", err)
			return
		}
		removeJournalsBefore(j.dir, gen, j.log)
	})
}

// rotate closes the current journal and starts journal gen.
func (j *journal) rotate(gen uint64) error {
	if err := j.file.Sync(); err != nil {
		return err
	}
	f, size, err := createJournal(j.dir, gen, j.storeID)
	if err != nil {
		return err
	}
	j.file.Close()
	j.file, j.gen, j.size = j.wrap(f), gen, size
	return nil
}

// wrap returns f as the journal writes through it.
func (j *journal) wrap(f *os.File) journalFile {
	if j.wrapFile != nil {
		return j.wrapFile(f)
	}
	return f
}

// close flushes what is queued, waits for a running snapshot, and releases DIR.
func (j *journal) close() error {
	j.mu.Lock()
	j.closing = true
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.stopped
	j.log.Info("journal closed", "writes", j.writes.Load(), "fsyncs", j.syncs.Load())
	j.snapshots.Wait()
	if j.failed {
		j.file.Close()
		j.lock.Close()
		return errJournalFailed
	}
	err := j.file.Sync()
	if cerr := j.file.Close(); err == nil {
		err = cerr
	}
	j.lock.Close() // closing the descriptor drops the flock
	return err
}

func journalName(gen uint64) string { return fmt.Sprintf("journal-%016d.log", gen) }

// journalHeader is the first record of a journal: which journal of which store it is.
// A change record starts with {"op": instead, which is how a journal without its
// header (one of the first format, which this version refuses) is told apart.
type journalHeader struct {
	Journal uint64 `json:"journal"`
	Store   string `json:"store"`
}

var journalHeaderStart = []byte(`{"journal":`)

// createJournal creates journal gen of store, its header on disk, and returns it
// open for appending, with its size. A journal it fails to create is removed, so a
// later attempt (the next rotation) starts afresh rather than after a torn header.
func createJournal(dir string, gen uint64, store string) (*os.File, int64, error) {
	name := filepath.Join(dir, journalName(gen))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	size, err := writeJournalHeader(f, gen, store)
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, 0, err
	}
	return f, size, nil
}

// writeJournalHeader writes and fsyncs the header of journal gen, an empty file.
func writeJournalHeader(f *os.File, gen uint64, store string) (int64, error) {
	payload, err := json.Marshal(journalHeader{gen, store})
	if err != nil {
		return 0, err
	}
	rec := appendRecord(nil, payload)
	if _, err := f.Write(rec); err != nil {
		return 0, err
	}
	return int64(len(rec)), f.Sync()
}

// newStoreID makes the id of a new store.
func newStoreID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// syncDir makes a created, renamed or removed file name durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func removeJournalsBefore(dir string, gen uint64, log *slog.Logger) {
	gens, err := journalGens(dir)
	if err != nil {
		log.Error("listing journals", "error", err)
		return
	}
	for _, g := range gens {
		if g < gen {
			if err := os.Remove(filepath.Join(dir, journalName(g))); err != nil {
				log.Error("removing an old journal", "error", err)
			}
		}
	}
	syncDir(dir)
}

// journalGens lists the journal generations in DIR in ascending order.
func journalGens(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range entries {
		name := e.Name()
		if num, ok := strings.CutPrefix(name, "journal-"); ok {
			if num, ok = strings.CutSuffix(num, ".log"); ok {
				if g, err := strconv.ParseUint(num, 10, 64); err == nil {
					gens = append(gens, g)
				}
			}
		}
	}
	slices.Sort(gens)
	return gens, nil
}

// errDirInUse is returned when another process holds DIR.
var errDirInUse = errors.New("is in use by another quartet process")

// OpenDurableStore opens the store kept in dir. An empty (or new) dir is initialised
// from seed; a dir that already holds a store is recovered from its snapshot and
// journals, and seed is not called.
func OpenDurableStore(dir string, seed func() (*Dataset, error), log *slog.Logger, opts DurableOptions) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s %w", dir, errDirInUse)
		}
		return nil, err
	}
	s, err := openLocked(dir, seed, log, opts, lock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return s, nil
}

// HasStore reports whether dir already holds a durable store. A first journal that
// holds no change and no snapshot beside it are what an initialisation cut short
// leaves (openLocked creates the journal first), which is no store yet.
func HasStore(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "snapshot")); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	gens, err := journalGens(dir)
	if errors.Is(err, os.ErrNotExist) || len(gens) == 0 {
		return false, nil
	} else if err != nil || !slices.Equal(gens, []uint64{1}) {
		return true, err
	}
	data, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	if err != nil {
		return false, err
	}
	if _, next, ok := readRecord(data, 0); ok {
		data = data[next:] // the header; what follows it must be empty too
	}
	return len(bytes.TrimRight(data, "\x00")) > recordHeaderSize, nil
}

func openLocked(dir string, seed func() (*Dataset, error), log *slog.Logger, opts DurableOptions, lock *os.File) (*Store, error) {
	s := NewStore()
	j := &journal{dir: dir, log: log, store: s, snapshotBytes: cmp.Or(opts.SnapshotBytes, defaultSnapshotBytes),
		repair: opts.Repair, wrapFile: opts.wrapFile, lock: lock, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	existing, err := HasStore(dir)
	if err != nil {
		return nil, err
	}
	if !existing {
		ds, err := seed()
		if err != nil {
			return nil, err
		}
		if err := s.Load(ds); err != nil {
			return nil, err
		}
		// The journal first: once the snapshot exists, a missing first journal is
		// damage (its acknowledged changes lost), never an initialisation cut short.
		j.storeID = newStoreID()
		f, size, err := createJournal(dir, 1, j.storeID)
		if err != nil {
			return nil, err
		}
		st := s.captureLocked(1)
		st.Store = j.storeID
		if err := writeSnapshot(dir, st); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the first snapshot: %w", err)
		}
		j.file, j.gen, j.size = j.wrap(f), 1, size
	} else {
		s.beginLoad()
		err := j.recover()
		s.endLoad()
		if err != nil {
			return nil, err
		}
	}
	s.journal = j
	go j.flush()
	return s, nil
}
