package main

import (
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
// A journal comes into being whole: written as journal-<gen>.log.tmp, its header
// fsynced before the snapshot that names it is written, and renamed into place (after
// that snapshot for the first journal, see openLocked; before it at a rotation). Its
// file grows in whole steps (journalStep), each made durable before a record is
// written into it, and what follows the last record is zeros. So a crash can leave
// only the last record incomplete, followed by zeros; a journal whose header is
// missing or short, whose size is not whole steps, or whose last record runs past the
// end of the file was damaged after it was written, and start-up refuses it.
//
// A write is applied in memory under the store lock and queued in the same order; one
// flusher writes everything queued with a single fsync (group commit) and only then
// releases the writers, so a client is answered only for what is on disk. When the
// disk fails, every change not yet on disk is rolled back before anyone is answered
// (see journal.fail), and the store refuses writes until a restart.

// defaultSnapshotBytes is the journal size past which a snapshot is taken.
const defaultSnapshotBytes = 64 << 20

// journalStep is what a journal file grows by. A file grown this way shows a cut (its
// size is no longer whole steps) that an appended file would hide, at the price of one
// fsync more per step; the space is not written, so it costs no disk until used.
const journalStep = 1 << 20

// roundUp returns n rounded up to whole steps.
func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

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
	WriteAt(p []byte, off int64) (int, error)
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
	size   int64 // where the durable records end
	alloc  int64 // the file's size, whole steps; past size it holds zeros
	step   int64 // what the file grows by, as its header says
	dirty  int64 // bytes past size a write in progress may have changed
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
	if end := j.size + int64(len(buf)); end > j.alloc {
		// The file grows, durably, before anything is written past its old end: a
		// crash then never leaves a record running past the end of the file, and
		// start-up can call one that does a cut.
		alloc := roundUp(end, j.step)
		if err := j.file.Truncate(alloc); err != nil {
			return err
		}
		if err := j.file.Sync(); err != nil {
			return err
		}
		j.alloc = alloc
	}
	j.dirty = int64(len(buf))
	if _, err := j.file.WriteAt(buf, j.size); err != nil {
		return err
	}
	j.syncs.Add(1)
	if err := j.file.Sync(); err != nil {
		return err
	}
	j.size += int64(len(buf))
	j.dirty = 0
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
// sees a write after its writer was told it failed; what the batch wrote in the
// journal is zeroed again; then the writers are answered, with no detail: the cause
// is logged here, once.
func (j *journal) fail(rest []*pendingWrite, cause error) {
	if !j.failed {
		j.failed = true
		j.log.Error("journal write failed; the writes not stored are rolled back and further writes refused until a restart",
			"error", cause, "rolledBack", countChanges(rest))
		if j.dirty > 0 {
			// Zeroed rather than cut off: the file keeps its size, whole steps.
			if _, err := j.file.WriteAt(make([]byte, j.dirty), j.size); err != nil {
				// A restart then finds the failed batch's records whole (and
				// keeps them: their writers were told "internal server error",
				// which promises nothing) or torn (and cuts them away).
				j.log.Error("zeroing the failed write in the journal failed", "error", err)
			}
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

// rotate closes the current journal and starts journal gen. The snapshot of gen is
// written only once this has returned, so the new journal is in place, its header
// durable, before any snapshot names it.
func (j *journal) rotate(gen uint64) error {
	if err := j.file.Sync(); err != nil {
		return err
	}
	f, end, err := createJournal(j.dir, gen, j.storeID, nil)
	if err != nil {
		return err
	}
	if err := j.file.Close(); err != nil {
		// Logged, and no more: everything in that journal was fsynced just above.
		j.log.Error("closing the previous journal", "file", filepath.Join(j.dir, journalName(j.gen)), "error", err)
	}
	j.use(f, gen, end, roundUp(end, journalStep), journalStep)
	return nil
}

// use makes f, journal gen, the journal written to: its records end at end, its file
// is alloc bytes long and grows by step.
func (j *journal) use(f *os.File, gen uint64, end, alloc, step int64) {
	j.file, j.gen, j.size, j.alloc, j.step = j.wrap(f), gen, end, alloc, step
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

// journalHeader is the first record of a journal: which journal of which store it is,
// and the step its file grows by (none in the journals of earlier versions, which grew
// byte by byte and which this version refuses). A change record starts with {"op":
// instead, which is how a journal without its header is told apart.
type journalHeader struct {
	Journal uint64 `json:"journal"`
	Store   string `json:"store"`
	Step    int64  `json:"step"`
}

var journalHeaderStart = []byte(`{"journal":`)

// createJournal creates journal gen of store holding records (whole, encoded ones)
// after its header, durably, replacing any journal gen there was, and returns it open
// for writing, with where its records end.
func createJournal(dir string, gen uint64, store string, records []byte) (*os.File, int64, error) {
	f, end, err := writeJournal(dir, gen, store, records)
	if err != nil {
		return nil, 0, err
	}
	if err := publishJournal(dir, gen); err != nil {
		f.Close()
		os.Remove(journalTemp(dir, gen))
		return nil, 0, err
	}
	return f, end, nil
}

// writeJournal writes journal gen of store, as createJournal describes, under its
// temporary name: header and records, zeros to a whole number of steps, fsynced. A
// file it fails to write is removed.
func writeJournal(dir string, gen uint64, store string, records []byte) (*os.File, int64, error) {
	name := journalTemp(dir, gen)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, err
	}
	payload, err := json.Marshal(journalHeader{gen, store, journalStep})
	data := append(appendRecord(nil, payload), records...)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Truncate(roundUp(int64(len(data)), journalStep))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, 0, err
	}
	return f, int64(len(data)), nil
}

// publishJournal renames journal gen, written by writeJournal, into place, durably.
func publishJournal(dir string, gen uint64) error {
	if err := os.Rename(journalTemp(dir, gen), filepath.Join(dir, journalName(gen))); err != nil {
		return err
	}
	return syncDir(dir)
}

// journalTemp is the name journal gen is written under until it is complete.
func journalTemp(dir string, gen uint64) string {
	return filepath.Join(dir, journalName(gen)+".tmp")
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
	if err := syncDir(dir); err != nil {
		// Logged, and no more: after a crash a removed journal may be back, which
		// harms nothing, since start-up reads only the journals from the
		// snapshot's on, and the next snapshot removes it again.
		log.Error("making the removal of old journals durable", "dir", dir, "error", err)
	}
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

// HasStore reports whether dir already holds a durable store: a snapshot or a journal
// (a journal without its snapshot is a store damaged, which start-up refuses). An
// initialisation cut short leaves neither, only temporary files (see openLocked).
func HasStore(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "snapshot")); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	gens, err := journalGens(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return len(gens) > 0, err
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
		// The first journal is written (under its temporary name) before the
		// snapshot, and renamed into place after it. A crash before the snapshot
		// leaves neither snapshot nor journal: no store, started afresh. A crash
		// between leaves the snapshot and the written journal, which start-up
		// renames into place (see recover). Once both are in place, any journal
		// without its snapshot, even one holding nothing but its header, was
		// damaged, never an initialisation cut short.
		j.storeID = newStoreID()
		f, end, err := writeJournal(dir, 1, j.storeID, nil)
		if err != nil {
			return nil, err
		}
		st := s.captureLocked(1)
		st.Store = j.storeID
		if err := writeSnapshot(dir, st); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing the first snapshot: %w", err)
		}
		if err := publishJournal(dir, 1); err != nil {
			f.Close()
			return nil, err
		}
		j.use(f, 1, end, roundUp(end, journalStep), journalStep)
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
